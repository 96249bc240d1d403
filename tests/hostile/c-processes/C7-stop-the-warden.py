# why: guest code stops the session's warden (SIGSTOP, same uid) and leaves a marked leftover, so the sweep request after the call is never answered; the host stops trusting the warden after its share of the cleanup budget and sweeps with fresh execs (which kill the stopped warden too): the leftover is gone before the next call and the session goes on
# tiers: session
# expect: ok
# has: stopped 1
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
            os.kill(int(d), signal.SIGSTOP)
            n += 1
print("stopped", n)
