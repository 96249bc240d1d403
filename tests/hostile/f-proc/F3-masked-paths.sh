# why: kernel-information files (kcore, keys, timer_list, sched_debug, firmware, kallsyms addresses) read empty, zeroed or denied
# tiers: runc runsc
# expect: ok
# has: ok masked
for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/acpi /sys/firmware/efi/efivars /proc/scsi; do
  n=$(head -c 64 "$f" 2>/dev/null | wc -c)
  [ "$n" -gt 0 ] && echo "BREACH $f readable ($n bytes)"
done
if [ -r /proc/kallsyms ] && grep -qv '^0000000000000000' /proc/kallsyms 2>/dev/null; then echo "BREACH kallsyms shows addresses"; fi
echo "ok masked"
