# plimsoll's Python cell kernel: one request per line on the original stdin
# ({"nonce", "code"} as JSON); one answer per cell on the original stdout,
# "<nonce> <json>\n". Guest code sees /dev/null on fd 0 and per-cell capture
# files on fds 1 and 2, so nothing it prints reaches the channel by accident,
# and a line it forges lacks the host's fresh nonce.
import ast, base64, json, os, sys, traceback
CAP = 65536
_cin = os.fdopen(os.dup(0), "rb")
_cout = os.dup(1)
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
os.dup2(_null, 2)
os.set_inheritable(_cout, False)
os.write(_cout, ("READY %d\n" % os.getpid()).encode())
_g = {"__name__": "__main__", "__builtins__": __builtins__}

def _line():
    b = _cin.readline()
    if not b:
        return None
    return b.rstrip(b"\n")

def _tmp():
    # An unlinked file in /tmp (O_TMPFILE is not everywhere, gVisor included).
    path = "/tmp/.plimsoll-cell-" + os.urandom(8).hex()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)
    return fd

def _back(fd):
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while len(data) < min(size, CAP):
        chunk = os.read(fd, min(size, CAP) - len(data))
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return data, size > CAP

while True:
    raw = _line()
    if raw is None:
        break
    req = json.loads(raw)
    out, err = _tmp(), _tmp()
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(out, 1)
    os.dup2(err, 2)
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
    o, ot = _back(out)
    e, et = _back(err)
    ans = {"exit_code": code, "stdout": base64.b64encode(o).decode(), "stderr": base64.b64encode(e).decode(),
           "stdout_truncated": ot, "stderr_truncated": et}
    os.write(_cout, (req["nonce"] + " " + json.dumps(ans) + "\n").encode())
