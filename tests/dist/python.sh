#!/usr/bin/env bash
# In the consumer container: the wheel into a fresh virtualenv with no index
# and binary-only (so nothing can be compiled), then check.py.
set -euo pipefail
python3 -m venv /tmp/venv
/tmp/venv/bin/pip install -q --disable-pip-version-check --no-index --only-binary=:all: /dist/python/plimsoll-*-cp310-abi3-manylinux_*_x86_64.whl
/tmp/venv/bin/python /checks/check.py
