"""Renders the `.proto` files vendored here from the compiled protocol
definitions the `openshell` wheel ships (`openshell/_proto/*_pb2.py`, whose
serialized FileDescriptorProtos are the exact wire definitions of that
release). The wheel carries no `.proto` text and the vendor repository has
no tag for it, so this is how the files were made:

    python3 -m venv /tmp/os && /tmp/os/bin/pip install openshell==0.1.5
    /tmp/os/bin/python openshell-proto/proto/render.py            # write
    /tmp/os/bin/python openshell-proto/proto/render.py --check    # compare

`--check` fails when a vendored file differs from what the installed wheel
renders to. Comments did not survive compilation, so the files have none;
every name, number, type, label, oneof, map, reservation and option (custom
ones included) is the wheel's. `--verify` additionally compiles the rendered
files with grpcio-tools' protoc (pip install grpcio-tools) and checks the
result equals the wheel's descriptors field for field.
"""

import hashlib
import pathlib
import sys

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.descriptor import FieldDescriptor

import openshell
from openshell._proto import datamodel_pb2, openshell_pb2, options_pb2, sandbox_pb2

HERE = pathlib.Path(__file__).resolve().parent
MODULES = (options_pb2, datamodel_pb2, sandbox_pb2, openshell_pb2)
VERSION = "0.1.5"

SCALARS = {
    FieldDescriptor.TYPE_DOUBLE: "double",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_FIXED64: "fixed64",
    FieldDescriptor.TYPE_FIXED32: "fixed32",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_SFIXED32: "sfixed32",
    FieldDescriptor.TYPE_SFIXED64: "sfixed64",
    FieldDescriptor.TYPE_SINT32: "sint32",
    FieldDescriptor.TYPE_SINT64: "sint64",
}


def camel(name):
    """protoc's default json_name."""
    out, up = [], False
    for c in name:
        if c == "_":
            up = True
        else:
            out.append(c.upper() if up else c)
            up = False
    return "".join(out)


def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if hasattr(v, "ListFields"):
        body = text_format.MessageToString(v, as_one_line=True)
        return "{ " + body + " }" if body else "{}"
    return str(v)


def options(opts, skip=()):
    """The options set on an *Options message, as `name = value` strings."""
    out = []
    for fd, v in opts.ListFields():
        if fd.name in skip:
            continue
        name = f"({fd.full_name})" if fd.is_extension else fd.name
        if fd.type == FieldDescriptor.TYPE_ENUM and not fd.is_extension:
            v = fd.enum_type.values_by_number[v].name
        out.append(f"{name} = {value(v)}")
    return out


def type_name(f):
    if f.type in (f.TYPE_MESSAGE, f.TYPE_ENUM):
        return f.type_name
    return SCALARS[f.type]


def field_line(f, maps, pad):
    if f.type == f.TYPE_MESSAGE and f.type_name in maps:
        k, v = maps[f.type_name]
        head = f"map<{type_name(k)}, {type_name(v)}> {f.name} = {f.number}"
    else:
        label = ""
        if f.label == f.LABEL_REPEATED:
            label = "repeated "
        elif f.proto3_optional:
            label = "optional "
        head = f"{label}{type_name(f)} {f.name} = {f.number}"
    opts = options(f.options)
    if f.HasField("json_name") and f.json_name != camel(f.name):
        opts.insert(0, f"json_name = {value(f.json_name)}")
    if opts:
        head += " [" + ", ".join(opts) + "]"
    return pad + head + ";"


def reserved(m, pad):
    lines = []
    for r in m.reserved_range:
        lines.append(f"{pad}reserved {r.start}" + (f" to {r.end - 1}" if r.end - 1 > r.start else "") + ";")
    for n in m.reserved_name:
        lines.append(f'{pad}reserved "{n}";')
    return lines


def enum(e, depth):
    pad = "  " * depth
    lines = [f"{pad}enum {e.name} {{"]
    lines += [f"{pad}  option {o};" for o in options(e.options)]
    for v in e.value:
        opts = options(v.options)
        lines.append(f"{pad}  {v.name} = {v.number}" + (" [" + ", ".join(opts) + "]" if opts else "") + ";")
    lines += reserved(e, pad + "  ")
    lines.append(f"{pad}}}")
    return lines


