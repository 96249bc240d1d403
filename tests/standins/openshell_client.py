"""The OpenShell stand-in, checked by NVIDIA's own published Python client
(openshell 0.1.5).

Starts `plimsoll-standin openshell --certs-dir …` on a free port, with the
mTLS bundle written where the client's documented gateway configuration
looks for it ($XDG_CONFIG_HOME/openshell/gateways/<name>/{metadata.json,
mtls/ca.crt,mtls/tls.crt,mtls/tls.key}, selected by $OPENSHELL_GATEWAY),
then drives it as an OpenShell user would: a channel without a client
certificate is refused; health; a sandbox created with an image, resource
limits and labels (the `Sandbox` context manager: create, wait until ready,
delete on exit) is read back and listed by label; commands run in it
(stdout, stderr and the exit code, a workdir and environment, stdin, a
read-only root with a writable /tmp, no network, a command cut at its
timeout); the container carries the limits asked for; after the delete the
sandbox is not found. Every container the stand-in made is gone after it
stops.

    python3 tests/standins/openshell_client.py target/debug/plimsoll-standin [--runtime runsc]
"""

import json
import os
import pathlib
import secrets
import subprocess
import sys
import tempfile
import time

STANDIN = sys.argv[1]
EXTRA = sys.argv[2:]
LABEL = "io.plimsoll.standin.openshell"
GATEWAY = "standin"

config = pathlib.Path(tempfile.mkdtemp(prefix="openshell-standin-"))
gateway_dir = config / "openshell" / "gateways" / GATEWAY
mtls = gateway_dir / "mtls"
proc = subprocess.Popen(
    [STANDIN, "openshell", "--certs-dir", str(mtls), *EXTRA],
    stdout=subprocess.PIPE,
    text=True,
)
gateway = json.loads(proc.stdout.readline())["gateway"]
(gateway_dir / "metadata.json").write_text(json.dumps({"gateway_endpoint": gateway}))
os.environ.update(XDG_CONFIG_HOME=str(config), OPENSHELL_GATEWAY=GATEWAY)

import grpc  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402
from openshell import Sandbox, SandboxClient  # noqa: E402
from openshell._proto import openshell_pb2, openshell_pb2_grpc  # noqa: E402
from openshell.mutations import DeletionOutcome  # noqa: E402

checks = []


def check(name, ok, detail=""):
    checks.append(name)
    if not ok:
        raise AssertionError(f"{name}: {detail}")
    print(f"  ok  {name}")


def containers(sandbox_id):
    return subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={LABEL}.sandbox={sandbox_id}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()


def docker_inspect(sandbox_id):
    out = subprocess.run(["docker", "inspect", *containers(sandbox_id)], capture_output=True, check=True)
    return json.loads(out.stdout)


