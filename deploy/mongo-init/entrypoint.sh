#!/bin/bash
# Entry point of the `mongo` service in deploy/compose.yaml. Before handing over to the image's own
# entrypoint (which creates the root user on the first start and drops to the `mongodb` user), it makes sure
# two secrets exist in the config volume, generated once and kept across restarts and upgrades:
#
#   /data/configdb/replica.key     the replica set's key file: with authentication on, members authenticate
#                                  each other with it, even in a set of one (a member added later needs a copy)
#   /data/configdb/root-password   the root user's password, so it never sits in .env, where every Geofabric
#                                  container could read it. Read it with:
#                                    docker compose exec mongo cat /data/configdb/root-password
#
# Back up the mongo-config volume with mongo-data: the root user in the data matches this password file.
set -euo pipefail

dir=/data/configdb
umask 077
if [ ! -s "$dir/replica.key" ]; then
  # 756 random bytes as base64: 1008 characters, all in the alphabet MongoDB accepts in a key file.
  head -c 756 /dev/urandom | base64 -w 0 > "$dir/replica.key.new"
  mv "$dir/replica.key.new" "$dir/replica.key"
  echo "mongo-init: generated $dir/replica.key"
fi
if [ ! -s "$dir/root-password" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/root-password.new"
  mv "$dir/root-password.new" "$dir/root-password"
  echo "mongo-init: generated the root password into $dir/root-password"
fi
chown mongodb:mongodb "$dir/replica.key" "$dir/root-password"
chmod 400 "$dir/replica.key" "$dir/root-password"

# Read by the image's entrypoint, which creates this user only while the data folder is empty.
export MONGO_INITDB_ROOT_USERNAME=root
MONGO_INITDB_ROOT_PASSWORD=$(cat "$dir/root-password")
export MONGO_INITDB_ROOT_PASSWORD

exec docker-entrypoint.sh "$@"
