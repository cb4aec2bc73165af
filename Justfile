# mur's tasks. `just --list` shows them.

default:
    @just --list

# Build the debug binary.
build:
    cargo build

# The README's test command.
test:
    cargo test

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --all-targets -- -D warnings

# What CI runs, from this checkout.
ci:
    bash .ci/run
