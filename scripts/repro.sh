#!/usr/bin/env bash
# Two builds of the release musl binary must be the same sha256 (`just repro`).
#
# Build A is the binary `dist build` made (target/distrib, by `just dist`) when that
# is of this very source tree (target/distrib-source-tree, written by scripts/dist.sh):
# the shipped bytes are then one of the two compared, and CI builds no third copy.
# Otherwise (`just repro` alone, or a dist of another tree, or MUR_REPRO_NO_REMAP=1)
# build A is made here, from a clean export, as this user.
#
# Build B differs from A in everything that should not matter: the folder of the
# checkout, CARGO_HOME, the toolchain's path, the user (B runs as an unused uid
# through setpriv when we are root), umask, SOURCE_DATE_EPOCH, TZ and locale. Each has
# its own CARGO_TARGET_DIR, so nothing is shared but the downloaded crate archives.
# The binaries are kept in target/repro/ for diffoscope.
#
# MUR_REPRO_NO_REMAP=1 leaves out the path remapping of scripts/build-env.sh, to
# show what it is for (the builds then differ and leak their paths).
#
# What is built: the committed tree plus uncommitted changes to tracked files
# (`git stash create`), with the flags of scripts/build-env.sh and the flags
# `dist build` adds for musl, so the result is the binary dist ships.
#
# MUR_REPRO_STAGE splits the run in two for CI, which builds B while its other steps
# run and compares once `dist build` has made A: `b` builds B only (kept in
# target/repro/b with the tree it is of), `compare` takes that B (of this very tree,
# or it fails) instead of building one. Unset: both, one after the other.
set -euo pipefail
STAGE=${MUR_REPRO_STAGE:-}
case "$STAGE" in "" | b | compare) ;; *) echo "[repro] error: MUR_REPRO_STAGE is b, compare or unset, not $STAGE" >&2; exit 1 ;; esac

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
git -C "$ROOT" archive "$REV" | tar -x -C "$B/src"
# Every crate archive both builds need, in this user's CARGO_HOME (B copies them).
(cd "$B/src" && cargo fetch --locked --target "$TARGET" >/dev/null)

TREE=$(git -C "$ROOT" rev-parse "$REV^{tree}")
CARGO_HOME_A=${CARGO_HOME:-$HOME/.cargo}

build_a() {
# Build A: `dist build`'s binary of this source tree, or one built here.
DIST_BIN=$ROOT/target/distrib/mur-$TARGET/mur
DIST_TREE=$(cat "$ROOT/target/distrib-source-tree" 2>/dev/null || true)
mkdir -p "$A/target/$TARGET/$PROFILE"
if [ -f "$DIST_BIN" ] && [ "$DIST_TREE" = "$TREE" ] && [ "${MUR_REPRO_NO_REMAP:-}" != 1 ]; then
    A_WHAT="dist build in $ROOT (target/distrib, source tree $TREE)"
    say "build A: $A_WHAT"
    cp "$DIST_BIN" "$A/target/$TARGET/$PROFILE/mur"
    A_SECS=0
else
    if [ -f "$DIST_BIN" ]; then
        say "target/distrib's binary is of another source tree (${DIST_TREE:-unknown}, this is $TREE): building A here"
    fi
    # This user, its CARGO_HOME and toolchain, umask 022, the commit's time.
    A_WHAT="$(id -un) in $A/src, SOURCE_DATE_EPOCH=$EPOCH, umask 022"
    say "build A: $A_WHAT"
    git -C "$ROOT" archive "$REV" | tar -x -C "$A/src"
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
fi
}

build_b() {
# Build B's private copies: the crate archives (extracted again by B into its own
# CARGO_HOME) and the toolchain (hard links where the filesystem allows).
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
mkdir -p "$OUT/b"
cp "$B/target/$TARGET/$PROFILE/mur" "$OUT/b/mur"
# What the compare stage checks B against: its tree, its folder (for the leak check).
printf '%s\n' "$TREE" >"$OUT/b/tree"
printf '%s\n' "$WORK" >"$OUT/b/work"
printf '%s\n' "$B_SECS" >"$OUT/b/secs"
}

if [ "$STAGE" = b ]; then
    build_b
    say "build B: ${B_SECS}s, kept in $OUT/b for MUR_REPRO_STAGE=compare"
    exit 0
fi
if [ "$STAGE" = compare ]; then
    [ "$(cat "$OUT/b/tree" 2>/dev/null)" = "$TREE" ] ||
        die "no build B of this source tree $TREE in $OUT/b: run MUR_REPRO_STAGE=b first"
    B_SECS="$(cat "$OUT/b/secs") (built before)"
    B_WORK=$(cat "$OUT/b/work")
    build_a
else
    build_a
    build_b
    B_WORK=$WORK
fi
mkdir -p "$OUT/a"
cp "$A/target/$TARGET/$PROFILE/mur" "$OUT/a/mur"
SHA_A=$(sha256sum "$OUT/a/mur" | cut -d' ' -f1)
SHA_B=$(sha256sum "$OUT/b/mur" | cut -d' ' -f1)
{
    echo "rev          $REV"
    echo "target       $TARGET (profile $PROFILE)"
    echo "build A      ${A_SECS}s  $SHA_A  ($A_WHAT)"
    echo "build B      ${B_SECS}s  $SHA_B"
} | tee "$OUT/summary.txt"

# No absolute build path may survive in the binary.
BAD=0
for leak in "$WORK" "$B_WORK" "$SYSROOT" "$CARGO_HOME_A" "$ROOT"; do
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
# The binary in `just dist`'s archive, when build A was not that binary: of the same
# source tree it must be the same bytes; of another tree, it is only reported.
if [ -f "$DIST_BIN" ] && ! cmp -s "$DIST_BIN" "$OUT/a/mur"; then
    SHA_DIST=$(sha256sum "$DIST_BIN" | cut -d' ' -f1)
    if [ "$DIST_TREE" = "$TREE" ]; then
        echo "target/distrib's binary differs ($SHA_DIST) though built from the same source tree $TREE" | tee -a "$OUT/summary.txt"
        die "the shipped binary is not the one proven reproducible; compare with: diffoscope $DIST_BIN $OUT/a/mur"
    fi
    echo "target/distrib's binary differs ($SHA_DIST): built from another source tree" | tee -a "$OUT/summary.txt"
elif [ -f "$DIST_BIN" ]; then
    echo "target/distrib's binary (dist build) is the same sha256" | tee -a "$OUT/summary.txt"
fi
