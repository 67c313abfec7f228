#!/usr/bin/env bash
# Start PostgreSQL and Redis when they are not running (the python-svc machine has both installed),
# and install Debian's Chromium for the browser tests when it is missing. Idempotent.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  echo "starting PostgreSQL" >&2
  if command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  for _ in $(seq 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL is not running and could not be started" >&2; exit 1; }
fi

if ! redis_up; then
  echo "starting Redis" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ""
  for _ in $(seq 30); do redis_up && break; sleep 1; done
  redis_up || { echo "Redis is not running and could not be started" >&2; exit 1; }
fi

if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's chromium for the browser tests" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: chromium could not be installed; browser tests will be skipped" >&2
fi
