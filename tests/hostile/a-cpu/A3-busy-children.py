# why: four detached busy children that ignore SIGTERM outlive their parent; the deadline ends the run and every child goes with the sandbox
# tiers: runc runsc session
# expect: timeout
# timeout_ms: 2000
import os, signal, time
for _ in range(4):
    if os.fork() == 0:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            pass
time.sleep(3600)
