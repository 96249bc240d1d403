# why: a session's sweeper between calls is its warden, a held-open process as the guest's uid: guest code finds it by its command line and kills it, leaving a marked leftover behind. The host stops trusting the warden and sweeps with fresh execs, so the leftover is gone before the next call and the session goes on
# tiers: session
# expect: ok
# has: killed 1
import os, signal, subprocess
subprocess.Popen(["plimsoll-leftover", "300"], executable="/bin/sleep", start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
n = 0
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read()
        except OSError:
            continue
        if b"PR_SET_DUMPABLE" in cmd:
            os.kill(int(d), signal.SIGKILL)
            n += 1
print("killed", n)
