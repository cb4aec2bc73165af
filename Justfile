# mur's tasks. `just --list` shows them.

default:
    @just --list

# Build the debug binary.
build:
    cargo build

# The README's test command.
test:
    cargo test

# The host tests as CI runs them (docs/testing.md): cargo-nextest with
# .config/nextest.toml, then the doctests, which nextest does not run.
nextest *ARGS:
    cargo nextest run {{ARGS}}
    cargo test --doc

# The examples' components (docs/components.md): components/ built for wasm32-wasip2;
# the tools into examples/toolbox/tools/<name>.wasm, the Anthropic driver (and the echo
# tool) into examples/anthropic/.
examples:
    #!/usr/bin/env bash
    set -euo pipefail
    rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
    dir=$(bash scripts/guests.sh)
    for t in echo env read-file write-file http-get; do
        cp "$dir/tool_${t//-/_}.wasm" "examples/toolbox/tools/$t.wasm"
    done
    cp "$dir/driver_anthropic.wasm" examples/anthropic/driver/anthropic.wasm
    cp "$dir/tool_echo.wasm" examples/anthropic/tools/echo.wasm
    ls -l examples/toolbox/tools/*.wasm examples/anthropic/driver/*.wasm examples/anthropic/tools/*.wasm

# Benchmarks (goals in docs/benchmarks.md): every bench in the release build, then
# benchmarks/report.md and its plots from this run's figures, and the goal table at
# the top of docs/benchmarks.md from the report.
bench: bench-setup
    python3 scripts/bench-report.py begin target/bench/results.jsonl
    # The benches run the mur that `cargo install` gives (MUR_BENCH_BIN), laid out by
    # link/symbol-order/; cargo bench's own build of mur has the dev-dependencies'
    # features as well.
    cargo build --release
    cp target/release/mur target/bench/mur
    python3 scripts/symbol-order.py --check target/bench/mur
    cargo bench --no-run
    # Nothing is timed until the build's writes are on disk: launches timed right
    # after a build were 3-6 times slower (docs/benchmarks.md).
    sync
    # Each server's binary is then read back from disk at its first start, as an
    # installed binary is once the page cache has let it go: a file just written stays
    # cached page by page, and a start maps 0.3-0.4 MiB more of it (docs/benchmarks.md).
    python3 -c 'import os, sys; [os.posix_fadvise(os.open(p, os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED) for p in sys.argv[1:]]' target/bench/mur target/rust_sdk_server/release/rust-sdk-server
    MUR_BENCH_BIN="$PWD/target/bench/mur" MUR_BENCH_OUT="$PWD/target/bench/results.jsonl" cargo bench
    python3 scripts/bench-report.py render target/bench/results.jsonl benchmarks --table docs/benchmarks.md

# Every benchmark at its smallest size, once, in the debug build: proves each still
# runs, and the report renders (to target/bench/smoke); CI runs this, its numbers
# mean nothing. Peers not built are skipped.
bench-smoke:
    python3 scripts/bench-report.py begin target/bench/smoke.jsonl
    MUR_BENCH_SMOKE=1 MUR_BENCH_OUT="$PWD/target/bench/smoke.jsonl" cargo test --bench '*'
    python3 scripts/bench-report.py render target/bench/smoke.jsonl target/bench/smoke

# The functions mur runs, start-up first, which build.rs has the linker lay out side by
# side (docs/benchmarks.md). Needs valgrind. Run it after a toolchain or dependency
# update and commit the lists, whose names carry hashes: rewrite link/symbol-order/.
symbol-order:
    cargo build --release
    python3 scripts/symbol-order.py target/release/mur
    cargo build --release --target x86_64-unknown-linux-musl
    python3 scripts/symbol-order.py --target x86_64-unknown-linux-musl target/x86_64-unknown-linux-musl/release/mur

# The session benchmark's peers: the Rust A2A SDK server (benches/rust_sdk_server, a
# package of its own) and Python a2a-sdk 1.3.0 with uvicorn in .venv.
bench-setup:
    CARGO_TARGET_DIR=target/rust_sdk_server cargo build --release --locked --manifest-path benches/rust_sdk_server/Cargo.toml
    test -x .venv/bin/python || python3 -m venv .venv
    .venv/bin/pip install -q -r benches/a2a_sdk_server/requirements.txt

# Each cargo-fuzz target in fuzz/ for `secs` seconds (docs/testing.md). cargo-fuzz needs
# nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them. New inputs go
# to fuzz/target/corpus/<target>; the committed seeds in fuzz/corpus/<target> are read.
fuzz secs="60":
    #!/usr/bin/env bash
    set -euo pipefail
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    cd fuzz
    for t in roster manifest token rpc_request channel_line harness_line; do
        mkdir -p target/corpus/$t
        RUSTC_BOOTSTRAP=1 cargo fuzz run -O $t target/corpus/$t corpus/$t -- \
            -max_total_time={{secs}} -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256
    done

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --all-targets -- -D warnings

# What CI runs, from this checkout.
ci:
    bash .ci/run

# `just e2e <path>` tests that static mur instead of building one (CI passes the
# release binary `just image` built).
# The container suite (e2e/README.md): a static musl mur, the image, every scenario.
e2e mur="": (e2e-image mur)
    cargo test -p mur-e2e --test e2e

# The e2e image, built locally and offline (FROM scratch: nothing is pulled).
e2e-image mur="":
    #!/usr/bin/env bash
    set -euo pipefail
    bin="{{mur}}"
    if [ -z "$bin" ]; then
        cargo build --release --target x86_64-unknown-linux-musl
        bin=target/x86_64-unknown-linux-musl/release/mur
    fi
    rm -rf target/e2e-image && mkdir -p target/e2e-image
    cp "$bin" target/e2e-image/mur
    cp /bin/busybox /usr/bin/tini-static target/e2e-image/
    cp -r docker/e2e target/e2e-image/e2e
    DOCKER_BUILDKIT=0 docker build -q -t mur-e2e:local -f docker/e2e.Dockerfile target/e2e-image

# Python a2a-sdk in .venv, then the door's interop test with it.
a2a-sdk:
    python3 -m venv .venv
    .venv/bin/pip install -q "a2a-sdk==1.3.0"
    cargo test --test it a2a_sdk -- --ignored

# Release archive, checksums and shell installer in target/distrib (cargo-dist).
dist *ARGS:
    bash scripts/dist.sh {{ARGS}}

# Serve target/distrib on 127.0.0.1 and install with mur-installer.sh in a container.
dist-test: dist
    bash tests/dist/install-test.sh

# Two release musl builds (other folder, user, umask, time) must be the same sha256:
# `just dist`'s binary of this source tree and one more, or two built here.
repro:
    bash scripts/repro.sh

# The release image (docker/Dockerfile, FROM scratch) and `docker run --rm mur --version`.
image:
    bash scripts/image.sh

# Parse the Nix files and check the flake's outputs offline (stub nixpkgs).
nix-check:
    bash scripts/nix-check.sh
