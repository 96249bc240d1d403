# why: touching 1 GiB under a 256 MiB cgroup limit is an OOM kill of this run (swap is off). Under runsc the OOM killer takes the whole sandbox (the Sentry is one host process), so a runsc session ends, typed (main_process_ended), and the next call is refused
# tiers: runc runsc session
# ends_session: session-runsc
# expect.session-runsc: stops
# expect: fails
# timeout_ms: 30000
blocks = []
for _ in range(64):
    blocks.append(b"x" * (16 << 20))
print("BREACH allocated 1 GiB")
