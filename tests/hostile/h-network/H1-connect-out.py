# why: network none: no TCP, UDP or DNS leaves the sandbox, to the host's addresses (a sentinel listens on all), the docker bridge, the metadata endpoint or the internet; only lo exists
# tiers: runc runsc session
# expect: ok
# has: ok no network
import os, socket
targets = "{{SENTINEL}}".split() + ["8.8.8.8:53", "1.1.1.1:443", "169.254.169.254:80", "172.17.0.1:2375"]
for t in targets:
    host, port = t.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=1)
        s.close()
        print("BREACH tcp to", t)
    except OSError:
        pass
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"plimsoll", (host, int(port)))
        print("BREACH udp to", t)
    except OSError:
        pass
try:
    socket.getaddrinfo("example.com", 80)
    print("BREACH dns resolved")
except OSError:
    pass
ifaces = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else ["lo"]
if ifaces != ["lo"]:
    print("BREACH interfaces", ifaces)
print("ok no network")
