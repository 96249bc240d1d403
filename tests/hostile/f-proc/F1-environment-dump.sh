# why: everything a guest can read about its environment (variables, every /proc/*/environ and cmdline, mounts, hostname) holds none of the daemon's secrets; the harness sweeps the output for the canary
# tiers: runc runsc
# expect: ok
# lacks: HOSTILE_CANARY
# lacks: HOSTILE_API_TOKEN
# lacks: DOCKER_HOST
# has: ok dumped
env
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo "== $f"; tr '\0' '\n' < "$f" 2>/dev/null; done
cat /proc/self/mountinfo /etc/hostname /proc/1/status 2>/dev/null
echo "ok dumped"
