#!/bin/sh
# Run a command in a private D-Bus session with its own unlocked gnome-keyring (the OS keychain
# Nightshift keeps tokens in), as each test binary runs (scripts/testrun.py): for a benchmark
# that stores a home's token. Its keyring lives in a temporary folder, removed afterwards.
#   scripts/with-keyring.sh COMMAND [ARGS…]
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nightshift-keyring.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/data" "$tmp/run"
chmod 700 "$tmp/run"
XDG_DATA_HOME="$tmp/data" XDG_RUNTIME_DIR="$tmp/run" dbus-run-session -- sh -c '
  printf %s bench-keyring-pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 || true
  gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1 || true
  exec "$@"' sh "$@"
