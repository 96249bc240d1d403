#!/usr/bin/env bash
# The hosted providers against the real services, with your own credentials
# (never in CI: they cost money and need accounts):
#
#   bash scripts/live.sh e2b          # E2B_API_KEY (and the optional E2B variables)
#   bash scripts/live.sh dockercloud  # DOCKER_SBX_TOKEN, DOCKER_SBX_USERNAME, SANDBOX_DOCKERCLOUD_IMAGE
#   bash scripts/live.sh openshell    # SANDBOX_OPENSHELL_GATEWAY_URL, _CA_FILE, _CERT_FILE, _KEY_FILE, _IMAGE
#
# The provider's variables are read from this environment exactly as
# plimsolld reads them (docs/providers/<name>.md lists them); a required one
# missing fails here, before anything is built. The test then proves the
# provider at startup against the real service, runs a snippet and a project
# at its tier, shuts down and checks nothing is left (plimsoll-core/tests/live.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

provider="${1:-}"
case "$provider" in
  e2b) need=(E2B_API_KEY) ;;
  dockercloud) need=(DOCKER_SBX_TOKEN DOCKER_SBX_USERNAME SANDBOX_DOCKERCLOUD_IMAGE) ;;
  openshell) need=(SANDBOX_OPENSHELL_GATEWAY_URL SANDBOX_OPENSHELL_CA_FILE SANDBOX_OPENSHELL_CERT_FILE
                   SANDBOX_OPENSHELL_KEY_FILE SANDBOX_OPENSHELL_IMAGE) ;;
  *) echo "usage: bash scripts/live.sh e2b|dockercloud|openshell" >&2; exit 2 ;;
esac
missing=()
for v in "${need[@]}"; do
  [ -n "${!v:-}" ] || missing+=("$v")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "live.sh: $provider needs ${missing[*]} (see docs/providers/$provider.md)" >&2
  exit 1
fi
export SANDBOX_PROVIDER="$provider" PLIMSOLL_LIVE="$provider"
# No `-p`: features resolve over the default members, as in the test
# command's build, so this reuses it instead of compiling the core again.
exec cargo test --test live -- --ignored --exact "${provider}_against_the_real_service"
