# Sourced (not run) before a release build: `. scripts/build-env.sh`.
# Sets what makes the release binary the same bytes wherever and by whom it is
# built. Flags go in the RUSTFLAGS env var, not .cargo/config.toml, because
# `dist build` sets RUSTFLAGS itself and so ignores build.rustflags, and because
# the paths to remap are only known here.

# The checkout's root: this file lives in <root>/scripts/.
MUR_SRC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd -P)
: "${CARGO_HOME:=$HOME/.cargo}"
CARGO_HOME=$(cd "$CARGO_HOME" && pwd -P)
MUR_SYSROOT=$(rustc --print sysroot)

# Absolute paths that would otherwise reach the binary (panic locations of
# dependencies, debuginfo before strip). Later prefixes win where several match,
# so the more specific CARGO_HOME and sysroot come after the source root.
# The target folder is remapped to /target wherever it is (CARGO_TARGET_DIR, or
# the checkout's target/): build scripts' generated code (wasmtime's cranelift
# includes its OUT_DIR files) carries that path into panic locations, so without
# this `just dist` (target/ inside the checkout, /src/target) and `just repro`
# (a folder outside it) would ship different bytes for the same commit.
MUR_TARGET_REMAP=" --remap-path-prefix=$(realpath -m "${CARGO_TARGET_DIR:-$MUR_SRC_ROOT/target}")=/target"
# Stripped here (-Cstrip=symbols), not by a `strip` in [profile.dist]: a profile
# setting enters cargo's -C metadata and so every symbol's name, and the lists in
# link/symbol-order/ (build.rs) would then name nothing; RUSTFLAGS do not. The symbol
# table would also break the sameness: thin LTO names some symbols `….llvm.<hash>`,
# and for a module that holds a build path (cranelift's) the hash follows the folder.
export RUSTFLAGS="--remap-path-prefix=$MUR_SRC_ROOT=/src$MUR_TARGET_REMAP --remap-path-prefix=$CARGO_HOME=/cargo --remap-path-prefix=$MUR_SYSROOT=/rustc -Cstrip=symbols${RUSTFLAGS:+ $RUSTFLAGS}"
export CARGO_INCREMENTAL=0
# rustc ignores it; build scripts and the archives made around the binary use it.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$MUR_SRC_ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH
# C code built into the binary names its build's date and time (mimalloc's options.c:
# __DATE__ and __TIME__, which GCC takes from SOURCE_DATE_EPOCH): pinned, so the
# binary is the same whatever SOURCE_DATE_EPOCH the builder set (`just repro` varies
# it). No spaces inside a flag: the cc crate splits CFLAGS on white space.
export CFLAGS="${CFLAGS:+$CFLAGS }-Wno-builtin-macro-redefined -D__DATE__=\"redacted\" -D__TIME__=\"redacted\""
export CARGO_HOME
