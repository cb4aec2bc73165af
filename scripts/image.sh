#!/usr/bin/env bash
# Builds the release container image from docker/Dockerfile (`just image`) and
# checks that `docker run --rm <image> --version` prints mur's version.
# The binary is built exactly as `just repro` and `dist build` build it (same
# profile, target and flags), so its sha256 is the released binary's.
set -euo pipefail

TARGET=x86_64-unknown-linux-musl
PROFILE=dist
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
IMAGE=${MUR_IMAGE:-mur}
cd "$ROOT"
say() { printf '[image] %s\n' "$*" >&2; }

VERSION=$(cargo metadata --locked --no-deps --format-version 1 |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mur"))')
(
    unset RUSTFLAGS
    . scripts/build-env.sh
    export RUSTFLAGS="$RUSTFLAGS -Ctarget-feature=+crt-static -Clink-self-contained=yes"
    cargo build --locked --profile "$PROFILE" --target "$TARGET" --bin mur
)
BIN=target/$TARGET/$PROFILE/mur
# A static-pie binary: ldd says "statically linked" (glibc's ldd) or "not a dynamic executable".
grep -Eq 'statically linked|not a dynamic executable' <<<"$(ldd "$BIN" 2>&1 || true)" ||
    { say "error: $BIN is not statically linked"; exit 1; }

CTX=target/image
rm -rf "$CTX"
mkdir -p "$CTX/rootfs/usr/local/bin" "$CTX/rootfs/etc/ssl/certs" "$CTX/rootfs/tmp" "$CTX/home/mur"
chmod 1777 "$CTX/rootfs/tmp"
cp "$BIN" "$CTX/rootfs/usr/local/bin/mur"
printf 'root:x:0:0:root:/root:/sbin/nologin\nmur:x:65532:65532:mur:/home/mur:/sbin/nologin\n' >"$CTX/rootfs/etc/passwd"
printf 'root:x:0:\nmur:x:65532:\n' >"$CTX/rootfs/etc/group"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$CTX/rootfs/etc/ssl/certs/"
else
    say "warning: no /etc/ssl/certs/ca-certificates.crt here; the image has no TLS roots"
fi
cp docker/Dockerfile "$CTX/Dockerfile"

docker build -q -t "$IMAGE:$VERSION" -t "$IMAGE:latest" "$CTX" >/dev/null
GOT=$(docker run --rm "$IMAGE:$VERSION" --version)
if [ "$GOT" != "mur $VERSION" ]; then
    say "error: docker run --rm $IMAGE:$VERSION --version printed '$GOT', not 'mur $VERSION'"
    exit 1
fi
say "built $IMAGE:$VERSION ($IMAGE:latest); binary sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
say "docker run --rm $IMAGE:$VERSION --version -> $GOT"
docker image ls "$IMAGE:$VERSION" --format '{{.Repository}}:{{.Tag}} {{.Size}}' >&2
