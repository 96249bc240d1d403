"""The Docker Cloud stand-in's Connect contract (docker.sbx.v1), checked by
Docker's own published client: docker-sbx-api 0.36.0, its `sbx_facade`
(proto codec, Connect protocol, requests uncompressed).

Starts `plimsoll-standin dockercloud` on free ports, exchanges the Docker ID
and PAT for an access token at the stand-in's token endpoint (as Docker Hub
does), then drives the management base URL it prints (`…/sbx`) and a
sandbox's own endpoint as a Docker Sandboxes user would: a call without the
token is unauthenticated; the capabilities list the permissions and sizes;
a sandbox created from a raw image reference (name, resources, start
command, timeout, delete on timeout) comes back as a pending operation that
WaitOperation completes with the running Sandbox (its endpoint, resources
and booted digest); GetSandbox by id and by name, ListSandboxes, the
effective network policy (deny-all, nothing allowed); on its endpoint,
with the same credential: two files uploaded (one nested), exec (argv,
working directory, environment, both streams, the exit code, no network),
a download of a file and a missing path; an unknown sandbox and a
refused create; delete, then not found. Every container the stand-in made
is gone after it stops.

    python3 tests/standins/dockercloud_sbx.py target/debug/plimsoll-standin [--runtime runsc]
"""

import json
import os
import secrets
import subprocess
import sys
import urllib.request

STANDIN = sys.argv[1]
EXTRA = sys.argv[2:]
LABEL = "io.plimsoll.standin.dockercloud"
IMAGE = "registry.example/plimsoll/project@sha256:" + "ab" * 32
USER, PAT = "plimsoll-ci", "dckr_pat_" + secrets.token_hex(16)

proc = subprocess.Popen(
    [STANDIN, "dockercloud", "--auth", "127.0.0.1:0", "--api", "127.0.0.1:0",
     "--endpoint", "127.0.0.1:0", "--image", f"{IMAGE}=plimsoll/dockercloud:latest", *EXTRA],
    stdout=subprocess.PIPE, text=True,
    env={**os.environ, "DOCKER_SBX_USERNAME": USER, "DOCKER_SBX_TOKEN": PAT},
)
addrs = json.loads(proc.stdout.readline())

import sbx_facade  # noqa: E402
from connectrpc.code import Code  # noqa: E402
from connectrpc.errors import ConnectError  # noqa: E402
from docker.sbx.common.v1 import common_pb2  # noqa: E402
from docker.sbx.extensions.cloud.v1 import cloud_pb2  # noqa: E402
from docker.sbx.files.v1 import files_pb2  # noqa: E402
from docker.sbx.process.v1 import process_pb2  # noqa: E402
from docker.sbx.v1 import netpolicy_pb2, operation_pb2, policy_pb2, sandbox_pb2  # noqa: E402
from google.protobuf import duration_pb2  # noqa: E402

checks = []


def check(name, ok, detail=""):
    checks.append(name)
    if not ok:
        raise AssertionError(f"{name}: {detail}")
    print(f"  ok  {name}")


def code_of(f):
    try:
        f()
    except ConnectError as e:
        return e.code
    return None


def containers():
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={LABEL}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return out


