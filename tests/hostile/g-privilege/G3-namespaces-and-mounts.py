# why: unshare, setns, mount, chroot and setuid to root all fail under runc and runsc (no capability; the shipped seccomp profile refuses the namespace calls, inside gVisor too). Should a namespace still be had under runsc, it is the Sentry's own and grants nothing: the guest cannot remount the root writable, write a host-backed file, or reach the host's /proc
# tiers: runc runsc session
# expect: ok
# has: ok contained
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
MS_REMOUNT, MS_BIND = 32, 4096
for flags in (CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNS):
    if libc.unshare(flags) == 0:
        print("BREACH unshare(%#x)" % flags)
if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
    print("BREACH mount")
if libc.mount(None, b"/", None, MS_REMOUNT, None) == 0:
    print("BREACH remount /")
if libc.mount(b"/proc", b"/tmp", None, MS_BIND, None) == 0:
    print("BREACH bind mount")
if libc.chroot(b"/tmp") == 0:
    print("BREACH chroot")
for f in ("/etc/passwd", "/usr/bin/python3", "/proc/sysrq-trigger"):
    try:
        with open(f, "ab") as h:
            h.write(b"x")
        print("BREACH wrote", f)
    except OSError:
        pass
try:
    fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)
    if libc.setns(fd, 0) == 0:
        print("BREACH setns")
except OSError:
    pass
if libc.setuid(0) == 0:
    print("BREACH setuid(0)")
print("ok contained")
