#!/bin/sh
# The tray benchmark (benches/tray_idle.rs) measuring this tree's release build and, in the same
# run with the same bench, an earlier revision's release build — by default 254c5a7, main before
# the at-rest work (the app as it was when the scheduler still looked every 30 s; that revision
# only added the window's remembered place and the bench's own waits). Both are built the way the
# packages are (a release build with Tauri's custom protocol: fat LTO) and measured one after the
# other on this machine, under one Xvfb. Prints both tables.
#
#   scripts/bench-tray.sh [BASELINE_REV]
#
# The baseline must log "the window closed" when its window goes (254c5a7 and later): the bench
# waits on that word. Needs what scripts/test.sh installs (Xvfb, python3-xlib, dbus). Its X display
# is looked for from :150 up, away from the test suite's, so the two can run side by side.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
need_cargo
BASE=${1:-254c5a7}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OLD="$TARGET/bench-baseline-$BASE"

# Extracted once per revision: extracting again would make every file new to cargo, and the
# baseline's fat-LTO build would start over.
REV=$(git rev-parse "$BASE")
if [ "$(cat "$OLD/src.rev" 2>/dev/null)" != "$REV" ]; then
  echo "==> the baseline's source ($BASE) in $OLD/src"
  rm -rf "$OLD/src"
  mkdir -p "$OLD/src"
  git archive "$BASE" | tar -x -C "$OLD/src"
  echo "$REV" > "$OLD/src.rev"
fi

release() { # DIR TARGET_DIR: the release app, as packaged
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo build --release --locked --features tauri/custom-protocol --bin nightshift)
}
# Each release binary is copied aside as soon as it is built: `cargo bench` builds the app too,
# with the bench profile (no LTO, not stripped), into the same target/release/nightshift.
echo "==> building the baseline ($BASE)"
release "$OLD/src" "$OLD/target"
cp "$OLD/target/release/nightshift" "$OLD/nightshift"
echo "==> building this tree"
release "$ROOT" "$TARGET"
mkdir -p "$TARGET/bench-tray"
cp "$TARGET/release/nightshift" "$TARGET/bench-tray/nightshift"
cargo bench --locked -p nightshift --bench tray_idle --no-run

run() { # APP_BIN LABEL
  echo
  echo "==> tray bench: $2"
  NIGHTSHIFT_APP_BIN="$1" xvfb-run -a -n 150 -s "-screen 0 1280x800x24" cargo bench --locked -p nightshift --bench tray_idle
}
run "$OLD/nightshift" "baseline $BASE (main before the at-rest work)"
run "$TARGET/bench-tray/nightshift" "this tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
