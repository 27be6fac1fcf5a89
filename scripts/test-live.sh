#!/usr/bin/env bash
# npm run test:live: builds (or reuses) the engines, starts a private pair on free ports, runs the live
# suites against them and always stops them again. Exits non-zero, loudly, when an engine cannot be built
# (no Go, no module proxy) or started: a live suite that silently skipped would hide breakage.
# Extra arguments go to mocha (e.g. `npm run test:live -- --grep Temporal`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/geofabric-live.XXXXXX")
export GEOFABRIC_ENGINES_STATE=$run_dir/engines.env # a pair of our own, even if a developer's pair runs
cleanup() {
  bash scripts/engines.sh stop || true
  rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

seconds() { echo $(($(date +%s) - $1)); }

t=$(date +%s)
bash scripts/engines.sh install
echo "test-live: engines ready in $(seconds "$t")s" >&2

t=$(date +%s)
bash scripts/engines.sh start >"$run_dir/env"
echo "test-live: engines started in $(seconds "$t")s" >&2
set -a
# shellcheck source=/dev/null
. "$run_dir/env"
set +a

t=$(date +%s)
status=0
npx mocha --config .mocharc.live.json "$@" || status=$?
echo "test-live: live suites finished in $(seconds "$t")s with exit code $status" >&2
exit "$status"
