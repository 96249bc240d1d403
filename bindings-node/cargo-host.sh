#!/usr/bin/env bash
# The cargo `napi build` runs (package.json sets CARGO to this file): cargo as
# asked, except that a `--target` naming the host is dropped. napi always
# passes one, and cargo never shares a compiled unit between an explicit
# target and a host build, so the addon would recompile the whole dependency
# tree (wasmtime and cranelift included) that the workspace's own build has
# just compiled. Without it the addon builds from the workspace's target
# directory in a minute; its library is then linked to where napi looks for it
# (<target dir>/<triple>/<profile>/). A `--target` for another machine is
# passed through untouched.
set -euo pipefail
host=$(rustc -vV | sed -n 's/^host: //p')
args=() dropped=0 profile=debug target_dir=${CARGO_TARGET_DIR:-}
while [ $# -gt 0 ]; do
  case $1 in
    --target) if [ "${2:-}" = "$host" ]; then dropped=1; shift 2; continue; fi ;;
    --target="$host") dropped=1; shift; continue ;;
    --release) profile=release ;;
    --profile) profile=${2:-$profile}; [ "$profile" = dev ] && profile=debug ;;
    --target-dir) target_dir=${2:-} ;;
  esac
  args+=("$1")
  shift
done
cargo "${args[@]}"
if [ "$dropped" = 1 ] && [ "${args[0]:-}" = build ]; then
  [ -n "$target_dir" ] || target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  mkdir -p "$target_dir/$host/$profile"
  ln -f "$target_dir/$profile/libplimsoll_node.so" "$target_dir/$host/$profile/libplimsoll_node.so"
fi
