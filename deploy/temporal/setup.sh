#!/bin/sh
# One-shot Temporal setup for deploy/compose.yaml, run in the temporalio/admin-tools image. Idempotent: every
# `docker compose up` runs it again and it changes nothing that is already in place.
#
#   setup.sh schema      before the server starts: the PostgreSQL databases and their schemas (created, or
#                        updated to the versions this admin-tools release ships)
#   setup.sh namespace   once the server answers: the namespace and the custom search attributes that
#                        Geofabric's workflows set (workflows/search-attributes.ts; scripts/engines.sh gives
#                        the dev server the same list)
#
# Env: POSTGRES_SEEDS, DB_PORT, POSTGRES_USER, SQL_PASSWORD (schema); TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
# TEMPORAL_RETENTION (namespace).
set -eu

SEARCH_ATTRIBUTES="H3Cell=Keyword Requester=Keyword JobStatus=Keyword StepTypes=KeywordList Epoch=Int"

log() { printf 'temporal-setup: %s\n' "$*"; }

wait_for_port() {
  host=$1 port=$2 tries=0
  until nc -z -w 2 "$host" "$port"; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || {
      log "$host:$port did not open within 120 s"
      exit 1
    }
    sleep 2
  done
}

schema() {
  : "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
  port=${DB_PORT:-5432}
  wait_for_port "$POSTGRES_SEEDS" "$port"
  for db in temporal temporal_visibility; do
    case $db in
    temporal) dir=/etc/temporal/schema/postgresql/v12/temporal/versioned ;;
    *) dir=/etc/temporal/schema/postgresql/v12/visibility/versioned ;;
    esac
    set -- --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" --db "$db"
    log "database $db: create (no-op when present), base schema, update to the shipped version"
    temporal-sql-tool "$@" create
    temporal-sql-tool "$@" setup-schema -v 0.0
    temporal-sql-tool "$@" update-schema -d "$dir"
  done
  log "schemas ready"
}

namespace() {
  address=${TEMPORAL_ADDRESS:-temporal:7233}
  ns=${TEMPORAL_NAMESPACE:-default}
  tries=0
  until temporal operator cluster health --address "$address" > /dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || {
      log "Temporal at $address is not healthy after 120 s"
      exit 1
    }
    sleep 2
  done
  if temporal operator namespace describe --address "$address" --namespace "$ns" > /dev/null 2>&1; then
    log "namespace $ns: present"
  else
    log "namespace $ns: creating (retention ${TEMPORAL_RETENTION:-168h})"
    temporal operator namespace create --address "$address" --namespace "$ns" --retention "${TEMPORAL_RETENTION:-168h}"
  fi
  existing=$(temporal operator search-attribute list --address "$address" --namespace "$ns" -o json)
  for pair in $SEARCH_ATTRIBUTES; do
    name=${pair%%=*} type=${pair#*=}
    if printf '%s' "$existing" | grep -q "\"$name\""; then
      log "search attribute $name: present"
    else
      log "search attribute $name ($type): creating"
      temporal operator search-attribute create --address "$address" --namespace "$ns" --name "$name" --type "$type"
    fi
  done
  log "namespace $ns ready"
}

case ${1:-} in
schema) schema ;;
namespace) namespace ;;
*)
  echo "usage: $0 schema|namespace" >&2
  exit 2
  ;;
esac
