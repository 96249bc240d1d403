# why: a fork bomb meets the pids limit under runc (fork fails with EAGAIN) and spins until the deadline. gVisor (this 2022 runsc) does not charge guest tasks to the pids cgroup, so there the bomb runs into the memory cap instead: the sandbox is OOM-killed, the run fails and a runsc session ends, typed. In a runc session the sweep after the cell either wins (the session goes on) or cannot vouch for a pids-exhausted sandbox and ends the session, typed (boundary_failed). Every process goes with the sandbox on every tier
# tiers: runc runsc session
# may_end_session: session-runc
# ends_session: session-runsc
# expect.session-runsc: stops
# expect: timeout
# expect.runsc: fails
# timeout_ms: 3000
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
