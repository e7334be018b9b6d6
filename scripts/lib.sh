# Shared helpers for scripts/start.sh and scripts/test.sh (sourced, not run).

# Run as root, or through sudo when available.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    echo "error: need root to run: $*  (install sudo or run as root)" >&2; return 1; fi
}

# Install the named Debian/Ubuntu packages that are not installed yet (idempotent, quiet when
# nothing is missing). On other systems, say what is needed and go on.
ensure_apt_packages() {
  missing=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: not a Debian/Ubuntu system; make sure these (or their equivalents) are installed:$missing" >&2
    return 0
  fi
  echo "==> installing system packages:$missing"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# What building the Tauri app needs on Linux.
BUILD_PACKAGES="libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libssl-dev libxdo-dev build-essential pkg-config file"
# What running the app needs besides its libraries: bubblewrap, the sandbox runs go in.
RUN_PACKAGES="bubblewrap"
# What the test suite's real services need: X server, D-Bus, keyring, WebDriver, screenshots.
TEST_PACKAGES="xvfb xauth webkit2gtk-driver x11-utils imagemagick dbus dbus-x11 gnome-keyring libsecret-tools python3-dbus python3-gi python3-xlib chromium chromium-driver libglib2.0-bin openssh-server openssh-client nginx-light openssl gdb man-db python3-venv"

# What checking the packages needs (scripts/package.sh builds them without these): the Debian and
# RPM linters, and rpm to read an .rpm's contents.
PACKAGE_CHECK_PACKAGES="lintian rpmlint rpm"

# The tauri CLI (Tauri's own bundler), pinned in packaging/package.json: a prebuilt binary from npm.
ensure_tauri_cli() {
  command -v npm >/dev/null 2>&1 || ensure_apt_packages nodejs npm
  want=$(sha256sum packaging/package-lock.json | cut -d' ' -f1)
  have=$(cat packaging/node_modules/.nightshift-lock 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    (cd packaging && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > packaging/node_modules/.nightshift-lock
  fi
  TAURI_CLI="$(pwd)/packaging/node_modules/.bin/tauri"
}

need_cargo() {
  if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo (Rust) is not installed. Install it from https://rustup.rs, then run this again." >&2
    exit 2
  fi
}
