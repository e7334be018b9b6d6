#!/bin/sh
# The README's pictures of the real app, taken again: the window on first launch
# (docs/images/window.png) and the tray with its menu open (docs/images/tray-menu.png).
#
# It runs the debug build of the app in a throwaway home under its own Xvfb, with `trayer` as
# the panel (an XEmbed system tray: with no StatusNotifier host, the app's tray icon falls back to
# it), runs the example routine once so the menu shows its last status, clicks the icon and
# points at Run now with xdotool, and crops what the screen shows. Needs a display server nothing
# else uses (:77) and installs trayer and xdotool if missing (Debian/Ubuntu).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
ensure_apt_packages $BUILD_PACKAGES xvfb xauth x11-utils imagemagick dbus dbus-x11 trayer xdotool
cargo build --quiet --bin nightshift -p nightshift --bin nightshiftctl -p nightshiftctl
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"

WORK=$(mktemp -d)
DISPLAY_NUMBER=:77
cleanup() {
  kill "$APP" "$TRAYER" "$XVFB" 2>/dev/null || true
  [ -n "${DBUS_SESSION_BUS_PID:-}" ] && kill "$DBUS_SESSION_BUS_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
APP="" TRAYER="" XVFB=""
trap cleanup EXIT

Xvfb "$DISPLAY_NUMBER" -screen 0 1024x700x24 >/dev/null 2>&1 & XVFB=$!
export DISPLAY="$DISPLAY_NUMBER"
sleep 1
eval "$(dbus-launch --sh-syntax)"
trayer --edge top --align right --widthtype request --height 28 --tint 0x2b2b3a --transparent true --alpha 0 --SetDockType true >/dev/null 2>&1 & TRAYER=$!
sleep 1

export NIGHTSHIFT_HOME="$WORK/home"
"$BIN/nightshiftctl" init >/dev/null
"$BIN/nightshiftctl" run hello --wait >/dev/null 2>&1
"$BIN/nightshift" >"$WORK/app.log" 2>&1 & APP=$!

# The first launch opens the window; wait for it and for the icon in the panel.
for _ in $(seq 1 60); do
  xwininfo -root -tree | grep -q '"Nightshift": ("nightshift"' && xwininfo -root -tree | grep -q 'tray-icon tray app nightshift' && break
  sleep 0.5
done
sleep 3  # the window's first paint
import -window root "$WORK/first.png"
convert "$WORK/first.png" -crop 920x640+0+0 +repage docs/images/window.png

# The tray icon sits at the panel's right end: click it, then point at Run now.
xdotool mousemove 1010 14 click 1
sleep 1.5
xdotool mousemove 930 43
sleep 1.5
import -window root "$WORK/menu.png"
convert "$WORK/menu.png" -crop 440x175+584+0 +repage docs/images/tray-menu.png
echo "wrote docs/images/window.png and docs/images/tray-menu.png"
