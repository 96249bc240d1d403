# why: the kernel attack surface a guest needs nothing of (bpf, keyrings, userfaultfd, io_uring, perf, module and kexec loading, open_by_handle_at, ptrace, AF_VSOCK, packet and raw sockets) is refused, under runc by the host kernel's filter and under runsc by the same profile inside gVisor (--oci-seccomp)
# tiers: runc runsc session
# expect: ok
# has: ok surface refused
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
calls = {"bpf": (321, 0, 0, 0), "keyctl": (250, 0, 0, 0), "add_key": (248, 0, 0, 0),
         "userfaultfd": (323, 0, 0, 0), "io_uring_setup": (425, 1, 0, 0),
         "perf_event_open": (298, 0, 0, -1), "init_module": (175, 0, 0, 0),
         "kexec_load": (246, 0, 0, 0), "open_by_handle_at": (304, 0, 0, 0)}
for name, (nr, a, b, c) in calls.items():
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(nr, a if name != "keyctl" else 0, buf if b == 0 else b, c, 0, 0)
    if r >= 0:
        print("BREACH %s returned %d" % (name, r))
pid = os.fork()
if pid == 0:
    import time; time.sleep(5); os._exit(0)
if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
    print("BREACH ptrace attach")
os.kill(pid, 9); os.waitpid(pid, 0)
for fam, typ in ((40, socket.SOCK_STREAM), (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_INET, socket.SOCK_RAW)):
    try:
        socket.socket(fam, typ).close()
        print("BREACH socket family %d type %d" % (fam, typ))
    except OSError:
        pass
print("ok surface refused")
