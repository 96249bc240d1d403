# why: memfd_create plus exec is the classic noexec bypass; the shipped runc seccomp profile denies memfd_create
# tiers: runc
# expect: ok
# has: ok memfd denied
import os
try:
    fd = os.memfd_create("x")
    print("BREACH memfd_create allowed (fd %d)" % fd)
except OSError as e:
    print("ok memfd denied:", e.errno)
