# why: with the defaults (no SANDBOX_DOCKER_SECCOMP), no AF_VSOCK socket opens on any docker tier: on this VM guest host a vsock connect reaches the outer hypervisor, and docker's own profile would allow the family. The shipped profile refuses socket(AF_VSOCK) with EPERM under runc and, inside gVisor (runsc registered with --oci-seccomp), before the Sentry's own refusal. The wasm tier has no socket at all (H2)
# tiers: runc runsc session
# expect: ok
# has: ok no vsock
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    fd = libc.socket(40, typ, 0)
    err = ctypes.get_errno()
    if fd >= 0:
        print("BREACH AF_VSOCK socket type %d opened" % typ)
        for cid in (2, 1, 0xFFFFFFFF):
            addr = (ctypes.c_ubyte * 16)(*([40, 0, 0, 0] + list((1234).to_bytes(4, "little")) + list(cid.to_bytes(4, "little")) + [0] * 4))
            if libc.connect(fd, addr, 16) == 0:
                print("BREACH AF_VSOCK connect to cid %d" % cid)
    elif err != 1:
        print("BREACH AF_VSOCK refused by errno %d, not the profile's EPERM" % err)
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
    print("BREACH python AF_VSOCK socket")
except OSError:
    pass
print("ok no vsock")
