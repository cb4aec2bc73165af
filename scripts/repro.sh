#!/usr/bin/env bash
# Builds the release musl binary twice and requires the same sha256 (`just repro`).
#
# The two builds differ in everything that should not matter: the folder of the
# checkout, CARGO_HOME, the toolchain's path, the user (the second runs as an
# unused uid through setpriv when we are root), umask, SOURCE_DATE_EPOCH, TZ and
# locale. Each has its own CARGO_TARGET_DIR, so nothing is shared but the
# downloaded crate archives. The binaries are kept in target/repro/ for diffoscope.
#
# MUR_REPRO_NO_REMAP=1 leaves out the path remapping of scripts/build-env.sh, to
# show what it is for (the builds then differ and leak their paths).
#
# What is built: the committed tree plus uncommitted changes to tracked files
# (`git stash create`), with the flags of scripts/build-env.sh and the flags
# `dist build` adds for musl, so the result is the binary dist ships.
set -euo pipefail

TARGET=x86_64-unknown-linux-musl
PROFILE=dist
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
OUT=$ROOT/target/repro
# The flags dist appends to RUSTFLAGS for a musl target (cargo-dist build/cargo.rs).
DIST_MUSL_FLAGS="-Ctarget-feature=+crt-static -Clink-self-contained=yes"

