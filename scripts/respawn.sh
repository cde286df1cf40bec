#!/usr/bin/env bash
# Run a command and start it again whenever it exits, until this script is told to stop.
# Every line of the Procfile runs under it (`make stack`, scripts/stack.sh).
#
# Why: honcho stops every process as soon as one exits, so a worker killed by the OOM killer
# took the web UI and the dashboard down with it. Why this and not supervisord (the
# maintained tool with autorestart): supervisord needs its own INI beside the Procfile (two
# process lists to keep in step, while the Procfile is also what docs/deploy mirrors),
# prints the processes' output without honcho's per-process prefixes, and marks a process
# FATAL after a few quick failures, so a database that is down for a minute at start
# would leave the workers dead for good. Here the Procfile stays the one list, honcho keeps
# the output readable, and a process is retried for as long as the stack runs.
#
# Restarts back off: 1 s, doubling while the command keeps dying within RESPAWN_STABLE_SECONDS
# of its start, up to RESPAWN_MAX_DELAY; a run that lasted longer starts the back-off over.
# SIGTERM or SIGINT (honcho's stop, Ctrl-C) stops the command, and this script exits with
# the command's status instead of restarting it.
set -u

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 64
fi

stable=${RESPAWN_STABLE_SECONDS:-10}
max_delay=${RESPAWN_MAX_DELAY:-30}
delay=1
stopping=""
child=""

stop() {
  stopping=1
  # honcho signals the whole process group, so the command usually has SIGTERM already; a
  # second one is harmless to gunicorn, Celery, beat, Flower and the dispatcher, and needed
  # when only this script was signalled. SIGTERM for Ctrl-C too: a command started in the
  # background of a script ignores SIGINT (bash does that without job control).
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi
}
trap stop TERM INT

while :; do
  started=$SECONDS
  "$@" &
  child=$!
  # `wait` returns early when a trapped signal arrives: wait again until the command is gone.
  while :; do
    wait "$child"
    status=$?
    kill -0 "$child" 2>/dev/null || break
  done
  child=""
  if [ -n "$stopping" ]; then
    exit "$status"
  fi
  ran=$((SECONDS - started))
  if [ "$ran" -ge "$stable" ]; then delay=1; fi
  if [ "$status" -gt 128 ]; then how="was killed by signal $((status - 128))"; else how="exited with status $status"; fi
  echo "respawn: $1 $how after ${ran} s; starting it again in ${delay} s" >&2
  sleep "$delay" &
  wait $! 2>/dev/null
  if [ -n "$stopping" ]; then
    kill $! 2>/dev/null
    exit "$status"
  fi
  delay=$((delay * 2 > max_delay ? max_delay : delay * 2))
done
