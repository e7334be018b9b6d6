#!/bin/sh
# Run the whole Nightshift test suite with real parts: the real Claude Code CLI (npm), a real
# SQLite database, real processes, the real app under Xvfb, a private D-Bus session with a
# gnome-keyring, and a benchmark smoke run. Installs what it needs first (idempotent).
#   scripts/test.sh            everything
#   scripts/test.sh -p nightshift-core   extra arguments go to `cargo test`
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
need_cargo

echo "==> system packages"
ensure_apt_packages $BUILD_PACKAGES $TEST_PACKAGES

echo "==> npm tools for the tests (tests/agents-cli: Claude Code, Codex, Gemini CLI; tests/typecheck: TypeScript)"
command -v npm >/dev/null 2>&1 || ensure_apt_packages nodejs npm
# Reinstall whenever the pinned versions (the lock file) changed since the last install.
for dir in tests/agents-cli tests/typecheck; do
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  have=$(cat "$dir/node_modules/.nightshift-lock" 2>/dev/null || true)
  if [ "$have" != "$want" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dir/node_modules/.nightshift-lock"
  fi
done
for cli in claude codex gemini; do printf '%s: ' "$cli"; tests/agents-cli/node_modules/.bin/$cli --version </dev/null; done
printf 'tsc: '; tests/typecheck/node_modules/.bin/tsc --version

echo "==> tauri-driver (WebDriver for the real app in WebKitGTK)"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --locked --quiet
tauri-driver --help >/dev/null

# Private services: each run gets its own session bus, keyring and X server, torn down at exit.
echo "==> packages: release build, .deb and .rpm into dist/ (scripts/package.sh), and the same binaries as a higher version for the upgrade test"
ensure_apt_packages $PACKAGE_CHECK_PACKAGES
scripts/package.sh
version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' tauri.conf.json)
scripts/package.sh --rebundle "$(echo "$version" | awk -F. '{ printf "%d.%d.%d", $1, $2, $3 + 1 }')"
export NIGHTSHIFT_PACKAGES="$ROOT/dist"

RUNTIME=$(mktemp -d "${TMPDIR:-/tmp}/nightshift-test.XXXXXX")
mkdir -p "$RUNTIME/xdg-data" "$RUNTIME/run" "$ROOT/tests/artifacts"
chmod 700 "$RUNTIME/run"
export XDG_DATA_HOME="$RUNTIME/xdg-data" XDG_RUNTIME_DIR="$RUNTIME/run"
cleanup() { [ -n "${XVFB_PID:-}" ] && kill "$XVFB_PID" 2>/dev/null; rm -rf "$RUNTIME"; }
trap cleanup EXIT INT TERM

if [ -z "${DISPLAY:-}" ]; then
  echo "==> starting Xvfb"
  for n in $(seq 90 120); do
    [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] && continue
    Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >"$RUNTIME/xvfb.log" 2>&1 &
    XVFB_PID=$!
    export DISPLAY=":$n"
    break
  done
  i=0; until xdpyinfo >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 100 ] && { echo "error: Xvfb did not start" >&2; cat "$RUNTIME/xvfb.log" >&2; exit 1; }; sleep 0.1; done
fi

echo "==> cargo test (inside a private D-Bus session with gnome-keyring)"
export NIGHTSHIFT_ARTIFACTS="$ROOT/tests/artifacts"
dbus-run-session -- sh -c '
  set -e
  printf %s ci-keyring-pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 || true
  gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1 || true
  cargo test --workspace "$@"
' nightshift-tests "$@"

echo "==> benchmark smoke run (NIGHTSHIFT_BENCH_QUICK=1; full numbers: cargo bench -p nightshift-core -p nightshiftctl)"
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshift-core --bench engine
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench daemon
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench settle
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench burst
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench history
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench worktree
NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench insight
cargo bench -p nightshiftctl --bench hostile
NIGHTSHIFT_BENCH_RUNS=3 cargo bench -p nightshiftctl --bench remote
