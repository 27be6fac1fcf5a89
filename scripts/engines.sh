#!/usr/bin/env bash
# Real engines for development and the live suites: the Temporal CLI dev server (full Temporal on
# SQLite, with the Web UI) and FerretDB v1 (MongoDB wire protocol on SQLite). Neither ships through
# npm or Debian, so both are built from the Go module proxy at pinned versions into a cache folder.
#
#   scripts/engines.sh install [temporal|ferretdb]   build what is missing (skips a binary that reports the pin)
#   scripts/engines.sh start                         start both on free loopback ports, print the env lines
#   scripts/engines.sh env                           print the env lines of the running engines again
#   scripts/engines.sh stop                          stop both and delete their data
#
# Env: GEOFABRIC_ENGINES_DIR (cache, default ~/.cache/geofabric-engines), GEOFABRIC_ENGINES_STATE (state
# file of one running pair; give each concurrent pair its own), GEOFABRIC_ENGINES_TIMEOUT (start, s), and
# fixed ports instead of free ones: GEOFABRIC_TEMPORAL_PORT (e.g. 7233), GEOFABRIC_TEMPORAL_UI_PORT (8233),
# GEOFABRIC_FERRETDB_PORT (27017).
# Progress goes to stderr and only KEY=VALUE lines to stdout, so `set -a; . <(scripts/engines.sh env)` works.
set -euo pipefail

# --- Pins: the only place the versions live. ---
GO_MIN_VERSION=1.25 # temporalio/cli v1.5.1 declares go 1.25.0; FerretDB v1.24.2 declares go 1.24
TEMPORAL_MODULE=github.com/temporalio/cli
TEMPORAL_VERSION=v1.5.1
FERRETDB_MODULE=github.com/FerretDB/FerretDB
FERRETDB_VERSION=v1.24.2

# Registered at server start: custom search attributes cannot be added later without the operator API.
SEARCH_ATTRIBUTES=(H3Cell=Keyword Requester=Keyword JobStatus=Keyword StepTypes=KeywordList Epoch=Int)

