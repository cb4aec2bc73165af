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

# Python a2a-sdk in .venv, then the door's interop test with it.
a2a-sdk:
    python3 -m venv .venv
    .venv/bin/pip install -q "a2a-sdk==1.3.0"
    cargo test --test a2a_sdk -- --ignored
