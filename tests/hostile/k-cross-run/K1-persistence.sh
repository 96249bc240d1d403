# why: nothing a run writes survives into the next run: each run has fresh /tmp, /dev/shm, /work (run twice; the second finds nothing)
# tiers: runc runsc
# runs: 2
# expect: ok
# has: ok fresh
for f in /tmp/k1 /dev/shm/k1 /work/k1 /var/tmp/k1 /run/lock/k1; do
  [ -e "$f" ] && echo "BREACH $f survived from an earlier run"
  (echo mark > "$f") 2>/dev/null
done
echo "ok fresh"
