"""The E2B stand-in, checked by E2B's own published Python SDK (e2b 2.63.0).

Starts `plimsoll-standin e2b` on free ports and points the SDK at it through
the SDK's documented settings (E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL,
E2B_DOMAIN), then drives it as an E2B user would: a refused key; create with
metadata; read the sandbox back and list it by metadata; write, read and miss
a file; run commands (output, cwd, the default user, a failing exit, input
sent to a command started with stdin and then closed, a
process killed by signal and one cut at its timeout); outbound traffic open by
default and closed when the create turns internet access off; a create that
denies everything but one host with a header rule (as plimsoll's egress guard
asks) reaching that host over HTTPS through the stand-in's egress proxy, the
rule's header set outside the VM (runc only: runsc is registered with
--network=none here); envd refusing a
call without the access token; pause (processes end, files stay) and connect
to resume; kill, after which the sandbox is gone. Every container the
stand-in made is gone after it stops.

    python3 tests/standins/e2b_sdk.py target/debug/plimsoll-standin [--runtime runsc]
"""

import http.server
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

STANDIN = sys.argv[1]
EXTRA = sys.argv[2:]
KEY = "e2b_" + secrets.token_hex(20)
LABEL = "io.plimsoll.standin.e2b"
UNREACHABLE = ("ENETUNREACH", "EHOSTUNREACH")

GUARDED = "sdk.plimsoll.test"
upstream_seen = []


class _Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        upstream_seen.append((self.path, self.headers.get("host"), self.headers.get("authorization")))
        out = b"upstream says hi"
        self.send_response(200)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
threading.Thread(target=upstream.serve_forever, daemon=True).start()

proc = subprocess.Popen(
    [STANDIN, "e2b", *EXTRA, "--upstream", f"{GUARDED}=127.0.0.1:{upstream.server_address[1]}"],
    env={**os.environ, "E2B_API_KEY": KEY},
    stdout=subprocess.PIPE,
    text=True,
)
addresses = json.loads(proc.stdout.readline())
os.environ.update(
    E2B_API_KEY=KEY,
    E2B_API_URL=addresses["api"],
    E2B_SANDBOX_URL=addresses["envd"],
    E2B_DOMAIN="e2b.standin.invalid",
)

# Imported after the environment is set: the SDK reads it per connection.
from e2b import (  # noqa: E402
    AuthenticationException,
    CommandExitException,
    NotFoundException,
    Sandbox,
    SandboxQuery,
    TimeoutException,
)

checks = []


def check(name, ok, detail=""):
    checks.append(name)
    if not ok:
        raise AssertionError(f"{name}: {detail}")
    print(f"  ok  {name}")


def raises(exc, fn):
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError(f"expected {exc.__name__}")


def egress(sbx):
    """The VM's network interfaces other than loopback, and how a TCP
    connect out (to TEST-NET-1, so nothing answers) fails."""
    probe = (
        "import errno,json,socket\n"
        "ifs=[n for _,n in socket.if_nameindex() if n!='lo']\n"
        "s=socket.socket();s.settimeout(1)\n"
        "try:\n s.connect(('192.0.2.1',9));how='connected'\n"
        "except socket.timeout:how='timeout'\n"
        "except OSError as e:how=errno.errorcode.get(e.errno,str(e.errno))\n"
        "print(json.dumps([ifs,how]))\n"
    )
    sbx.files.write("probe.py", probe)
    return json.loads(sbx.commands.run("python3 probe.py").stdout)


