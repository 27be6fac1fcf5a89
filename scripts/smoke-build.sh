#!/usr/bin/env bash
# Smoke test of the compiled build: `npm run build` and the TypeScript client's build, then `node dist/bin/geofabric.js` — `worker --check`, and
# `start` (gateway, perception and governance) on free ports with a temporary DATA_DIR, until GET /health and the
# dashboard answer — then SIGTERM and a clean exit. Plain Node, no tsx: what the Docker images run.
# Bounded: SMOKE_TIMEOUT seconds (default 60) for the gateway to answer, 30 for it to stop. Exit 0 when it all
# worked, 1 with the gateway's log otherwise.
#
#   bash scripts/smoke-build.sh          # SMOKE_SKIP_BUILD=1: use the existing dist/
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ -n "${SMOKE_SKIP_BUILD:-}" ] || npm run build > /dev/null
# The TypeScript client's package build (tsc declarations + an esbuild bundle that takes in the server's imagery
# code): nothing else builds it, so a change that breaks its declarations or bundle would pass unnoticed. Its
# bundle, loaded by plain Node, must verify a conformance receipt.
[ -n "${SMOKE_SKIP_BUILD:-}" ] || npm --prefix clients/typescript run build > /dev/null
node --input-type=module -e "
  import { readFileSync } from 'node:fs';
  import { verifyReceipt } from './clients/typescript/dist/index.js';
  const verdict = verifyReceipt(JSON.parse(readFileSync('test/fixtures/conformance/receipt-valid.json', 'utf8')));
  if (!verdict.ok) throw new Error('the built client refuses receipt-valid.json: ' + verdict.failedCheck);
" || { printf 'smoke-build: FAIL the built TypeScript client (clients/typescript/dist)\n' >&2 && exit 1; }
data=$(mktemp -d "${TMPDIR:-/tmp}/geofabric-smoke.XXXXXX")
pid=''
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2> /dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
fail() {
  printf 'smoke-build: FAIL %s\n' "$1" >&2
  [ ! -f "$data/gateway.log" ] || tail -n 30 "$data/gateway.log" >&2
  exit 1
}

# Three free ports from the kernel (listening on 0, then closed).
read -r port perception governance < <(node -e "
  const net = require('node:net');
  const one = () => new Promise((ok) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); }); });
  Promise.all([one(), one(), one()]).then((ps) => console.log(ps.join(' ')));")

DATA_DIR="$data/worker" timeout 30 node dist/bin/geofabric.js worker --check > /dev/null || fail 'worker --check'

started=$(date +%s%N)
DATA_DIR="$data" HOST=127.0.0.1 PORT=$port PERCEPTION_PORT=$perception GOVERNANCE_PORT=$governance \
  GOVERNANCE_HOST=127.0.0.1 node dist/bin/geofabric.js start > "$data/gateway.log" 2>&1 &
pid=$!
deadline=$(($(date +%s) + ${SMOKE_TIMEOUT:-60}))
until node -e "fetch('http://127.0.0.1:$port/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; do
  kill -0 "$pid" 2> /dev/null || fail 'the gateway exited before answering /health'
  [ "$(date +%s)" -lt "$deadline" ] || fail "no answer from /health within ${SMOKE_TIMEOUT:-60} s"
  sleep 0.2
done
ready_ms=$((($(date +%s%N) - started) / 1000000))
rss_kb=$(ps -o rss= -p "$pid" | tr -d ' ')
node -e "fetch('http://127.0.0.1:$port/dashboard').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" ||
  fail 'GET /dashboard (dashboard/ not found from dist?)'

kill -TERM "$pid"
status=0
timeout 30 tail --pid="$pid" -f /dev/null || fail 'the gateway did not stop within 30 s of SIGTERM'
wait "$pid" || status=$?
pid=''
[ "$status" -eq 0 ] || fail "the gateway exited with $status after SIGTERM"
printf 'smoke-build: OK (compiled gateway ready in %d ms, RSS %d MiB)\n' "$ready_ms" "$((rss_kb / 1024))"
