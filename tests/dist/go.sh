#!/usr/bin/env bash
# In the consumer container: the C install tree, the Go module's source in a
# directory of its own, and a program in another that uses it through a
# replace directive — no network, no module proxy. Then the module's own
# Example functions under go test.
set -euo pipefail
tar -xzf /dist/capi/plimsoll-capi-*-linux-x86_64.tar.gz -C /
ldconfig
mkdir -p /tmp/gomod /tmp/goapp
tar -xzf /dist/go/plimsoll-go-*.tar.gz -C /tmp/gomod
cd /tmp/goapp
cat >go.mod <<'MOD'
module example.com/app

go 1.19

require example.invalid/plimsoll/bindings-go v0.0.0

replace example.invalid/plimsoll/bindings-go => /tmp/gomod/bindings-go
MOD
cp /checks/main.go .
export GOPROXY=off GOFLAGS=-mod=mod GOCACHE=/tmp/gocache CGO_ENABLED=1
go run .
cd /tmp/gomod/bindings-go
go test -count=1 -run '^Example' . | tail -n 1
