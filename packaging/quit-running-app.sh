#!/bin/sh
# Before the package's files are replaced or removed: ask every running Nightshift app to quit, as
# its tray's Quit would (SIGTERM; the app exits cleanly on it). Its runs keep going in their own
# process groups and the next start of the app picks them up — nothing is lost. The user's
# routines, database and keychain items are not touched by installing, upgrading or removing.
set -e
pids=$(pidof nightshift 2>/dev/null || true)
[ -n "$pids" ] || exit 0
echo "Asking the running Nightshift to quit (pid $pids)…"
kill -TERM $pids 2>/dev/null || true
i=0
while [ $i -lt 50 ]; do
  alive=""
  for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  [ -z "$alive" ] && exit 0
  i=$((i + 1))
  sleep 0.2
done
echo "Nightshift did not quit within 10 s; it keeps running the old version until it is restarted." >&2
exit 0
