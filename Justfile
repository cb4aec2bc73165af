# mur's tasks. `just --list` shows them.

default:
    @just --list

# Build the debug binary.
build:
    cargo build

# The README's test command.
test:
    cargo test

# Benchmarks: admission of a 64-member roster (goal < 20 ms; docs/roster.md).
bench:
    cargo bench

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --all-targets -- -D warnings

# What CI runs, from this checkout.
ci:
    bash .ci/run

# The container suite (e2e/README.md): a static musl mur, the image, every scenario.
e2e: e2e-image
    cargo test -p mur-e2e --test e2e

# The e2e image, built locally and offline (FROM scratch: nothing is pulled).
e2e-image:
    cargo build --release --target x86_64-unknown-linux-musl
    rm -rf target/e2e-image && mkdir -p target/e2e-image
    cp target/x86_64-unknown-linux-musl/release/mur target/e2e-image/mur
    cp /bin/busybox /usr/bin/tini-static target/e2e-image/
    cp -r docker/e2e target/e2e-image/e2e
    DOCKER_BUILDKIT=0 docker build -q -t mur-e2e:local -f docker/e2e.Dockerfile target/e2e-image

# Python a2a-sdk in .venv, then the door's interop test with it.
a2a-sdk:
    python3 -m venv .venv
    .venv/bin/pip install -q "a2a-sdk==1.3.0"
    cargo test --test a2a_sdk -- --ignored