try:
    started = time.monotonic()
    bare = grpc.secure_channel(
        gateway.removeprefix("https://"),
        grpc.ssl_channel_credentials(root_certificates=(mtls / "ca.crt").read_bytes()),
    )
    try:
        openshell_pb2_grpc.OpenShellStub(bare).Health(openshell_pb2.HealthRequest(), timeout=10)
        refused = None
    except grpc.RpcError as e:
        refused = e.code()
    bare.close()
    check("a client without a certificate is refused", refused == grpc.StatusCode.UNAVAILABLE, refused)

    client = SandboxClient.from_active_cluster()
    health = client.health()
    check("health through the gateway config", health.status == openshell_pb2.SERVICE_STATUS_HEALTHY, health)

    run = secrets.token_hex(4)
    resources = struct_pb2.Struct()
    resources.update({"limits": {"cpu": "1", "memory": "256Mi"}})
    spec = openshell_pb2.SandboxSpec(
        template=openshell_pb2.SandboxTemplate(image="plimsoll/project:latest", resources=resources)
    )
    name = f"check-{run}"
    with Sandbox(workspace="default", spec=spec, name=name, labels={"plimsoll.run": run}) as sbx:
        check("create, then ready", sbx.sandbox.phase == openshell_pb2.SANDBOX_PHASE_READY, sbx.sandbox)
        back = client.get(name, workspace="default")
        check(
            "read back: id, name, labels",
            back.id == sbx.id and back.name == name and dict(back.labels) == {"plimsoll.run": run},
            back,
        )
        raw = openshell_pb2_grpc.OpenShellStub(client._channel).GetSandbox(
            openshell_pb2.GetSandboxRequest(name=name, workspace_scope={"workspace": "default"}), timeout=10
        )
        check(
            "read back: the spec's image and limits",
            raw.sandbox.spec.template.image == "plimsoll/project:latest"
            and raw.sandbox.spec.template.resources == resources,
            raw.sandbox.spec,
        )
        listed = client.list_ids(workspace="default", label_selector=f"plimsoll.run={run}")
        check("list by label", listed == [sbx.id], listed)
        check("list by another label", client.list_ids(workspace="default", label_selector="plimsoll.run=x") == [])

        r = sbx.exec(["sh", "-c", "echo hello; echo oops >&2; exit 3"])
        check("exec: stdout, stderr, exit code", (r.stdout, r.stderr, r.exit_code) == ("hello\n", "oops\n", 3), r)
        r = sbx.exec(["sh", "-c", 'pwd; echo "$GREETING"; cat'], workdir="/tmp", env={"GREETING": "it's me"}, stdin=b"in\n")
        check("exec: workdir, environment, stdin", r.stdout == "/tmp\nit's me\nin\n" and r.exit_code == 0, r)
        r = sbx.exec(["sh", "-c", "echo x > /tmp/f && cat /tmp/f; echo y > /etc/f"])
        check("exec: /tmp writable, the root read-only", r.stdout == "x\n" and r.exit_code != 0, r)
        probe = (
            "import errno,socket\n"
            "s=socket.socket();s.settimeout(1)\n"
            "try:\n s.connect(('192.0.2.1',9));how='connected'\n"
            "except OSError as e:how=errno.errorcode.get(e.errno,str(e.errno))\n"
            "print(*[n for _,n in socket.if_nameindex()],how)\n"
        )
        r = sbx.exec(["python3", "-c", probe])
        *ifs, how = r.stdout.split()
        check("exec: no network but loopback", ifs == ["lo"] and how in ("ENETUNREACH", "EHOSTUNREACH"), r)
        t0 = time.monotonic()
        r = sbx.exec(["sleep", "30"], timeout_seconds=1)
        check("exec: cut at its timeout with 124", r.exit_code == 124 and time.monotonic() - t0 < 15, r)

        (info,) = docker_inspect(sbx.id)
        host = info["HostConfig"]
        check(
            "the container: limits, no network, read-only root, no capabilities",
            host["Memory"] == 256 << 20
            and host["NanoCpus"] == 10**9
            and host["NetworkMode"] == "none"
            and host["ReadonlyRootfs"]
            and host["CapDrop"] == ["ALL"],
            host,
        )
        if EXTRA[-1:] == ["runsc"]:
            check("the container runs under runsc", host["Runtime"] == "runsc", host["Runtime"])
        sandbox_id = sbx.id

    try:
        client.get(name, workspace="default")
        gone = None
    except grpc.RpcError as e:
        gone = e.code()
    check("deleted on exit; then not found", gone == grpc.StatusCode.NOT_FOUND, gone)
    again = client.delete(name, workspace="default", allow_missing=True)
    check("a second delete is already absent", again.outcome == DeletionOutcome.ALREADY_ABSENT, again)
    check("its container is gone", containers(sandbox_id) == [], containers(sandbox_id))
    client.close()
finally:
    proc.terminate()
    rc = proc.wait(timeout=60)

left = subprocess.run(
    ["docker", "ps", "-aq", "--filter", f"label={LABEL}"], capture_output=True, text=True, check=True
).stdout.split()
check("the stand-in stopped cleanly and left no container", rc == 0 and left == [], (rc, left))
print(f"openshell {EXTRA or ['runc']}: {len(checks)} checks passed with openshell 0.1.5 in {time.monotonic() - started:.1f} s")
