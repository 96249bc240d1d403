# why: with the defaults, the guest's seccomp profile holds inside gVisor too (runsc registered with --oci-seccomp): no user namespace (unshare, clone with CLONE_NEWUSER), no io_uring, no ptrace, no AF_NETLINK or AF_INET socket reaches the Sentry. Without the flag gVisor ignores the profile and each of these works in the Sentry; the startup proof refuses that configuration. Each call must fail with the profile's errno (EPERM; ENOSYS for unshare, which gVisor reports as EPERM)
# tiers: runc runsc session
# expect: ok
# has: ok sentry surface refused
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    if r >= 0:
        print("BREACH %s returned %d" % (name, r))
    elif e not in (1, 38):
        print("BREACH %s failed with errno %d, not the profile's" % (name, e))
for flags in (0x10000000, 0x10020000, 0x20000, 0x40000000):  # NEWUSER, NEWUSER|NEWNS, NEWNS, NEWNET
    call("unshare(%#x)" % flags, 272, flags)
call("clone(CLONE_NEWUSER)", 56, 0x10000000 | 17, 0, 0, 0, 0)
call("io_uring_setup", 425, 1, 0)
call("ptrace(TRACEME)", 101, 0, 0, 0, 0)
call("socket(AF_NETLINK)", 41, 16, 3, 0)
call("socket(AF_INET)", 41, 2, 1, 0)
call("socket(AF_INET6)", 41, 10, 1, 0)
for l in open("/proc/self/status"):
    if l.startswith("Seccomp:") and l.split()[1] != "2":
        print("BREACH no seccomp filter:", l.strip())
print("ok sentry surface refused")
