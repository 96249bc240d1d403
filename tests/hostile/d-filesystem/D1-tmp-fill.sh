# why: /tmp and /work are size-capped tmpfs mounts: filling them ends in ENOSPC inside the run
# tiers: runc runsc
# expect: ok
# has: ok /tmp capped
# has: ok /work capped
# timeout_ms: 20000
for d in /tmp /work; do
  if dd if=/dev/zero of=$d/fill bs=1M count=2048 2>/dev/null; then echo "BREACH wrote 2 GiB to $d"; else echo "ok $d capped"; fi
  rm -f $d/fill
done
