# why: under runc the guest runs in seccomp filter mode (Seccomp: 2), the shipped profile
# tiers: runc
# expect: ok
# has: ok seccomp
st = open("/proc/self/status").read()
print("ok seccomp" if "\nSeccomp:\t2" in st else "BREACH seccomp not in filter mode")