ENGINES_DIR=${GEOFABRIC_ENGINES_DIR:-$HOME/.cache/geofabric-engines}
BIN_DIR=$ENGINES_DIR/bin
STATE_FILE=${GEOFABRIC_ENGINES_STATE:-$ENGINES_DIR/run/state.env}
START_TIMEOUT=${GEOFABRIC_ENGINES_TIMEOUT:-90}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf 'engines: %s\n' "$*" >&2; }
die() {
  printf '\nengines: ERROR: %s\n\n' "$*" >&2
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# install

require_go() {
  command -v go >/dev/null 2>&1 ||
    die "'go' is not on PATH. The live suites need Go >= $GO_MIN_VERSION to build the Temporal CLI and FerretDB
       from the Go module proxy (https://go.dev/dl/). Install Go, or put it on PATH, and run again."
  local have
  have=$(go env GOVERSION) # e.g. go1.26.8
  have=${have#go}
  if [ "$(printf '%s\n%s\n' "$GO_MIN_VERSION" "$have" | sort -V | head -n1)" != "$GO_MIN_VERSION" ]; then
    die "Go $have is too old: $TEMPORAL_MODULE@$TEMPORAL_VERSION needs Go >= $GO_MIN_VERSION (GOTOOLCHAIN=$(go env GOTOOLCHAIN))."
  fi
}

# True when the binary runs and reports the pinned version: a stale or broken build is rebuilt.
binary_is_pinned() {
  local bin=$1 want=$2
  local out
  [ -x "$bin" ] || return 1
  # Captured first: `… | grep -q` closes the pipe at the first match, and under pipefail the writer's
  # SIGPIPE (FerretDB prints more lines after its version) would fail the check at random.
  out=$("$bin" --version 2>/dev/null) || return 1
  grep -qF "${want#v}" <<<"$out"
}

# Downloads one module version (or reuses the module cache); on failure, says which command failed and why.
module_dir() {
  local module=$1 version=$2 out
  if ! out=$(go mod download -json "$module@$version" 2>&1); then
    die "cannot fetch $module@$version from the Go module proxy (GOPROXY=$(go env GOPROXY)).
       command: go mod download -json $module@$version
       error:   $(printf '%s' "$out" | grep -E '"Error"|error|dial|40[0-9]' | head -n 3)
       The live suites need the module proxy (or a warm module cache) to build their engines."
  fi
  printf '%s' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

build_temporal() {
  # Fetch first, so an unreachable proxy fails with a precise message rather than inside go install.
  module_dir "$TEMPORAL_MODULE" "$TEMPORAL_VERSION" >/dev/null || return 1
  # Same flags as the upstream release (goreleaser): stripped, and --version reports the pin.
  GOBIN=$BIN_DIR go install -ldflags="-s -w -X $TEMPORAL_MODULE/temporalcli.Version=${TEMPORAL_VERSION#v}" \
    "$TEMPORAL_MODULE/cmd/temporal@$TEMPORAL_VERSION"
}

build_ferretdb() {
  # Not `go install …@version`: the proxy answers 403 to FerretDB's @v/list, which go install reads for its
  # deprecation check; and the module zip lacks build/version/version.txt, which FerretDB's release build
  # generates, so such a binary panics at start. Build a copy of the module with that file written.
  local src work status=0
  src=$(module_dir "$FERRETDB_MODULE" "$FERRETDB_VERSION") || return 1
  [ -d "$src" ] || {
    log "go mod download gave no source directory for $FERRETDB_MODULE@$FERRETDB_VERSION"
    return 1
  }
  work=$(mktemp -d "${TMPDIR:-/tmp}/ferretdb-build.XXXXXX")
  {
    cp -R "$src/." "$work/" &&
      chmod -R u+w "$work" &&
      printf '%s\n' "$FERRETDB_VERSION" >"$work/build/version/version.txt" &&
      printf 'geofabric\n' >"$work/build/version/package.txt" &&
      (cd "$work" && go build -buildvcs=false -trimpath -ldflags='-s -w' -o "$BIN_DIR/.ferretdb.partial" ./cmd/ferretdb) &&
      mv -f "$BIN_DIR/.ferretdb.partial" "$BIN_DIR/ferretdb"
  } || status=1
  rm -rf "$work"
  return $status
}

install_one() {
  local name=$1 version=$2 started elapsed
  if binary_is_pinned "$BIN_DIR/$name" "$version"; then
    log "$name $version: present in $BIN_DIR"
    return
  fi
  log "$name $version: building into $BIN_DIR (first time: Temporal about 6 min, FerretDB about 1 min on 2 cores)"
  started=$(date +%s)
  "build_$name" || die "building $name $version failed (see the go output above)"
  elapsed=$(($(date +%s) - started))
  binary_is_pinned "$BIN_DIR/$name" "$version" ||
    die "$BIN_DIR/$name was built but does not report $version: $("$BIN_DIR/$name" --version 2>&1 | head -n 3)"
  log "$name $version: built in ${elapsed}s ($(du -h "$BIN_DIR/$name" | cut -f1))"
}

cmd_install() {
  local which=${1:-all}
  mkdir -p "$BIN_DIR"
  # Outside any Go module or workspace of the caller's, so go commands cannot touch a go.mod of theirs.
  cd "$ENGINES_DIR"
  export GOWORK=off
  # Checked even when both binaries exist: CI must say loudly that Go is missing, never skip silently.
  require_go
  case $which in
  all)
    install_one temporal "$TEMPORAL_VERSION"
    install_one ferretdb "$FERRETDB_VERSION"
    ;;
  temporal) install_one temporal "$TEMPORAL_VERSION" ;;
  ferretdb) install_one ferretdb "$FERRETDB_VERSION" ;;
  *) die "unknown engine '$which' (temporal or ferretdb)" ;;
  esac
}

# ---------------------------------------------------------------------------------------------------
# start / stop

