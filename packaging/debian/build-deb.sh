#!/usr/bin/env bash
# Builds coresearch's Debian package from a built binary, with dpkg-deb.
#
#   packaging/debian/build-deb.sh [BINARY] [OUTPUT_DIRECTORY]
#
# BINARY defaults to target/release/coresearch (build it first with
# `cargo build --release --bin coresearch`), OUTPUT_DIRECTORY to target/debian. Prints the
# path of the package it wrote: coresearch_<version>_<architecture>.deb.
#
# The package holds:
#   /usr/bin/coresearch                  the binary (debug sections stripped)
#   /etc/coresearch/config.toml          the configuration (a conffile: kept on upgrade)
#   /lib/systemd/system/coresearch.service   Type=notify, watchdog, limits, sandboxing
#   /usr/share/doc/coresearch/           the README and the copyright notice
# and its scripts create the `coresearch` system user, /var/lib/coresearch and
# /etc/coresearch/coresearch.env (root only, with a generated master key).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
binary="${1:-$repository/target/release/coresearch}"
output="${2:-$repository/target/debian}"

if [ ! -x "$binary" ]; then
    echo "build-deb.sh: no executable at $binary (cargo build --release --bin coresearch)" >&2
    exit 1
fi
for tool in dpkg-deb dpkg; do
    if ! command -v "$tool" >/dev/null; then
        echo "build-deb.sh: $tool is needed (Debian's dpkg package)" >&2
        exit 1
    fi
done

version="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' "$repository/Cargo.toml")"
architecture="$(dpkg --print-architecture)"
if [ -z "$version" ]; then
    echo "build-deb.sh: no version in the [workspace.package] of Cargo.toml" >&2
    exit 1
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
install -d -m 0755 "$stage/DEBIAN" "$stage/usr/bin" "$stage/etc/coresearch" \
    "$stage/lib/systemd/system" "$stage/usr/share/doc/coresearch"
install -m 0755 "$binary" "$stage/usr/bin/coresearch"
if command -v strip >/dev/null; then
    strip --strip-debug "$stage/usr/bin/coresearch"
fi
install -m 0644 "$here/config.toml" "$stage/etc/coresearch/config.toml"
install -m 0644 "$here/coresearch.service" "$stage/lib/systemd/system/coresearch.service"
install -m 0644 "$repository/README.md" "$stage/usr/share/doc/coresearch/README.md"
printf 'coresearch\nLicense: MIT OR Apache-2.0\n' > "$stage/usr/share/doc/coresearch/copyright"
chmod 0644 "$stage/usr/share/doc/coresearch/copyright"
for script in postinst prerm postrm; do
    install -m 0755 "$here/$script" "$stage/DEBIAN/$script"
done
echo "/etc/coresearch/config.toml" > "$stage/DEBIAN/conffiles"
installed_kib="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: coresearch
Version: $version
Architecture: $architecture
Maintainer: coresearch developers <coresearch@localhost>
Section: database
Priority: optional
Installed-Size: $installed_kib
Depends: libc6, passwd
Homepage: https://github.com/coresearch/coresearch
Description: search server that speaks the Meilisearch HTTP API
 coresearch serves full-text, faceted, geo and vector search over the
 Meilisearch HTTP API, one thread per core, on its own crash-safe page store.
 The package runs it as a systemd service (Type=notify) as the coresearch user,
 with its data in /var/lib/coresearch.
CONTROL

mkdir -p "$output"
package="$output/coresearch_${version}_${architecture}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$package" >/dev/null
echo "$package"
