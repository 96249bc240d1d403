# why: a new session starts clean, whatever an earlier session left (run twice, each time in a fresh session; pooled sandboxes included)
# tiers: session
# runs: 2
# expect: ok
# has: ok fresh
import os
for f in ("/tmp/k3", "/work/k3", "/dev/shm/k3"):
    if os.path.exists(f):
        print("BREACH", f, "survived from another session")
    try:
        open(f, "w").write("mark")
    except OSError:
        pass
print("ok fresh")
