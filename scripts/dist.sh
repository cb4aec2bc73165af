#!/usr/bin/env bash
# `just dist`: the release archive, its .sha256, sha256.sum, source.tar.gz and
# mur-installer.sh in target/distrib, made by cargo-dist on this machine.
# With no arguments it builds the static musl archive (the one every Linux x86_64
# host can run, and the one the installer falls back to); pass dist's own
# arguments to choose, e.g. `just dist --target x86_64-unknown-linux-gnu`.
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$ROOT"
say() { printf '[dist] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

WANT=$(sed -n 's/^cargo-dist-version = "\(.*\)"/\1/p' dist-workspace.toml)
HAVE=$(dist --version 2>/dev/null | awk '{print $2}') ||
    die "dist not found; install it with: pip install astral-dev-toolchain-cargo-dist==$WANT"
[ "$HAVE" = "$WANT" ] ||
    die "dist $HAVE found, dist-workspace.toml pins $WANT: pip install astral-dev-toolchain-cargo-dist==$WANT"

# dist does not pass --locked to cargo: refuse a stale Cargo.lock here.
cargo metadata --locked --format-version 1 >/dev/null || die "Cargo.lock is out of date with Cargo.toml"

unset RUSTFLAGS
. scripts/build-env.sh
rm -rf target/distrib
# The source tree built (tracked files, uncommitted changes included), so that
# `just repro` can hold this binary to its own when both are of the same source.
REV=$(git stash create 2>/dev/null || true)
SOURCE_TREE=$(git rev-parse "${REV:-HEAD}^{tree}")
START=$(date +%s)
if [ "$#" = 0 ]; then set -- --target x86_64-unknown-linux-musl; fi
dist build --artifacts=all "$@"
say "dist build took $(($(date +%s) - START))s"

cd target/distrib
sha256sum -c --quiet sha256.sum || die "sha256.sum does not match the files"
echo "$SOURCE_TREE" >../distrib-source-tree
for archive in mur-*.tar.xz; do
    sum=$(cut -d' ' -f1 "$archive.sha256")
    grep -q "_checksum_value=\"$sum\"" mur-installer.sh || die "mur-installer.sh lacks $archive's sha256"
    say "$archive sha256 $sum (in mur-installer.sh)"
    bin=${archive%.tar.xz}/mur
    [ -f "$bin" ] && say "  its mur binary: sha256 $(sha256sum "$bin" | cut -d' ' -f1)"
done