say() { printf '[repro] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v cargo >/dev/null || die "cargo not found"
rustc --print target-list >/dev/null
SYSROOT=$(rustc --print sysroot)
[ -d "$SYSROOT/lib/rustlib/$TARGET" ] ||
    die "the $TARGET target is not installed; run: rustup target add $TARGET"
command -v setpriv >/dev/null || die "setpriv not found (util-linux)"

# Refuse a lockfile that does not match Cargo.toml before anything is built.
(cd "$ROOT" && cargo metadata --locked --format-version 1 >/dev/null) ||
    die "Cargo.lock is out of date with Cargo.toml"

REV=$(git -C "$ROOT" stash create 2>/dev/null || true)
REV=${REV:-$(git -C "$ROOT" rev-parse HEAD)}
EPOCH=$(git -C "$ROOT" log -1 --format=%ct HEAD)

WORK=$(mktemp -d /tmp/mur-repro.XXXXXX)
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
# The second user must be able to reach its own folders inside.
chmod 755 "$WORK"

A=$WORK/a
B=$WORK/b/a-longer-folder-name-for-the-second-build
mkdir -p "$A/src" "$B/src" "$B/home" "$B/cargo-home/registry"
git -C "$ROOT" archive "$REV" | tar -x -C "$A/src"
git -C "$ROOT" archive "$REV" | tar -x -C "$B/src"

# Build A: this user, its CARGO_HOME and toolchain, umask 022, the commit's time.
say "build A: $(id -un) in $A/src, SOURCE_DATE_EPOCH=$EPOCH, umask 022"
(cd "$A/src" && cargo fetch --locked --target "$TARGET" >/dev/null)
START=$(date +%s)
(
    umask 022
    cd "$A/src"
    export CARGO_TARGET_DIR=$A/target SOURCE_DATE_EPOCH=$EPOCH TZ=UTC LC_ALL=C.UTF-8
    unset RUSTFLAGS
    . ./scripts/build-env.sh
    [ "${MUR_REPRO_NO_REMAP:-}" != 1 ] || RUSTFLAGS=
    export RUSTFLAGS="$RUSTFLAGS $DIST_MUSL_FLAGS"
    cargo build --locked --offline --profile "$PROFILE" --target "$TARGET" --bin mur
)
A_SECS=$(($(date +%s) - START))

# Build B's private copies: the crate archives (extracted again by B into its own
# CARGO_HOME) and the toolchain (hard links where the filesystem allows).
CARGO_HOME_A=${CARGO_HOME:-$HOME/.cargo}
cp -a "$CARGO_HOME_A/registry/index" "$CARGO_HOME_A/registry/cache" "$B/cargo-home/registry/"
cp -al "$SYSROOT" "$B/toolchain" 2>/dev/null || cp -a "$SYSROOT" "$B/toolchain"

B_EPOCH=$((EPOCH + 31536000 + 12345))
B_ENV=(env -i "HOME=$B/home" "PATH=$B/toolchain/bin:/usr/local/bin:/usr/bin:/bin"
    "CARGO_HOME=$B/cargo-home" "CARGO_TARGET_DIR=$B/target"
    "RUSTC=$B/toolchain/bin/rustc" "SOURCE_DATE_EPOCH=$B_EPOCH"
    "TZ=Pacific/Chatham" "LC_ALL=C" "DIST_MUSL_FLAGS=$DIST_MUSL_FLAGS"
    "PROFILE=$PROFILE" "TARGET=$TARGET" "MUR_REPRO_NO_REMAP=${MUR_REPRO_NO_REMAP:-}")
if [ "$(id -u)" = 0 ]; then
    # An unused uid: a real other user to the kernel, with nothing left in /etc/passwd.
    B_UID=61000
    while getent passwd "$B_UID" >/dev/null || getent group "$B_UID" >/dev/null; do
        B_UID=$((B_UID + 1))
    done
    chown -R "$B_UID:$B_UID" "$WORK/b"
    chown "$B_UID:$B_UID" "$B/toolchain" # its contents stay root's and read-only
    AS_B=(setpriv "--reuid=$B_UID" "--regid=$B_UID" --clear-groups)
    B_WHO="uid $B_UID"
else
    AS_B=()
    B_WHO="$(id -un) (not root: same user, everything else varied)"
fi
say "build B: $B_WHO in $B/src, SOURCE_DATE_EPOCH=$B_EPOCH, umask 077"
START=$(date +%s)
"${AS_B[@]}" "${B_ENV[@]}" bash -euc '
    umask 077
    cd "$0"
    [ "$(id -u)" != 0 ] || [ -z "$1" ] || { echo "build B runs as root" >&2; exit 1; }
    . ./scripts/build-env.sh
    [ "${MUR_REPRO_NO_REMAP:-}" != 1 ] || RUSTFLAGS=
    export RUSTFLAGS="$RUSTFLAGS $DIST_MUSL_FLAGS"
    cargo build --locked --offline --profile "$PROFILE" --target "$TARGET" --bin mur
' "$B/src" "${AS_B[*]}"
B_SECS=$(($(date +%s) - START))

rm -rf "$OUT"
mkdir -p "$OUT/a" "$OUT/b"
cp "$A/target/$TARGET/$PROFILE/mur" "$OUT/a/mur"
cp "$B/target/$TARGET/$PROFILE/mur" "$OUT/b/mur"
SHA_A=$(sha256sum "$OUT/a/mur" | cut -d' ' -f1)
SHA_B=$(sha256sum "$OUT/b/mur" | cut -d' ' -f1)
{
    echo "rev          $REV"
    echo "target       $TARGET (profile $PROFILE)"
    echo "build A      ${A_SECS}s  $SHA_A"
    echo "build B      ${B_SECS}s  $SHA_B"
} | tee "$OUT/summary.txt"

# No absolute build path may survive in the binary.
BAD=0
for leak in "$WORK" "$SYSROOT" "$CARGO_HOME_A" "$ROOT"; do
    if grep -qaF "$leak" "$OUT/a/mur" "$OUT/b/mur"; then
        say "the binary contains the build path $leak, e.g.:"
        grep -aoF "$leak" -m1 "$OUT/a/mur" "$OUT/b/mur" | head -1 >&2
        strings -n 8 "$OUT/b/mur" | grep -F "$leak" | head -2 >&2 || true
        BAD=1
    fi
done
if [ "$SHA_A" != "$SHA_B" ]; then
    say "the two builds differ; compare with: diffoscope $OUT/a/mur $OUT/b/mur"
    BAD=1
fi
[ "$BAD" = 0 ] || die "not reproducible"
"$OUT/a/mur" --version >/dev/null || die "the built binary does not run"
echo "reproducible: both builds are sha256 $SHA_A" | tee -a "$OUT/summary.txt"
# The binary in `just dist`'s archive, if there is one: built by `dist build` in
# the checkout's own target/, it must be the same bytes when it is of the same
# source tree (scripts/dist.sh records which); of another tree, it is only reported.
DIST_BIN=$ROOT/target/distrib/mur-$TARGET/mur
if [ -f "$DIST_BIN" ]; then
    SHA_DIST=$(sha256sum "$DIST_BIN" | cut -d' ' -f1)
    DIST_TREE=$(cat "$ROOT/target/distrib-source-tree" 2>/dev/null || true)
    TREE=$(git -C "$ROOT" rev-parse "$REV^{tree}")
    if [ "$SHA_DIST" = "$SHA_A" ]; then
        echo "target/distrib's binary (dist build) is the same sha256" | tee -a "$OUT/summary.txt"
    elif [ "$DIST_TREE" = "$TREE" ]; then
        echo "target/distrib's binary differs ($SHA_DIST) though built from the same source tree $TREE" | tee -a "$OUT/summary.txt"
        die "the shipped binary is not the one proven reproducible; compare with: diffoscope $DIST_BIN $OUT/a/mur"
    else
        echo "target/distrib's binary differs ($SHA_DIST): built from another source tree" | tee -a "$OUT/summary.txt"
    fi
fi