# Three distinct free loopback ports, held open together so the kernel cannot hand out one twice.
free_ports() {
  node -e '
    const net = require("node:net");
    const servers = Array.from({ length: Number(process.argv[1]) }, () => net.createServer());
    Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", () => ok(s.address().port)))))
      .then((ports) => { console.log(ports.join(" ")); servers.forEach((s) => s.close()); });
  ' "$1"
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

temporal_ready() {
  local out
  out=$("$BIN_DIR/temporal" operator search-attribute list --address "$1" --namespace default \
    --command-timeout 3s -o json 2>/dev/null) || return 1
  grep -qF '"H3Cell"' <<<"$out" # not piped: see binary_is_pinned
}

# A real MongoDB `ping` through the project's driver (`ferretdb ping` needs the new-auth setup flags);
# a bare TCP connect when node_modules is not installed yet.
ferretdb_ready() {
  if [ -d "$REPO_ROOT/node_modules/mongodb" ]; then
    (cd "$REPO_ROOT" && node --input-type=module -e '
      import { MongoClient } from "mongodb";
      const client = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 2000 });
      try { await client.db("admin").command({ ping: 1 }); } finally { await client.close(); }
    ' "mongodb://$1/") >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null
  fi
}

write_state() {
  mkdir -p "$(dirname "$STATE_FILE")"
  cat >"$STATE_FILE" <<EOF
ENGINES_DATA_DIR=$DATA_DIR
ENGINES_BIN_DIR=$BIN_DIR
TEMPORAL_PID=$TEMPORAL_PID
FERRETDB_PID=$FERRETDB_PID
TEMPORAL_ADDRESS=127.0.0.1:$TEMPORAL_PORT
TEMPORAL_NAMESPACE=default
TEMPORAL_UI=http://127.0.0.1:$UI_PORT
MONGODB_URI=mongodb://127.0.0.1:$FERRETDB_PORT/
EOF
}

read_state() {
  [ -f "$STATE_FILE" ] || return 1
  ENGINES_DATA_DIR=$(sed -n 's/^ENGINES_DATA_DIR=//p' "$STATE_FILE")
  ENGINES_BIN_DIR=$(sed -n 's/^ENGINES_BIN_DIR=//p' "$STATE_FILE")
  TEMPORAL_PID=$(sed -n 's/^TEMPORAL_PID=//p' "$STATE_FILE")
  FERRETDB_PID=$(sed -n 's/^FERRETDB_PID=//p' "$STATE_FILE")
}

cmd_env() {
  read_state || die "no engines are running for state file $STATE_FILE (run: scripts/engines.sh start)"
  grep -E '^(TEMPORAL_ADDRESS|TEMPORAL_NAMESPACE|TEMPORAL_UI|MONGODB_URI)=' "$STATE_FILE"
}

start_failed() {
  local what=$1 logfile=$2
  printf '\nengines: ERROR: %s\n--- last lines of %s ---\n' "$what" "$logfile" >&2
  tail -n 30 "$logfile" >&2 || true
  cmd_stop >/dev/null 2>&1 || true
  exit 1
}

