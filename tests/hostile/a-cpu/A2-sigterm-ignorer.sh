# why: a shell that ignores SIGTERM and SIGINT spins; the deadline still ends it (SIGKILL, container removed)
# tiers: runc runsc
# expect: timeout
# timeout_ms: 1500
trap '' TERM INT HUP
while :; do :; done
