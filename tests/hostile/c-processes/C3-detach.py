# why: a daemonised child (double fork, new session, closed fds) outlives the cell or step; the sweep or the sandbox's removal ends it
# tiers: runc runsc session
# expect: ok
# has: detached
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3):
            os.close(fd)
        time.sleep(300)
    os._exit(0)
os.wait()
print("detached")
