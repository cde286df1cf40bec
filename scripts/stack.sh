#!/usr/bin/env bash
# Start the whole stack on this machine (web + API + dashboard, dispatcher, fetch worker,
# beat, Flower) with honcho, after migrating. A process that dies is started again by
# scripts/respawn.sh (see why there), the others run on; Ctrl-C stops every process.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
: "${DATABASE_URL:?set DATABASE_URL (postgres://...)}"
: "${CELERY_BROKER_URL:?set CELERY_BROKER_URL (redis://...)}"
python manage.py migrate -v0
if [ -z "${FLOWER_BASIC_AUTH:-}" ]; then
  # Flower can revoke tasks and shut workers down: never start it open.
  FLOWER_BASIC_AUTH="admin:$(python -c 'import secrets; print(secrets.token_urlsafe(12))')"
  export FLOWER_BASIC_AUTH
  echo "Flower login for this run: ${FLOWER_BASIC_AUTH} (set FLOWER_BASIC_AUTH to choose one)"
fi
echo "web http://${WEB_BIND:-127.0.0.1:8000}/  dashboard /dashboard/  admin /admin/  flower http://${FLOWER_ADDRESS:-127.0.0.1}:${FLOWER_PORT:-5555}/"
exec honcho start -f Procfile
