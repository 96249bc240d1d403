#!/usr/bin/env bash
# In the consumer container: both tarballs into an empty project, offline
# (nothing else is fetched, nothing is built), then check.cjs and check.mjs.
set -euo pipefail
NPM_CLI=${NPM_CLI:-/usr/local/lib/node_modules/npm/bin/npm-cli.js}
mkdir /tmp/app && cd /tmp/app
echo '{"name": "app", "version": "1.0.0", "private": true}' >package.json
node "$NPM_CLI" install --offline --no-audit --no-fund --loglevel=error /dist/node/plimsoll-linux-x64-gnu-*.tgz "$(ls /dist/node/plimsoll-[0-9]*.tgz)"
cp /checks/check.cjs /checks/check.mjs .
node check.cjs
node check.mjs