try:
    req = urllib.request.Request(
        addrs["auth"] + "/v2/auth/token",
        data=json.dumps({"identifier": USER, "secret": PAT}).encode(),
        headers={"content-type": "application/json"},
    )
    token = json.loads(urllib.request.urlopen(req).read())["access_token"]
    auth = {"authorization": f"Bearer {token}"}
    c = sbx_facade.connect(addrs["connect"])

    check("no token: unauthenticated",
          code_of(lambda: c.capabilities.get_capabilities(sandbox_pb2.GetCapabilitiesRequest()))
          == Code.UNAUTHENTICATED)
    caps = c.capabilities.get_capabilities(sandbox_pb2.GetCapabilitiesRequest(), headers=auth)
    P = common_pb2.Permission
    check("capabilities: the permissions read, create, delete, network-policy read",
          {P.PERMISSION_SANDBOXES_READ, P.PERMISSION_SANDBOXES_CREATE, P.PERMISSION_SANDBOXES_DELETE,
           P.PERMISSION_NETWORK_POLICIES_READ} <= set(caps.permissions), caps)
    check("capabilities: the sizes", (caps.resources.cpu_min, caps.resources.memory_mib_max) == (1, 4096), caps)

    name = "plimsoll-check-" + secrets.token_hex(4)
    create = sandbox_pb2.CreateSandboxRequest(
        name=name,
        resources=common_pb2.Resources(cpus=1, memory_mib=2048),
        cloud=cloud_pb2.CloudCreateOptions(
            image_ref=IMAGE, start_cmd=["tail", "-f", "/dev/null"],
            timeout=duration_pb2.Duration(seconds=600), on_timeout=cloud_pb2.ON_TIMEOUT_DELETE,
            platform=common_pb2.Platform(os="linux", architecture="amd64"),
        ),
        request_id=secrets.token_hex(8),
    )
    op = c.sandboxes.create_sandbox(create, headers=auth)
    check("create: a pending operation", op.id and op.metadata.kind == operation_pb2.OPERATION_KIND_CREATE_SANDBOX, op)
    while not op.done:
        op = c.operations.wait_operation(
            operation_pb2.WaitOperationRequest(id=op.id, timeout=duration_pb2.Duration(seconds=10)), headers=auth)
    check("wait: done with a response", op.WhichOneof("result") == "response", op)
    sb = sandbox_pb2.Sandbox()
    check("wait: the response is a Sandbox", op.response.Unpack(sb), op.response.type_url)
    core = sb.core
    check("the sandbox runs, as asked",
          (core.name, core.status, core.resources.cpus, core.resources.memory_mib)
          == (name, common_pb2.SANDBOX_STATUS_RUNNING, 1, 2048), core)
    check("its endpoint speaks Connect",
          core.endpoint.protocol == common_pb2.SANDBOX_ENDPOINT_PROTOCOL_CONNECT and core.endpoint.uri, core.endpoint)
    check("its booted digest", sb.cloud.image_digest == "sha256:" + "ab" * 32, sb.cloud)

    by_id = c.sandboxes.get_sandbox(
        sandbox_pb2.GetSandboxRequest(sandbox=common_pb2.SandboxRef(id=core.id)), headers=auth)
    by_name = c.sandboxes.get_sandbox(
        sandbox_pb2.GetSandboxRequest(sandbox=common_pb2.SandboxRef(name=name)), headers=auth)
    check("get by id and by name", by_id.core.id == by_name.core.id == core.id)
    listed = c.sandboxes.list_sandboxes(sandbox_pb2.ListSandboxesRequest(page_size=10), headers=auth)
    check("list", [s.core.id for s in listed.sandboxes] == [core.id], listed)
    policy = c.network_policies.get_effective_network_policy(
        netpolicy_pb2.GetEffectiveNetworkPolicyRequest(
            target=policy_pb2.PolicyTarget(sandbox=common_pb2.SandboxRef(id=core.id))), headers=auth)
    check("effective policy: deny-all, nothing allowed",
          policy.mode == netpolicy_pb2.NETWORK_POLICY_MODE_DENY_ALL and not policy.allow_networks, policy)

    e = sbx_facade.connect_sandbox(core.endpoint.uri)
    frames = [
        files_pb2.UploadRequest(header=files_pb2.FileHeader(path="/tmp/w/main.js", mode=0o644)),
        files_pb2.UploadRequest(data=b"console.log(process.argv[2], process.env.X, process.cwd());"),
        files_pb2.UploadRequest(header=files_pb2.FileHeader(path="/tmp/w/lib/data.txt", mode=0o600)),
        files_pb2.UploadRequest(data=b"da"),
        files_pb2.UploadRequest(data=b"ta"),
    ]
    up = e.files.upload(iter(frames), headers=auth)
    check("upload: two files", up.files_written == 2, up)
    ran = e.processes.exec(
        process_pb2.ExecRequest(cmd=["node", "main.js", "hi"], working_dir="/tmp/w", env={"X": "y"}), headers=auth)
    check("exec: argv, env, working directory", (ran.exit_code, ran.stdout) == (0, b"hi y /tmp/w\n"), ran)
    ran = e.processes.exec(
        process_pb2.ExecRequest(cmd=["sh", "-c", "cat lib/data.txt; echo oops >&2; exit 3"], working_dir="/tmp/w"),
        headers=auth)
    check("exec: both streams and the exit code", (ran.exit_code, ran.stdout, ran.stderr) == (3, b"data", b"oops\n"), ran)
    ran = e.processes.exec(
        process_pb2.ExecRequest(cmd=["node", "-e", "require('net').connect(80, '1.1.1.1').on('error', e => console.log(e.code)).on('connect', () => console.log('connected'))"]),
        headers=auth)
    check("exec: no way out", ran.stdout.strip() != b"connected" and ran.exit_code == 0, ran)
    got = list(e.files.download(files_pb2.DownloadRequest(paths=["/tmp/w/lib/data.txt", "/tmp/w/nope"]), headers=auth))
    kinds = [f.WhichOneof("frame") for f in got]
    check("download: header, data, then an error for the missing path",
          kinds == ["header", "data", "error"] and got[0].header.mode == 0o600 and got[1].data == b"data"
          and got[2].error.path == "/tmp/w/nope", got)
    check("the endpoint without the token: unauthenticated",
          code_of(lambda: e.processes.exec(process_pb2.ExecRequest(cmd=["true"]))) == Code.UNAUTHENTICATED)

    check("an unknown sandbox: not found",
          code_of(lambda: c.sandboxes.get_sandbox(
              sandbox_pb2.GetSandboxRequest(sandbox=common_pb2.SandboxRef(id="nope")), headers=auth))
          == Code.NOT_FOUND)
    bad = sandbox_pb2.CreateSandboxRequest()
    bad.CopyFrom(create)
    bad.name = "other"
    bad.resources.ClearField("cpus")
    check("a create without cpus: invalid",
          code_of(lambda: c.sandboxes.create_sandbox(bad, headers=auth)) == Code.INVALID_ARGUMENT)
    check("a second create of the name: already exists",
          code_of(lambda: c.sandboxes.create_sandbox(create, headers=auth)) == Code.ALREADY_EXISTS)

    d = c.sandboxes.delete_sandbox(
        sandbox_pb2.DeleteSandboxRequest(sandbox=common_pb2.SandboxRef(id=core.id), force=True), headers=auth)
    check("delete: done", d.done and d.metadata.kind == operation_pb2.OPERATION_KIND_DELETE_SANDBOX, d)
    check("then not found",
          code_of(lambda: c.sandboxes.get_sandbox(
              sandbox_pb2.GetSandboxRequest(sandbox=common_pb2.SandboxRef(id=core.id)), headers=auth))
          == Code.NOT_FOUND)
finally:
    proc.terminate()
    rc = proc.wait(60)
check("the stand-in stopped cleanly", rc == 0, rc)
check("no container left", not containers(), containers())
print(f"docker-sbx-api {__import__('importlib.metadata').metadata.version('docker-sbx-api')}: {len(checks)} checks passed against the stand-in")
