#!/bin/sh
# Start the Nightshift tray app. On a fresh Debian/Ubuntu machine this first installs the system
# packages Tauri needs; the first launch creates a home (NIGHTSHIFT_HOME, or the platform's
# config/data dirs) with an example routine you can run at once.
#   scripts/start.sh [--release]
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_cargo
[ "$(uname -s)" = Linux ] && ensure_apt_packages $BUILD_PACKAGES $RUN_PACKAGES
if [ "$(uname -s)" = Linux ] && [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "note: no display found (DISPLAY/WAYLAND_DISPLAY unset); the tray app needs a desktop session." >&2
  echo "      On a server use the headless CLI instead: cargo run -p nightshiftctl -- init && cargo run -p nightshiftctl -- run hello --wait" >&2
fi
exec cargo run --bin nightshift "$@"
