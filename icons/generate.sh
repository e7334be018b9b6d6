#!/bin/sh
# Regenerate the PNG icons from the SVG sources in icons/src (needs rsvg-convert: apt install librsvg2-bin,
# or brew install librsvg). The PNGs are committed so building never needs this tool.
set -eu
cd "$(dirname "$0")"
for size in 32 64 128 256 512; do
  rsvg-convert -w $size -h $size src/app.svg -o ${size}x${size}.png
done
cp 512x512.png icon.png
rsvg-convert -w 256 -h 256 src/app.svg -o notification.png
for state in idle running attention; do
  rsvg-convert -w 64 -h 64 src/tray-$state.svg -o tray-$state.png
done
# macOS (.icns) and Windows (.ico) icons from the largest PNG, with the pinned tauri CLI
# (scripts/package.sh installs it).
if [ -x ../packaging/node_modules/.bin/tauri ]; then
  out=$(mktemp -d)
  ../packaging/node_modules/.bin/tauri icon 512x512.png -o "$out" >/dev/null
  cp "$out/icon.icns" "$out/icon.ico" .
  rm -rf "$out"
fi
echo "icons regenerated in $(pwd)"