def message(m, prefix, depth):
    pad = "  " * depth
    full = f"{prefix}.{m.name}"
    maps = {
        f"{full}.{n.name}": (n.field[0], n.field[1]) for n in m.nested_type if n.options.map_entry
    }
    lines = [f"{pad}message {m.name} {{"]
    lines += [f"{pad}  option {o};" for o in options(m.options)]
    real_oneofs = {f.oneof_index for f in m.field if f.HasField("oneof_index") and not f.proto3_optional}
    done = set()
    for f in m.field:
        if f.HasField("oneof_index") and f.oneof_index in real_oneofs:
            i = f.oneof_index
            if i in done:
                continue
            done.add(i)
            o = m.oneof_decl[i]
            lines.append(f"{pad}  oneof {o.name} {{")
            lines += [f"{pad}    option {x};" for x in options(o.options)]
            for g in m.field:
                if g.HasField("oneof_index") and g.oneof_index == i and not g.proto3_optional:
                    lines.append(field_line(g, maps, pad + "    "))
            lines.append(f"{pad}  }}")
        else:
            lines.append(field_line(f, maps, pad + "  "))
    for n in m.nested_type:
        if not n.options.map_entry:
            lines += message(n, full, depth + 1)
    for e in m.enum_type:
        lines += enum(e, depth + 1)
    lines += reserved(m, pad + "  ")
    lines.append(f"{pad}}}")
    return lines


def render(module):
    fd = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fd)
    assert fd.syntax == "proto3", fd.syntax
    assert not fd.public_dependency and not fd.weak_dependency
    lines = [
        f"// {fd.name} of NVIDIA OpenShell {VERSION}, rendered from the compiled",
        f"// descriptor in the `openshell` {VERSION} wheel by render.py (no comments survive).",
        "",
        'syntax = "proto3";',
        "",
        f"package {fd.package};",
        "",
    ]
    lines += [f'import "{d}";' for d in fd.dependency]
    fo = options(fd.options)
    if fo:
        lines.append("")
        lines += [f"option {o};" for o in fo]
    prefix = "." + fd.package
    for e in fd.extension:
        lines += ["", f"extend {e.extendee} {{", field_line(e, {}, "  "), "}"]
    for e in fd.enum_type:
        lines.append("")
        lines += enum(e, 0)
    for m in fd.message_type:
        lines.append("")
        lines += message(m, prefix, 0)
    for s in fd.service:
        lines += ["", f"service {s.name} {{"]
        lines += [f"  option {o};" for o in options(s.options)]
        for r in s.method:
            i = ("stream " if r.client_streaming else "") + r.input_type
            o = ("stream " if r.server_streaming else "") + r.output_type
            opts = options(r.options)
            if opts:
                lines.append(f"  rpc {r.name}({i}) returns ({o}) {{")
                lines += [f"    option {x};" for x in opts]
                lines.append("  }")
            else:
                lines.append(f"  rpc {r.name}({i}) returns ({o});")
        lines.append("}")
    return fd.name, "\n".join(lines) + "\n"


def verify(rendered):
    """Compiles the rendered text with protoc (grpcio-tools) and compares."""
    import tempfile

    from grpc_tools import protoc
    import grpc_tools

    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as d:
        for name, text in rendered:
            (pathlib.Path(d) / name).write_text(text)
        out = pathlib.Path(d) / "set.binpb"
        args = ["protoc", f"-I{d}", f"-I{include}", f"--descriptor_set_out={out}"]
        if protoc.main(args + [n for n, _ in rendered]) != 0:
            sys.exit("protoc refused the rendered files")
        got = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    by_name = {f.name: f for f in got.file}
    for module in MODULES:
        want = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(want)
        have = by_name[want.name]
        for f in (want, have):
            f.ClearField("source_code_info")
        # CopyToProto leaves json_name out; protoc fills in the default.
        strip_json(want), strip_json(have)
        if want != have:
            sys.exit(f"{want.name}: compiled rendering differs from the wheel's descriptor")
    print("protoc compiles the rendered files to the wheel's descriptors")


def strip_json(fd):
    def walk(m):
        for f in m.field:
            if f.json_name == camel(f.name):
                f.ClearField("json_name")
        for n in m.nested_type:
            walk(n)

    for m in fd.message_type:
        walk(m)
    for e in fd.extension:
        if e.json_name == camel(e.name):
            e.ClearField("json_name")


def main():
    if openshell.__version__ if hasattr(openshell, "__version__") else None:
        assert openshell.__version__ == VERSION, openshell.__version__
    rendered = [render(m) for m in MODULES]
    check = "--check" in sys.argv
    bad = False
    for name, text in rendered:
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                print(f"{name}: differs from the wheel's rendering", file=sys.stderr)
                bad = True
        else:
            path.write_text(text)
        print(f"{hashlib.sha256(text.encode()).hexdigest()}  {name}")
    if "--verify" in sys.argv:
        verify(rendered)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
