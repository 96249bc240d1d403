# why: a granted project holds only the broker's socket: its environment has no credential, the socket answers only listed routes, the echoed credential is redacted, and the budget (12 calls, refused ones included: three are spent before the loop) is enforced
# tiers: runc runsc
# grant: items
# expect: ok
# has: ok budget 200 200 200 200 200 200 200 200 200 429
# has: [redacted]
# lacks: HOSTILE
import os, plimsoll_host
print(sorted(os.environ))
a = plimsoll_host.get("/v1/items/1")
print(a.status, a.body)
print(plimsoll_host.get("/v1/items/%2e%2e").status, plimsoll_host.call("GET", "/v1/admin").status)
st = [plimsoll_host.get("/v1/items/%d" % i).status for i in range(10)]
print("ok budget", " ".join(map(str, st)))
