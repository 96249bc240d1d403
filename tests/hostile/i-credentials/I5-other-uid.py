# why: during a granted run the harness connects to the run's broker socket from the host as another uid (65534) and as root that is not the runtime; neither gets an answer (the directory is the guest's, 0700, and the peer check refuses them), while the guest's own calls still work
# tiers: runc runsc
# grant: items
# probe: broker-uid
# expect: ok
# has: guest 200 200
import time, plimsoll_host
a = plimsoll_host.get("/v1/items/1").status
time.sleep(3)
b = plimsoll_host.get("/v1/items/2").status
print("guest", a, b)
