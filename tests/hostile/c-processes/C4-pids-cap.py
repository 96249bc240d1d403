# why: the pids limit bounds how many tasks a run can hold under runc; threads count too (gVisor, this 2022 build, charges guest tasks to no pids cgroup: its bound is the memory cap, see C1)
# tiers: runc session-runc
# expect: ok
# has: ok pids capped
import threading, time
ev = threading.Event()
n = 0
try:
    for _ in range(500):
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except RuntimeError:
    pass
ev.set()
print("ok pids capped at %d" % n if n < 500 else "BREACH started %d threads" % n)
