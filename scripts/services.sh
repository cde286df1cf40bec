#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1; start them if they are installed but
# down (the commands of this machine image), install them with apt if missing.
#   --statements  the benchmarks' server: also load pg_stat_statements (their statement
#                 groups; ALTER SYSTEM and a restart of PostgreSQL, once; never while tests
#                 run), and autovacuum on, PostgreSQL's default, which some CI images turn
#                 off (a crawl's tables then never get statistics, and the planner guesses).
set -euo pipefail
statements=false
[ "${1:-}" = "--statements" ] && statements=true

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! command -v pg_ctlcluster >/dev/null || ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null
  fi
fi
if ! pg_up; then
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  [ -n "$version" ] && pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 30); do pg_up && break; sleep 1; done
fi
if ! redis_up; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 30); do redis_up && break; sleep 1; done
fi
pg_up || { echo "PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
if $statements && ! psql -qtA -h 127.0.0.1 -U postgres -c "SHOW shared_preload_libraries" | grep -q pg_stat_statements; then
  psql -q -h 127.0.0.1 -U postgres -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main restart
  for _ in $(seq 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL did not come back after loading pg_stat_statements" >&2; exit 1; }
fi
if $statements && [ "$(psql -qtA -h 127.0.0.1 -U postgres -c "SHOW autovacuum")" != on ]; then
  psql -q -h 127.0.0.1 -U postgres -c "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" >/dev/null
fi
redis_up || { echo "Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
echo "PostgreSQL and Redis are up"
