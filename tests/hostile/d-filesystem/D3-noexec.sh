# why: every writable mount is noexec and nosuid: a binary copied there does not run
# tiers: runc runsc
# expect: ok
# has: ok noexec
for d in /tmp /work /dev/shm; do
  cp /bin/true "$d/t" 2>/dev/null || continue
  chmod +x "$d/t"
  if "$d/t" 2>/dev/null; then echo "BREACH executed from $d"; fi
done
echo "ok noexec"
