#!/usr/bin/env bash
# What can be checked of the Nix flake on a machine with no binary cache and a
# Nix (Debian's 2.8) too old for current nixpkgs (`just nix-check`):
#   - every tracked .nix file parses;
#   - flake.lock pins the input flake.nix names;
#   - nix/package.nix, evaluated, has Cargo.toml's name and version and builds
#     from the committed Cargo.lock, which matches Cargo.toml and has no git
#     dependencies (they would need cargoLock.outputHashes);
#   - `nix flake check --no-build` passes against nix/stub-nixpkgs (the shapes of
#     packages, apps, checks and devShells for both systems).
# What it cannot check: that nixpkgs builds it. See docs/distribution.md.
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$ROOT"
PASSED=0 FAILED=0
pass() { printf '[nix-check] ok: %s\n' "$1" >&2; PASSED=$((PASSED + 1)); }
fail() { printf '[nix-check] not ok: %s\n' "$1" >&2; FAILED=$((FAILED + 1)); }
command -v nix-instantiate >/dev/null ||
    { echo "[nix-check] nix-instantiate not found: apt-get install nix-bin" >&2; exit 1; }

# 1. Syntax.
mapfile -t NIX_FILES < <(git ls-files '*.nix')
[ "${#NIX_FILES[@]}" -ge 3 ] || fail "the .nix files are tracked by git (found ${#NIX_FILES[@]})"
for f in "${NIX_FILES[@]}"; do
    if out=$(nix-instantiate --parse "$f" 2>&1 >/dev/null); then pass "$f parses"; else fail "$f parses: $out"; fi
done

# 2. flake.lock pins what flake.nix asks for.
URL=$(nix-instantiate --eval --strict --json -E '(import ./flake.nix).inputs.nixpkgs.url' | python3 -c 'import json,sys; print(json.load(sys.stdin))')
if python3 - "$URL" <<'EOF'; then pass "flake.lock pins $URL"; else fail "flake.lock pins $URL"; fi
import json, re, sys
url = sys.argv[1]
m = re.fullmatch(r"github:([^/]+)/([^/]+)/([^/?]+)", url)
assert m, f"unexpected input url {url}"
lock = json.load(open("flake.lock"))
assert lock["version"] == 7
node = lock["nodes"][lock["nodes"]["root"]["inputs"]["nixpkgs"]]
want = {"type": "github", "owner": m[1], "repo": m[2], "ref": m[3]}
assert node["original"] == want, f"original {node['original']} != {want}"
locked = node["locked"]
assert re.fullmatch(r"[0-9a-f]{40}", locked["rev"]), locked
assert locked["narHash"].startswith("sha256-"), locked
EOF

# 3. nix/package.nix agrees with Cargo.toml and Cargo.lock.
if ! EVAL=$(nix-instantiate --eval --strict --json -E '
  let
    stub = (import ./nix/stub-nixpkgs/flake.nix).outputs { self = null; };
    attrs = import ./nix/package.nix {
      inherit (stub) lib;
      rustPlatform.buildRustPackage = a: a;
    };
  in {
    inherit (attrs) pname version cargoBuildFlags;
    lockFile = toString attrs.cargoLock.lockFile;
    src = toString attrs.src;
    mainProgram = attrs.meta.mainProgram;
  }' 2>&1); then
    fail "nix/package.nix evaluates: $EVAL"
    EVAL='{}'
fi
if python3 - "$EVAL" "$ROOT" <<'EOF'; then pass "nix/package.nix: name, version and lock file are Cargo's"; else fail "nix/package.nix: name, version and lock file are Cargo's"; fi
import json, os, sys, tomllib
got, root = json.loads(sys.argv[1]), sys.argv[2]
pkg = tomllib.load(open(os.path.join(root, "Cargo.toml"), "rb"))["package"]
bins = tomllib.load(open(os.path.join(root, "Cargo.toml"), "rb")).get("bin", [])
checks = {
    "pname": (got["pname"], pkg["name"]),
    "version": (got["version"], pkg["version"]),
    "lockFile": (os.path.realpath(got["lockFile"]), os.path.realpath(os.path.join(root, "Cargo.lock"))),
    "src": (os.path.realpath(got["src"]), os.path.realpath(root)),
    "mainProgram": (got["mainProgram"], bins[0]["name"] if bins else pkg["name"]),
}
bad = {k: v for k, v in checks.items() if v[0] != v[1]}
for k, (g, w) in bad.items():
    print(f"  {k}: nix/package.nix gives {g!r}, Cargo gives {w!r}", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
if git ls-files --error-unmatch Cargo.lock >/dev/null 2>&1; then pass "Cargo.lock is tracked (flakes see only tracked files)"; else fail "Cargo.lock is tracked"; fi
if cargo metadata --locked --offline --format-version 1 >/dev/null 2>&1 || cargo metadata --locked --format-version 1 >/dev/null; then
    pass "Cargo.lock matches Cargo.toml (cargo metadata --locked)"
else fail "Cargo.lock matches Cargo.toml (cargo metadata --locked)"; fi
if grep -q '^source = "git+' Cargo.lock; then
    fail "Cargo.lock has git dependencies: add their hashes to cargoLock.outputHashes in nix/package.nix"
else pass "Cargo.lock has only registry and path dependencies (no outputHashes needed)"; fi

# 4. The flake's outputs, against the stub nixpkgs, without building.
if out=$(nix --extra-experimental-features 'nix-command flakes' flake check --no-build \
    --no-write-lock-file --override-input nixpkgs "path:$ROOT/nix/stub-nixpkgs" "$ROOT" 2>&1); then
    pass "nix flake check --no-build (stub nixpkgs; both systems)"
else
    fail "nix flake check --no-build: $out"
fi

# Nix 2.8's flake check does not look inside apps: `nix run` needs a program in
# the package's output.
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT
for system in x86_64-linux aarch64-linux; do
    if app=$(nix --extra-experimental-features 'nix-command flakes' eval --json --no-write-lock-file \
        --override-input nixpkgs "path:$ROOT/nix/stub-nixpkgs" "$ROOT#apps.$system.default" 2>"$ERR") &&
        python3 -c 'import json,re,sys; a=json.loads(sys.argv[1]); sys.exit(not (a["type"] == "app" and re.fullmatch(r"/nix/store/[^/]+-mur-[^/]+/bin/mur", a["program"])))' "$app"; then
        pass "apps.$system.default runs the package's bin/mur"
    else
        fail "apps.$system.default runs the package's bin/mur: ${app:-$(cat "$ERR")}"
    fi
done

echo "nix-check: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
