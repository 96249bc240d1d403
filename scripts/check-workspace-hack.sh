#!/usr/bin/env bash
# Fails when the test build, the Python extension and the Node addon resolve a
# shared dependency with different features: each would then compile its own
# copy of it and of everything above it (wasmtime and cranelift included), and
# the test command would spend minutes rebuilding them. Prints, per crate, the
# features to pin in workspace-hack/Cargo.toml.
#
#   bash scripts/check-workspace-hack.sh
#
# Only `cargo tree` runs (a second or two): nothing is built.
set -euo pipefail
cd "$(dirname "$0")/.."
tree() { cargo tree --locked -e normal,dev,no-proc-macro -f '{p} {f}' --prefix none "$@" | sort -u; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# What `cargo test` builds (the default members, dev-dependencies included),
# and what maturin and napi build (one binding each, no dev-dependencies).
tree -p plimsoll-core -p plimsolld -p plimsoll-capi -p plimsoll-standins -p plimsoll-workspace-hack >"$dir/test"
cargo tree --locked -e normal,no-proc-macro -f '{p} {f}' --prefix none -p plimsoll-python | sort -u >"$dir/python"
cargo tree --locked -e normal,no-proc-macro -f '{p} {f}' --prefix none -p plimsoll-node | sort -u >"$dir/node"
python3 - "$dir" <<'PY'
import sys

def load(path):
    # "name vX.Y.Z [(proc-macro)] [(path)] features" -> {(name, version): {features}}
    out = {}
    for line in open(path):
        words = line.replace(" (*)", "").split()
        if len(words) < 2:
            continue
        key, rest = (words[0], words[1]), words[2:]
        if rest[:1] == ["(proc-macro)"]:
            continue  # host-only: built apart from the target's crates anyway
        while rest and rest[0].startswith("("):
            rest = rest[1:]  # a local package's path
        out.setdefault(key, set()).add(" ".join(rest))
    return out

d = sys.argv[1]
test = load(f"{d}/test")
drift = False
for name in ("python", "node"):
    other = load(f"{d}/{name}")
    for key in sorted(set(test) & set(other)):
        if key[0].startswith("plimsoll"):
            continue  # the workspace's own crates (plimsoll-core differs by `capi`)
        if test[key] != other[key]:
            drift = True
            print(f"{key[0]} {key[1]}: the test build has {sorted(test[key])}, "
                  f"the {name} build {sorted(other[key])}")
if drift:
    print("pin the union of those features in workspace-hack/Cargo.toml", file=sys.stderr)
    sys.exit(1)
print("the test build and both bindings resolve every shared dependency alike")
PY
