# why: a flood of empty files exhausts only the run's own tmpfs (inodes or size), and the run still answers
# tiers: runc runsc
# expect: ends
# timeout_ms: 30000
mkdir -p /tmp/f && cd /tmp/f
i=0
while [ $i -lt 20000 ]; do : > "f$i" 2>/dev/null || break; i=$((i+1)); done
echo "created $i"
