# why: the root filesystem is read-only: no binary, library, config or home directory can be changed
# tiers: runc runsc
# expect: ok
# has: ok root read-only
for p in / /etc /usr/bin /usr/lib /root /home /var /opt /run; do
  if (echo x > "$p/.plimsoll-probe") 2>/dev/null; then echo "BREACH wrote $p"; fi
done
if (echo x >> /etc/passwd) 2>/dev/null; then echo "BREACH appended to /etc/passwd"; fi
echo "ok root read-only"
