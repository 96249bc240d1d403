"""TLS on plimsolld (PLIMSOLL_TLS_CERT, PLIMSOLL_TLS_KEY), with a test CA made
by openssl: the published client and curl reach the RPC and metrics
listeners over TLS 1.2+ with ALPN h2 and http/1.1; a half-set or mismatched
pair refuses startup, naming the variable; a listener off loopback without
TLS warns at startup."""

import json
import os
import ssl
import subprocess

import plimsoll_client
import pytest

from conftest import BINARY, TOKEN_ALICE


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def issue(d, name, ca="ca"):
    """A P-256 key and a certificate for localhost and 127.0.0.1 signed by `ca`."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", "/CN=localhost", cwd=d)
    (d / f"{name}.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext", cwd=d)
    return d / f"{name}.crt", d / f"{name}.key"


@pytest.fixture
def pki(tmp_path):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=plimsoll test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", cwd=tmp_path)
    cert, key = issue(tmp_path, "server")
    return tmp_path / "ca.crt", cert, key, tmp_path


def curl(*args):
    return subprocess.run(["curl", "-sS", "--max-time", "20", *args], capture_output=True, text=True)


def test_the_published_client_and_curl_reach_a_tls_daemon(start_daemon, clients_file, pki):
    ca, cert, key, _ = pki
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_CLIENTS_FILE=clients_file,
                     PLIMSOLL_TLS_CERT=str(cert), PLIMSOLL_TLS_KEY=str(key))
    assert d.url.startswith("https://localhost:")
    c = plimsoll_client.Client(d.url, token=TOKEN_ALICE, ssl_context=ssl.create_default_context(cafile=str(ca)))
    assert c.describe().isolation == "process"
    r = c.run_javascript("console.log(6 * 7)")
    assert (r.exit_code, r.stdout) == (0, b"42\n")
    # The system's roots do not know the test CA: the client refuses the daemon.
    with pytest.raises(Exception):
        plimsoll_client.Client(d.url, token=TOKEN_ALICE).describe()
    # curl: HTTP/2 by ALPN and HTTP/1.1, TLS 1.2 and 1.3, never below.
    body = json.dumps({"protocol": 4})
    for flag, version in [("--http2", "2"), ("--http1.1", "1.1")]:
        out = curl(flag, "--cacert", str(ca), "-H", f"Authorization: Bearer {TOKEN_ALICE}",
                   "-H", "Content-Type: application/json", "-d", body, "-w", "\n%{http_version} %{http_code}",
                   d.url + "/plimsoll.v1.SandboxService/Describe")
        assert out.returncode == 0, out.stderr
        answer, status = out.stdout.rsplit("\n", 1)
        assert status == f"{version} 200", out.stdout
        assert json.loads(answer)["isolation"] == "process"
    for pinned in (["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]):
        out = curl(*pinned, "--cacert", str(ca), d.url + "/healthz")
        assert (out.returncode, out.stdout) == (0, "ok"), out.stderr
    old = curl("--tlsv1.1", "--tls-max", "1.1", "--cacert", str(ca), d.url + "/healthz")
    assert old.returncode != 0, "TLS 1.1 is refused"
    plain = curl(d.url.replace("https://", "http://") + "/healthz")
    assert plain.stdout != "ok", "no clear text on the TLS listener"
    # The metrics listener serves TLS too.
    out = curl("--cacert", str(ca), d.metrics_url + "/metrics")
    assert out.returncode == 0 and "plimsoll_runs" in out.stdout, out.stderr


def refused(env):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "PLIMSOLL_"))}
    full.update({"PLIMSOLL_ADDR": "127.0.0.1:0", "PLIMSOLL_METRICS_ADDR": "off"}, **env)
    p = subprocess.run([str(BINARY)], env=full, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def test_a_bad_or_half_set_pair_refuses_startup(pki):
    ca, cert, key, d = pki
    other_cert, other_key = issue(d, "other")
    cases = [
        ({"PLIMSOLL_TLS_CERT": str(cert)}, "PLIMSOLL_TLS_KEY"),
        ({"PLIMSOLL_TLS_KEY": str(key)}, "PLIMSOLL_TLS_CERT"),
        ({"PLIMSOLL_TLS_CERT": str(cert), "PLIMSOLL_TLS_KEY": str(other_key)}, "PLIMSOLL_TLS_KEY"),
        ({"PLIMSOLL_TLS_CERT": str(d / "missing.crt"), "PLIMSOLL_TLS_KEY": str(key)}, "PLIMSOLL_TLS_CERT"),
        ({"PLIMSOLL_TLS_CERT": str(cert), "PLIMSOLL_TLS_KEY": str(cert)}, "PLIMSOLL_TLS_KEY"),
    ]
    for env, variable in cases:
        code, err = refused(env)
        assert code != 0 and variable in err, (env, err)
        assert "PRIVATE KEY" not in err


def test_clear_text_off_loopback_warns(start_daemon):
    d = start_daemon(PLIMSOLL_ADDR="0.0.0.0:0")
    warnings = [json.loads(l) for l in d.log().splitlines() if "clear text" in l]
    assert warnings and warnings[0]["level"] == "WARN", d.log()
    assert warnings[0]["variable"] == "PLIMSOLL_ADDR"
