import base64, ctypes, json, os, select, signal, sys, time

try:
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    from _sha256 import sha256  # built in: no OpenSSL mapped into the warden

# The session's warden: a held-open exec as the guest uid that sweeps the
# sandbox between calls. It makes itself non-dumpable before reading anything,
# so (where the kernel enforces it) no guest process can trace it, read its
# memory or open its pipes; its first stdin line is a 32-byte key sent before
# any guest code has run, and every answer carries an HMAC-SHA256 under that
# key, so a guest that does reach its pipes (gVisor lets a same-uid process
# open /proc/<pid>/fd/N) can steal a request or stall it but cannot forge an
# answer. A guest that kills or stops it only loses the fast path: the host
# stops trusting it and sweeps (and runs calls) with fresh execs.
#
# It also runs a call's snippet or steps ("run"): a child in its own process
# group with fresh pipes, so guest code never holds the warden's own.
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
    sys.exit(3)
os.chdir("/")
out = sys.stdout.buffer
pending = b""


def read_line(timeout=None):
    """The next stdin line (raw fd reads: the run loop polls fd 0 too), b""
    at its end, None when timeout (seconds) passes first."""
    global pending
    while b"\n" not in pending:
        if timeout is not None and not select.select([0], [], [], timeout)[0]:
            return None
        chunk = os.read(0, 65536)
        if not chunk:
            return b""
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return line


key = bytes.fromhex(read_line().decode().strip()).ljust(64, b"\0")
inner_pad = bytes(b ^ 0x36 for b in key)
outer_pad = bytes(b ^ 0x5C for b in key)
uid = os.getuid()
me = os.getpid()
pinned = {}


def status(pid):
    """(state, real uid) of pid from its status (its /proc directory is
    root's when it made itself non-dumpable), or None once it is gone."""
    state = None
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"State:"):
                    state = line.split()[1]
                elif line.startswith(b"Uid:"):
                    return state, int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return None


def started(pid):
    """pid's start time (clock ticks after boot), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def answer(nonce, body):
    text = "%s %s" % (nonce, json.dumps(body, separators=(",", ":")))
    mac = sha256(outer_pad + sha256(inner_pad + text.encode()).digest()).hexdigest()
    out.write(("%s %s\n" % (text, mac)).encode())
    out.flush()


def sweep(keep, measure):
    """Kills every process of the guest uid but this one and the pinned
    pids in keep (still the processes pinned), until a whole pass finds none."""
    kept = {me}
    gone = []
    for p in keep:
        if p in pinned and started(p) == pinned[p]:
            kept.add(p)
        else:
            gone.append(p)
    for i in range(2000):
        left = 0
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) in kept:
                continue
            s = status(int(d))
            if s is None or s[1] != uid or s[0] == b"Z":
                continue
            try:
                os.kill(int(d), 9)
            except OSError:
                pass
            left += 1
        if left == 0:
            break
        time.sleep(0.0005 if i < 100 else 0.005)
    else:
        return {"left": left}
    v = os.statvfs(measure)
    return {"left": 0, "gone": gone, "kib": (v.f_blocks - v.f_bfree) * v.f_frsize // 1024}


children = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
signal.set_wakeup_fd(children[1])
signal.signal(signal.SIGCHLD, lambda *_: None)


def run(req):
    """Runs argv in cwd with stdin's bytes, each stream kept to cap bytes,
    until it exits (its output read for at most a second more: a background
    child may hold it open), or the deadline or a "cancel" line comes first
    (then its process group is killed). Whatever else it left is the
    sweep's, after the call."""
    cap, data = req["cap"], base64.b64decode(req.get("stdin") or "")
    fds = [os.pipe() for _ in range(3)]
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            for i in range(3):
                os.dup2(fds[i][0 if i == 0 else 1], i)
            os.closerange(3, 1 << 16)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.chdir(req["cwd"])
            os.execvp(req["argv"][0], req["argv"])
        except OSError as e:
            os.write(2, ("plimsoll: cannot run %s: %s\n" % (req["argv"][0], e.strerror)).encode())
        finally:
            os._exit(127)
    for i, (r, w) in enumerate(fds):
        os.close(r if i == 0 else w)
    feed = fds[0][1]
    kept = {fds[1][0]: bytearray(), fds[2][0]: bytearray()}
    cut = {fds[1][0]: False, fds[2][0]: False}
    open_fds = set(kept)
    os.set_blocking(feed, False)
    if not data:
        os.close(feed)
        feed = None
    deadline = time.monotonic() + req["timeout_ms"] / 1000
    status, how, exited_at = None, "exited", None
    while True:
        if exited_at is not None and (not open_fds or time.monotonic() >= exited_at + 1):
            break
        left = deadline - time.monotonic()
        if left <= 0:
            how = "deadline"
            break
        wait = min(left, 0.05) if exited_at else left
        watch = list(open_fds) + [0, children[0]]
        r, w, _ = select.select(watch, [feed] if feed else [], [], wait)
        if 0 in r and read_line(0) in (b"", b"cancel"):
            how = "cancelled"
            break
        if children[0] in r:
            while True:
                try:
                    os.read(children[0], 512)
                except BlockingIOError:
                    break
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, exited_at = st, time.monotonic()
        if w:
            try:
                data = data[os.write(feed, data[:65536]) :]
            except OSError:
                data = b""
            if not data:
                os.close(feed)
                feed = None
        for fd in r:
            if fd in open_fds:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.discard(fd)
                    continue
                room = max(0, cap - len(kept[fd]))
                kept[fd] += chunk[:room]
                cut[fd] |= len(chunk) > room
    if how != "exited":
        for kill in (os.killpg, os.kill):  # it may have left its group
            try:
                kill(pid, 9)
            except OSError:
                pass
    if status is None:
        status = os.waitpid(pid, 0)[1]
    for fd in list(kept) + ([feed] if feed else []):
        os.close(fd)
    code = os.waitstatus_to_exitcode(status)
    o, e = fds[1][0], fds[2][0]
    return {
        "ended": how,
        "exit": code if code >= 0 else 128 - code,
        "stdout": base64.b64encode(kept[o]).decode(),
        "stderr": base64.b64encode(kept[e]).decode(),
        "stdout_truncated": cut[o],
        "stderr_truncated": cut[e],
    }


answer("READY", {"pid": me})
while True:
    line = read_line()
    if not line:
        break
    try:
        req = json.loads(line)
        nonce = req["nonce"]
    except (ValueError, KeyError, TypeError):
        continue
    if req.get("op") == "pin":
        for p in req["pids"]:
            s, t = status(p), started(p)
            if s is not None and s[1] == uid and t is not None:
                pinned[p] = t
        answer(nonce, {"pinned": sorted(p for p in req["pids"] if p in pinned)})
    elif req.get("op") == "sweep":
        answer(nonce, sweep(req["keep"], req["measure"]))
    elif req.get("op") == "run":
        answer(nonce, run(req))
