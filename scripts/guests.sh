#!/usr/bin/env bash
# Builds the WASM guests of components/ (docs/components.md) for wasm32-wasip2 and
# prints their folder: the one recipe for them. The tests run it once per test
# process (crates/mur-test/src/guests.rs), nextest's setup script once per run
# (.config/nextest.toml, which hands the folder to every test as MUR_GUESTS_DIR),
# and `just examples` before it copies them into examples/.
set -euo pipefail
TARGET=wasm32-wasip2
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$TARGET"; then
    echo "the tests build WASM components for $TARGET, which is not installed:" \
        "run \`rustup target add $TARGET\`, then the tests again" >&2
    exit 1
fi
# The guests are built for their own target with their own flags, whatever the caller's.
unset RUSTFLAGS CARGO_BUILD_TARGET
export CARGO_TARGET_DIR=$ROOT/components/target
(cd "$ROOT/components" && "${CARGO:-cargo}" build --release --quiet --target "$TARGET")
DIR=$CARGO_TARGET_DIR/$TARGET/release
if [ -n "${NEXTEST_ENV:-}" ]; then
    echo "MUR_GUESTS_DIR=$DIR" >>"$NEXTEST_ENV"
else
    echo "$DIR"
fi
