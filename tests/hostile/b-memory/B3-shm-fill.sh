# why: /dev/shm is a size-capped tmpfs: filling it stops at ENOSPC (or the run's memory cap), never at the host
# tiers: runc runsc
# expect: ends
# timeout_ms: 20000
dd if=/dev/zero of=/dev/shm/fill bs=1M count=4096 2>/tmp/dd.err
if grep -q 'No space left' /tmp/dd.err; then echo "ok shm capped"; else echo "BREACH wrote 4 GiB to /dev/shm: $(cat /tmp/dd.err)"; fi
