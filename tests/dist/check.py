"""In the consumer container: the installed wheel runs a snippet embedded and
against the plimsolld image, raises its typed errors, and carries its docs
and metadata."""

import importlib.metadata
import importlib.resources
import os

import plimsoll

with plimsoll.Engine({"SANDBOX_PROVIDER": "wasm"}) as engine:
    r = engine.run_javascript("console.log(6*7)", minimum_isolation="process")
    assert (r.stdout, r.exit_code, r.isolation) == (b"42\n", 0, "process"), r
    assert plimsoll.verify_run(r.request_json, r.response_json).record_sha256
    try:
        engine.run_javascript("1", minimum_isolation="kernel")
        raise AssertionError("a kernel floor on the process tier ran")
    except plimsoll.InsufficientIsolationError as e:
        assert e.not_dispatched == "isolation", e
print("python embedded: 42 on process, record verified, floor refused")

client = plimsoll.Client(os.environ["PLIMSOLL_URL"], token=os.environ["PLIMSOLL_TOKEN"])
r = client.run_javascript("console.log(6*7)", minimum_isolation="process")
assert (r.stdout, r.isolation) == (b"42\n", "process"), r
assert r.record is not None and r.record.record_sha256
print(f"python remote: 42 from plimsolld at {os.environ['PLIMSOLL_URL']}, record {r.record.record_sha256[:12]}")

assert plimsoll.Engine.run_javascript.__doc__, "no docstring"
meta = importlib.metadata.metadata("plimsoll")
assert "Operating System :: POSIX :: Linux" in meta.get_all("Classifier"), meta.get_all("Classifier")
assert meta["Requires-Python"] == ">=3.10", meta["Requires-Python"]
stub = importlib.resources.files("plimsoll").joinpath("_native.pyi").read_text()
assert '"""' in stub and "py.typed" in [p.name for p in importlib.resources.files("plimsoll").iterdir()]
print(f"python metadata: {meta['Name']} {meta['Version']}, {len(meta.get_all('Classifier'))} classifiers, stubs with docstrings")
