# why: no host socket is reachable from the filesystem (docker, containerd, the daemon's); a run without a grant has no broker socket either
# tiers: runc runsc
# expect: ok
# has: ok no sockets
# lacks: docker.sock
found=$(find / -xdev -type s 2>/dev/null; find /run /var/run /tmp /dev -type s 2>/dev/null)
[ -n "$found" ] && echo "BREACH sockets: $found"
[ -n "$HOST_API_SOCKET" ] && echo "BREACH HOST_API_SOCKET set without a grant"
[ -e /run/plimsoll ] && echo "BREACH /run/plimsoll exists without a grant"
echo "ok no sockets"
