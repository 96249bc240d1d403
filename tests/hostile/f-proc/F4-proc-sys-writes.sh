# why: the classic breakouts through /proc and /sys writes (sysrq, core_pattern, release_agent, uevent_helper, binfmt_misc) fail
# tiers: runc runsc
# expect: ok
# has: ok no writes
for f in /proc/sysrq-trigger /proc/sys/kernel/core_pattern /sys/fs/cgroup/release_agent /sys/fs/cgroup/memory/release_agent /sys/kernel/uevent_helper /proc/sys/fs/binfmt_misc/register /proc/sys/vm/drop_caches; do
  if (echo x > "$f") 2>/dev/null; then echo "BREACH wrote $f"; fi
done
echo "ok no writes"
