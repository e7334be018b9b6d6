#!/bin/sh
# Build Nightshift's Linux packages into dist/ with Tauri's own bundler: a .deb and an .rpm, each
# holding the tray app (/usr/bin/nightshift), the CLI (/usr/bin/nightshiftctl), their manual pages,
# the CLI's bash, zsh and fish completions, a .desktop entry, the icons in every size and the
# declared dependencies (WebKitGTK, GTK, AppIndicator).
#
#   scripts/package.sh                      release build + packages of the version in tauri.conf.json
#   scripts/package.sh --rebundle VERSION   the same binaries packaged again as VERSION into
#                                           dist/VERSION/ (no rebuild; used to test upgrades)
#
# Needs what scripts/start.sh needs plus npm (for the pinned tauri CLI; installed if missing).
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_cargo
[ "$(uname -s)" = Linux ] || { echo "error: scripts/package.sh builds Linux packages; see docs/packaging.md for macOS and Windows" >&2; exit 2; }
ensure_apt_packages $BUILD_PACKAGES
ensure_tauri_cli
TARGET=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BUNDLE="$TARGET/release/bundle"

if [ "${1:-}" = "--rebundle" ]; then
  version=${2:?--rebundle needs a version}
  out="dist/$version"
  echo "==> packaging the built binaries again as $version"
  rm -rf "$BUNDLE/deb" "$BUNDLE/rpm"
  "$TAURI_CLI" bundle --bundles deb,rpm --ci --config "{\"version\":\"$version\"}"
else
  out="dist"
  echo "==> release build: nightshiftctl"
  cargo build --release --locked -p nightshiftctl
  mkdir -p dist/stage
  cp "$TARGET/release/nightshiftctl" dist/stage/nightshiftctl
  gzip -9n -c packaging/debian/changelog > dist/stage/changelog.gz
  # Manual pages and shell completions from the CLI's own definition (never written by hand).
  rm -rf dist/stage/man dist/stage/completions
  dist/stage/nightshiftctl manpages dist/stage/man >/dev/null
  gzip -9n dist/stage/man/*.1
  mkdir -p dist/stage/completions
  dist/stage/nightshiftctl completions bash > dist/stage/completions/nightshiftctl
  dist/stage/nightshiftctl completions zsh > dist/stage/completions/_nightshiftctl
  dist/stage/nightshiftctl completions fish > dist/stage/completions/nightshiftctl.fish
  echo "==> release build and packages: nightshift (.deb, .rpm)"
  rm -rf "$BUNDLE/deb" "$BUNDLE/rpm"
  "$TAURI_CLI" build --bundles deb,rpm --ci -- --locked
fi
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.rpm
cp "$BUNDLE"/deb/*.deb "$BUNDLE"/rpm/*.rpm "$out"/
# Tauri writes the .deb's files gzip-compressed; xz (which every dpkg reads) makes it about a
# third smaller. Same contents, rebuilt with Debian's own tool.
for deb in "$out"/*.deb; do
  work=$(mktemp -d)
  dpkg-deb -R "$deb" "$work/pkg"
  dpkg-deb --root-owner-group -Zxz -z9 -b "$work/pkg" "$deb" >/dev/null
  rm -rf "$work"
done
echo "==> packages in $out:"
ls -l "$out"/*.deb "$out"/*.rpm
