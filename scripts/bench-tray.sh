#!/bin/sh
# The tray benchmark (benches/tray_idle.rs) of this tree's release build, side by side with an
# earlier design's own tray benchmark in the same run — by default d4813b5, the last two-binary
# design (a resident without WebKit and a window process). Both are built the same way (a release
# build with Tauri's custom protocol, as the packages are) and measured one after the other on this
# machine, under one Xvfb. Prints both tables.
#
#   scripts/bench-tray.sh [BASELINE_REV]
#
# Needs what scripts/test.sh installs (Xvfb, python3-xlib, dbus, gnome-keyring not required).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
need_cargo
BASE=${1:-d4813b5}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OLD="$TARGET/bench-baseline-$BASE"

echo "==> the baseline's source ($BASE) in $OLD/src"
rm -rf "$OLD/src"
mkdir -p "$OLD/src"
git archive "$BASE" | tar -x -C "$OLD/src"

build() { # DIR TARGET_DIR: the release app and the tray bench
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo build --release --locked --features tauri/custom-protocol --bins \
    && CARGO_TARGET_DIR="$2" cargo bench --locked -p nightshift --bench tray_idle --no-run)
}
echo "==> building the baseline ($BASE)"
build "$OLD/src" "$OLD/target"
echo "==> building this tree"
build "$ROOT" "$TARGET"

run() { # DIR TARGET_DIR LABEL
  echo
  echo "==> tray bench: $3"
  (cd "$1" && NIGHTSHIFT_APP_BIN="$2/release/nightshift" CARGO_TARGET_DIR="$2" xvfb-run -a -s "-screen 0 1280x800x24" \
    cargo bench --locked -p nightshift --bench tray_idle)
}
run "$OLD/src" "$OLD/target" "baseline $BASE (two binaries: resident + window process)"
run "$ROOT" "$TARGET" "this tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
