# plimsoll's Python cell kernel: one request per line on the original stdin
# ({"nonce", "code"} as JSON); one answer per cell on the original stdout,
# "<nonce> <json>\n". Guest code sees /dev/null on fd 0 and per-cell capture
# pipes on fds 1 and 2, so nothing it prints reaches the channel by accident,
# and a line it forges lacks the host's fresh nonce. Each pipe is drained by a
# thread that keeps the first CAP bytes and counts the rest: a flood never
# blocks the cell, fills a disk or grows memory.
import ast, base64, json, os, sys, threading, traceback
CAP = 65536
_cin = os.fdopen(os.dup(0), "rb")
_cout = os.dup(1)
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
os.dup2(_null, 2)
os.set_inheritable(_cout, False)
def _send(b):
    # The channel is a pipe the host drains as it reads: a large answer may
    # go out in several writes (or meet EAGAIN if the pipe is non-blocking).
    import time
    while b:
        try:
            b = b[os.write(_cout, b):]
        except BlockingIOError:
            time.sleep(0.002)

_send(("READY %d\n" % os.getpid()).encode())
_g = {"__name__": "__main__", "__builtins__": __builtins__}

def _line():
    b = _cin.readline()
    if not b:
        return None
    return b.rstrip(b"\n")

class _Capture:
    def __init__(self):
        self.r, self.w = os.pipe()
        self.kept, self.seen = bytearray(), 0
        self.t = threading.Thread(target=self._drain, daemon=True)
        self.t.start()

    def _drain(self):
        while True:
            try:
                chunk = os.read(self.r, 65536)
            except OSError:
                break
            if not chunk:
                break
            room = CAP - len(self.kept)
            if room > 0:
                self.kept.extend(chunk[:room])
            self.seen += len(chunk)
        os.close(self.r)

    def back(self):
        # A process the cell left behind may hold the pipe open: take what
        # arrived within a moment and leave the thread to drain the rest.
        os.close(self.w)
        self.t.join(0.5)
        return bytes(self.kept[:CAP]), self.seen > CAP

while True:
    raw = _line()
    if raw is None:
        break
    req = json.loads(raw)
    out, err = _Capture(), _Capture()
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(out.w, 1)
    os.dup2(err.w, 2)
    code = 0
    try:
        tree = ast.parse(req["code"], "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), _g)
        if last is not None:
            v = eval(compile(last, "<cell>", "eval"), _g)
            if v is not None:
                print(repr(v))
    except BaseException:
        code = 1
        try:
            traceback.print_exc()
        except BaseException:
            pass
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    os.dup2(_null, 1)
    os.dup2(_null, 2)
    o, ot = out.back()
    e, et = err.back()
    ans = {"exit_code": code, "stdout": base64.b64encode(o).decode(), "stderr": base64.b64encode(e).decode(),
           "stdout_truncated": ot, "stderr_truncated": et}
    _send((req["nonce"] + " " + json.dumps(ans) + "\n").encode())
