# why: under runc, unshare, setns, mount, chroot and setuid to root all fail (no capability; seccomp refuses the namespace calls). Under runsc a user namespace is the Sentry's own and grants nothing on the host: even as root of a new user and mount namespace the guest cannot remount the root writable, write a host-backed file, or reach the host's /proc
# tiers: runc runsc session
# expect: ok
# has: ok contained
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
MS_REMOUNT, MS_BIND = 32, 4096
if "{{TIER}}" == "runc":
    for flags in (CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNS):
        if libc.unshare(flags) == 0:
            print("BREACH unshare(%#x)" % flags)
    if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
        print("BREACH mount")
    if libc.chroot(b"/tmp") == 0:
        print("BREACH chroot")
else:
    libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)  # the Sentry's namespaces: allowed
    libc.mount(None, b"/", None, MS_REMOUNT, None)
    libc.mount(b"/proc", b"/tmp", None, MS_BIND, None)
    for f in ("/etc/passwd", "/usr/bin/python3", "/proc/sysrq-trigger"):
        try:
            with open(f, "ab") as h:
                h.write(b"x")
            print("BREACH wrote", f, "as namespaced root")
        except OSError:
            pass
try:
    fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)
    if libc.setns(fd, 0) == 0 and "{{TIER}}" == "runc":
        print("BREACH setns")
except OSError:
    pass
if libc.setuid(0) == 0 and "{{TIER}}" == "runc":
    print("BREACH setuid(0)")
print("ok contained")
