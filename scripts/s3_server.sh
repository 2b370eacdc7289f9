#!/usr/bin/env bash
# A local S3 server for tests and benchmarks: Ceph's radosgw on loopback,
# backed by a single-node cluster (one monitor, one OSD keeping its objects in
# memory), without cephx. radosgw checks SigV4 signatures strictly. Every
# daemon listens on 127.0.0.1 only: the monitor and radosgw by their
# addresses below, the OSD by `public addr` and `cluster addr` (without them
# it binds 0.0.0.0:6800-6803; s3_tests.py's s3_server_loopback_only checks).
#
#   scripts/s3_server.sh start [DIR]   starts it (prints the environment to use)
#   scripts/s3_server.sh stop  [DIR]   stops it and removes DIR
#   scripts/s3_server.sh env   [DIR]   prints the environment of a running one
#
# DIR (default /tmp/iomimic-s3) holds the configuration, logs and pids.
# Environment: IOMIMIC_S3_PORT (default 7480) for the HTTP endpoint,
# IOMIMIC_S3_BUCKET (default iomimic) for the bucket it creates,
# IOMIMIC_S3_MEMORY (default 4G) for the OSD's memory store.
# The user's keys are fixed test keys (not secrets): see `env`.
# Needs the Debian packages ceph-mon, ceph-osd, radosgw (scripts/deps.sh --test).
set -euo pipefail

ACTION="${1:-}"
DIR="${2:-/tmp/iomimic-s3}"
PORT="${IOMIMIC_S3_PORT:-7480}"
MON_PORT="${IOMIMIC_S3_MON_PORT:-$((PORT + 20000))}"
BUCKET="${IOMIMIC_S3_BUCKET:-iomimic}"
MEMORY="${IOMIMIC_S3_MEMORY:-4G}"
ACCESS_KEY="IOMIMICTESTACCESSKEY"
SECRET_KEY="iomimic-test-secret-key-0123456789abcdef"

die() {
  echo "s3_server.sh: $*" >&2
  exit 1
}

print_env() {
  echo "export AWS_ACCESS_KEY_ID=$ACCESS_KEY"
  echo "export AWS_SECRET_ACCESS_KEY=$SECRET_KEY"
  echo "export AWS_REGION=us-east-1"
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$DIR/port" 2>/dev/null || echo "$PORT")"
  echo "export IOMIMIC_S3_BUCKET=$BUCKET"
}

stop() {
  for name in radosgw osd mon; do
    if [ -f "$DIR/$name.pid" ]; then
      local pid
      pid="$(cat "$DIR/$name.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$DIR"
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local seconds="$1" what="$2"
  shift 2
  for _ in $(seq $((seconds * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what did not come up within ${seconds}s (logs in $DIR)"
}

start() {
  for tool in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (install ceph-mon ceph-osd radosgw: scripts/deps.sh --test)"
  done
  if [ -f "$DIR/radosgw.pid" ] && kill -0 "$(cat "$DIR/radosgw.pid")" 2>/dev/null; then
    die "already running in $DIR (stop it first)"
  fi
  stop
  mkdir -p "$DIR/mon" "$DIR/osd" "$DIR/run" "$DIR/log"
  echo "$PORT" >"$DIR/port"
  local fsid
  fsid="$(cat /proc/sys/kernel/random/uuid)"
  cat >"$DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$MON_PORT
public addr = 127.0.0.1
cluster addr = 127.0.0.1
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms mon client mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
ms bind msgr1 = false
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
pid file = $DIR/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
osd objectstore = memstore
memstore device bytes = $(numfmt --from=iec "$MEMORY")
osd crush chooseleaf type = 0
osd data = $DIR/osd
mon data = $DIR/mon
keyring = $DIR/keyring
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $DIR/rgw
rgw dns name = localhost
EOF
  local conf=(-c "$DIR/ceph.conf")
  monmaptool --create --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$fsid" "$DIR/monmap" >/dev/null
  ceph-mon "${conf[@]}" --mkfs -i a --monmap "$DIR/monmap" >"$DIR/log/mkfs-mon.out" 2>&1 ||
    die "ceph-mon --mkfs failed: $(tail -3 "$DIR/log/mkfs-mon.out")"
  ceph-mon "${conf[@]}" -i a
  wait_for 30 "the monitor" ceph "${conf[@]}" --connect-timeout 2 mon stat
  cp "$DIR/run/mon.a.pid" "$DIR/mon.pid"
  local uuid id
  uuid="$(cat /proc/sys/kernel/random/uuid)"
  id="$(ceph "${conf[@]}" osd new "$uuid")"
  ceph-osd "${conf[@]}" -i "$id" --mkfs --osd-uuid "$uuid" >"$DIR/log/mkfs-osd.out" 2>&1 ||
    die "ceph-osd --mkfs failed: $(tail -3 "$DIR/log/mkfs-osd.out")"
  ceph-osd "${conf[@]}" -i "$id" 2>>"$DIR/log/osd.err"
  wait_for 30 "the OSD" sh -c "ceph -c '$DIR/ceph.conf' osd stat | grep -q '1 up'"
  cp "$DIR/run/osd.$id.pid" "$DIR/osd.pid"
  radosgw "${conf[@]}" -n client.rgw
  wait_for 60 "radosgw" curl -sf -o /dev/null "http://127.0.0.1:$PORT/"
  cp "$DIR/run/client.rgw.pid" "$DIR/radosgw.pid"
  radosgw-admin "${conf[@]}" user create --uid=iomimic --display-name=iomimic \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
  # The bucket, with curl's own SigV4 signing (an independent client).
  curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "http://127.0.0.1:$PORT/$BUCKET" >/dev/null ||
    die "creating bucket $BUCKET failed"
  print_env
}

case "$ACTION" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) die "usage: s3_server.sh start|stop|env [DIR]" ;;
esac
