# why: the guest holds no capability in any set, has no_new_privs, and is not root (posture read from inside; the host-side read is in the docker suite)
# tiers: runc runsc session
# expect: ok
# has: ok posture
import os
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
# gVisor's (2022) status has no CapAmb line; every set it shows must be empty.
present = [k for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb") if k in st]
if not {"CapPrm", "CapEff", "CapBnd"} <= set(present):
    print("BREACH capability sets not shown:", present)
for k in present:
    if int(st[k].strip(), 16) != 0:
        print("BREACH %s=%s" % (k, st[k].strip()))
import ctypes
if ctypes.CDLL(None).prctl(39, 0, 0, 0, 0) != 1:  # PR_GET_NO_NEW_PRIVS (gVisor's status has no such line)
    print("BREACH no_new_privs not set")
if os.getuid() == 0 or os.geteuid() == 0 or os.getgid() == 0:
    print("BREACH running as root")
print("ok posture", os.getuid())