cmd_start() {
  if read_state && { alive "$TEMPORAL_PID" || alive "$FERRETDB_PID"; }; then
    log "already running (state file $STATE_FILE)"
    cmd_env
    return
  fi
  local b
  for b in temporal ferretdb; do
    [ -x "$BIN_DIR/$b" ] || die "$BIN_DIR/$b is missing: run scripts/engines.sh install first"
  done

  read -r TEMPORAL_PORT UI_PORT FERRETDB_PORT < <(free_ports 3)
  TEMPORAL_PORT=${GEOFABRIC_TEMPORAL_PORT:-$TEMPORAL_PORT}
  UI_PORT=${GEOFABRIC_TEMPORAL_UI_PORT:-$UI_PORT}
  FERRETDB_PORT=${GEOFABRIC_FERRETDB_PORT:-$FERRETDB_PORT}
  DATA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/geofabric-engines.XXXXXX")
  mkdir -p "$DATA_DIR/ferretdb"
  local sa_flags=() sa
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do sa_flags+=(--search-attribute "$sa"); done

  local started
  started=$(date +%s%N)
  # HTTP-API and metrics ports are left to the server (it picks free ones). The transfer queue's reader (history
  # handing new activity and workflow tasks to matching) polls at most 20 times a second per shard by default: on
  # the dev server's single shard that is up to 50 ms on every hop of a step on another process's queue.
  nohup "$BIN_DIR/temporal" server start-dev --ip 127.0.0.1 --port "$TEMPORAL_PORT" --ui-port "$UI_PORT" \
    --db-filename "$DATA_DIR/temporal.db" --namespace default --log-level warn "${sa_flags[@]}" \
    --dynamic-config-value system.enableEagerWorkflowStart=true \
    --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
    >"$DATA_DIR/temporal.log" 2>&1 </dev/null &
  TEMPORAL_PID=$!
  # --debug-addr=- : the default debug port 8088 would collide between concurrent runs.
  nohup "$BIN_DIR/ferretdb" --handler=sqlite --sqlite-url="file:$DATA_DIR/ferretdb/" \
    --listen-addr="127.0.0.1:$FERRETDB_PORT" --state-dir="$DATA_DIR" --debug-addr=- \
    --telemetry=disable --log-level=warn \
    >"$DATA_DIR/ferretdb.log" 2>&1 </dev/null &
  FERRETDB_PID=$!
  write_state # before waiting, so `stop` can clean up a half-started pair

  local deadline=$(($(date +%s) + START_TIMEOUT)) temporal_up="" ferretdb_up=""
  while [ -z "$temporal_up" ] || [ -z "$ferretdb_up" ]; do
    alive "$TEMPORAL_PID" || start_failed "the Temporal dev server exited during start" "$DATA_DIR/temporal.log"
    alive "$FERRETDB_PID" || start_failed "FerretDB exited during start" "$DATA_DIR/ferretdb.log"
    if [ -z "$ferretdb_up" ] && ferretdb_ready "127.0.0.1:$FERRETDB_PORT"; then
      ferretdb_up=$((($(date +%s%N) - started) / 1000000))
      log "FerretDB $FERRETDB_VERSION answers ping on 127.0.0.1:$FERRETDB_PORT after ${ferretdb_up} ms"
    fi
    if [ -z "$temporal_up" ] && temporal_ready "127.0.0.1:$TEMPORAL_PORT"; then
      temporal_up=$((($(date +%s%N) - started) / 1000000))
      log "Temporal $TEMPORAL_VERSION dev server answers on 127.0.0.1:$TEMPORAL_PORT after ${temporal_up} ms (UI http://127.0.0.1:$UI_PORT)"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      [ -n "$temporal_up" ] || start_failed "the Temporal dev server did not answer within ${START_TIMEOUT}s" "$DATA_DIR/temporal.log"
      start_failed "FerretDB did not answer within ${START_TIMEOUT}s" "$DATA_DIR/ferretdb.log"
    fi
    [ -n "$temporal_up" ] && [ -n "$ferretdb_up" ] || sleep 0.2
  done
  log "state: $STATE_FILE, data and logs: $DATA_DIR"
  cmd_env
}

# Signals a pid only while it still runs one of our engine binaries (pids get reused).
stop_pid() {
  local pid=$1 name=$2 i
  alive "$pid" || return 0
  ps -p "$pid" -o args= 2>/dev/null | grep -qF "$ENGINES_BIN_DIR/$name" || {
    log "pid $pid is no longer $name; not signalling it"
    return 0
  }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    alive "$pid" || return 0
    sleep 0.1
  done
  log "$name (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
  if ! read_state; then
    log "nothing to stop (no state file $STATE_FILE)"
    return 0
  fi
  stop_pid "$TEMPORAL_PID" temporal
  stop_pid "$FERRETDB_PID" ferretdb
  case $ENGINES_DATA_DIR in
  "${TMPDIR:-/tmp}"/geofabric-engines.*) rm -rf "$ENGINES_DATA_DIR" ;;
  *) log "not deleting unexpected data dir '$ENGINES_DATA_DIR'" ;;
  esac
  rm -f "$STATE_FILE"
  log "stopped"
}

case ${1:-} in
install) cmd_install "${2:-all}" ;;
start) cmd_start ;;
env) cmd_env ;;
stop) cmd_stop ;;
*)
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
