# why: the guest runs in seccomp filter mode (Seccomp: 2) with the defaults, under runc and inside gVisor (which reports its own filter state), the shipped profile
# tiers: runc runsc session
# expect: ok
# has: ok seccomp
st = open("/proc/self/status").read()
print("ok seccomp" if "\nSeccomp:\t2" in st else "BREACH seccomp not in filter mode")