try:
    started = time.monotonic()
    raises(
        AuthenticationException,
        lambda: Sandbox.create(template="base", api_key="e2b_" + "0" * 40),
    )
    check("a wrong API key is refused", True)

    sbx = Sandbox.create(template="base", timeout=300, metadata={"check": "sdk"})
    info = Sandbox.get_info(sbx.sandbox_id)
    check("create, then read back", info.metadata == {"check": "sdk"} and info.state.value == "running", info)
    listed = Sandbox.list(query=SandboxQuery(metadata={"check": "sdk"})).next_items()
    check("list by metadata", [s.sandbox_id for s in listed] == [sbx.sandbox_id], listed)

    sbx.files.write("project/hello.txt", "hello from the sdk\n")
    check("write then read a file", sbx.files.read("project/hello.txt") == "hello from the sdk\n")
    raises(NotFoundException, lambda: sbx.files.read("project/missing.txt"))
    check("a missing file is not found", True)

    r = sbx.commands.run("cat hello.txt && id -un && pwd", cwd="/home/user/project")
    check(
        "a command runs as the default user in its cwd",
        r.exit_code == 0 and r.stdout == "hello from the sdk\nuser\n/home/user/project\n",
        r,
    )
    e = raises(CommandExitException, lambda: sbx.commands.run("echo oops >&2; exit 3"))
    check("a failing command reports its exit and stderr", e.exit_code == 3 and e.stderr == "oops\n", e)

    h = sbx.commands.run("while read -r l; do echo \"got $l\"; done; echo eof", background=True, stdin=True)
    sbx.commands.send_stdin(h.pid, "one\n")
    sbx.commands.send_stdin(h.pid, b"two\n")
    sbx.commands.close_stdin(h.pid)
    done = h.wait()
    check("stdin: sent input reaches the command, close_stdin ends it", done.stdout == "got one\ngot two\neof\n", done)
    h = sbx.commands.run("sleep 60", background=True)
    check("a background command is listed", h.pid in [p.pid for p in sbx.commands.list()])
    check("kill reaches it", sbx.commands.kill(h.pid))
    e = raises(CommandExitException, h.wait)
    check("a killed command ends by signal", e.exit_code == -1 and "killed" in (e.error or ""), e)

    t0 = time.monotonic()
    raises(TimeoutException, lambda: sbx.commands.run("sleep 61", timeout=2))
    time.sleep(1)
    left = [p for p in sbx.commands.list() if p.args[-1:] == ["sleep 61"]]
    check("a command is cut at its timeout, and killed", time.monotonic() - t0 < 20 and left == [], left)

    ifs, how = egress(sbx)
    if "runsc" in EXTRA:
        # .ci/setup-host.sh registers runsc with --network=none: no VM under it
        # has a way out, asked for or not.
        check("under runsc (--network=none) even a default VM has no way out", ifs == [] and how in UNREACHABLE, (ifs, how))
    else:
        check("egress is open by default (an interface out)", ifs != [] and how not in UNREACHABLE, (ifs, how))
    closed = Sandbox.create(template="base", timeout=120, allow_internet_access=False)
    ifs, how = egress(closed)
    check("egress is closed without internet access (loopback only)", ifs == [] and how in UNREACHABLE, (ifs, how))
    closed.kill()

    if "runsc" not in EXTRA:
        rule = {"transform": {"headers": {"Authorization": "Bearer sdk-rule"}}}
        guarded = Sandbox.create(
            template="base", timeout=120, allow_internet_access=False,
            network={"allow_out": [GUARDED], "deny_out": ["0.0.0.0/0"], "rules": {GUARDED: [rule]}},
        )
        got = guarded.commands.run(
            "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt node -e "
            f"\"require('https').get({{host: '{GUARDED}', path: '/p', headers: {{authorization: 'x'}}}}, "
            "(r) => { let b = ''; r.on('data', (c) => b += c); r.on('end', () => console.log(r.statusCode, b)); })\""
        )
        check("a guarded VM reaches its one host through the egress proxy", got.stdout == "200 upstream says hi\n", got)
        check("the create's header rule is set outside the VM",
              upstream_seen == [("/p", GUARDED, "Bearer sdk-rule")], upstream_seen)
        ifs, how = egress(guarded)
        check("and nothing else", how in UNREACHABLE or how == "timeout", (ifs, how))
        guarded.kill()

    req = urllib.request.Request(
        addresses["envd"] + "/process.Process/List",
        data=b"{}",
        headers={"Content-Type": "application/json", "E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"},
    )
    try:
        urllib.request.urlopen(req)
        status = 200
    except urllib.error.HTTPError as err:
        status = err.code
    check("envd refuses a call without the access token", status == 401, status)

    sbx.commands.run("sleep 600", background=True)
    sbx.pause()
    check("pause", Sandbox.get_info(sbx.sandbox_id).state.value == "paused")
    resumed = Sandbox.connect(sbx.sandbox_id, timeout=120)
    check("connect resumes; files stay", resumed.files.read("project/hello.txt") == "hello from the sdk\n")
    check("processes end with a pause", resumed.commands.list() == [], resumed.commands.list())

    check("kill", resumed.kill())
    raises(NotFoundException, lambda: Sandbox.get_info(sbx.sandbox_id))
    check("a killed sandbox is gone", Sandbox.list(query=SandboxQuery(metadata={"check": "sdk"})).next_items() == [])
finally:
    proc.terminate()
    rc = proc.wait(timeout=60)

left = subprocess.run(
    ["docker", "ps", "-aq", "--filter", f"label={LABEL}"], capture_output=True, text=True, check=True
).stdout.split()
check("the stand-in stopped cleanly and left no container", rc == 0 and left == [], (rc, left))
print(f"e2b {EXTRA or ['runc']}: {len(checks)} checks passed with e2b 2.63.0 in {time.monotonic() - started:.1f} s")
