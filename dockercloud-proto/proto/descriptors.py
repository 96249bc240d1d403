"""Writes the Docker Sandboxes Connect contract the `docker-sbx-api` 0.36.0
wheel compiles in (`docker/sbx/**/*_pb2.py`, `buf/validate/validate_pb2.py`)
as one serialized `google.protobuf.FileDescriptorSet`,
`docker-sbx-api-0.36.0.binpb`: the services plimsoll calls (sandboxes,
capabilities, operations, network policies; a sandbox endpoint's processes
and files) and every file they import, in dependency order. The wheel ships
no `.proto` text and its `buf/validate/validate.proto` is proto2 with
extensions, so the set is taken from the compiled descriptors themselves:
every name, number, type, label, oneof, map and option is the wheel's.

    python3 -m venv /tmp/sbx && /tmp/sbx/bin/pip install docker-sbx-api==0.36.0
    /tmp/sbx/bin/python dockercloud-proto/proto/descriptors.py            # write
    /tmp/sbx/bin/python dockercloud-proto/proto/descriptors.py --check    # compare

`--check` fails when the vendored set differs from what the installed wheel
gives. The well-known types (`google/protobuf/*`) are included as the wheel's
protobuf runtime compiled them.
"""

import hashlib
import importlib
import importlib.metadata
import pathlib
import sys

from google.protobuf import descriptor_pb2

HERE = pathlib.Path(__file__).resolve().parent
VERSION = "0.36.0"
OUT = HERE / f"docker-sbx-api-{VERSION}.binpb"
ROOTS = (
    "docker.sbx.v1.sandbox_pb2",
    "docker.sbx.v1.operation_pb2",
    "docker.sbx.v1.netpolicy_pb2",
    "docker.sbx.process.v1.process_pb2",
    "docker.sbx.files.v1.files_pb2",
)


def collect():
    files, seen = [], set()

    def walk(fd):
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            walk(dep)
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        files.append(proto)

    for name in ROOTS:
        walk(importlib.import_module(name).DESCRIPTOR)
    return descriptor_pb2.FileDescriptorSet(file=files)


def main():
    version = importlib.metadata.version("docker-sbx-api")
    assert version == VERSION, version
    data = collect().SerializeToString(deterministic=True)
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_bytes() != data:
            sys.exit(f"{OUT.name}: differs from what the installed wheel gives")
    else:
        OUT.write_bytes(data)
    print(f"{hashlib.sha256(data).hexdigest()}  {OUT.name}")
    for f in collect().file:
        print(f"  {f.name}")


if __name__ == "__main__":
    main()
