#!/usr/bin/env bash
# The shell installer, end to end (`just dist-test`, after `just dist`).
#
# Serves target/distrib from 127.0.0.1 with python3's http.server, then, in a
# container built here from local files (FROM scratch: busybox-static for wget,
# sha256sum, awk and the rest; GNU tar and dash with their libraries, because
# Debian's busybox tar cannot unpack a compressed archive without -J, the
# installer runs `tar xf`, and busybox sh would always pick its own tar):
#   1. `wget -O- .../mur-installer.sh | sh` as a non-root user into a temporary
#      HOME, with MUR_DOWNLOAD_URL at the local server; then runs the installed
#      `mur --version` and checks it names the version in Cargo.toml;
#   2. the same with INSTALLER_DOWNLOAD_URL instead;
#   3. the same against a copy whose archive has one byte changed: the installer
#      must refuse it with a checksum mismatch and install nothing.
# Leaves no server, container or image behind.
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
DISTRIB=${MUR_DISTRIB:-$ROOT/target/distrib}
HERE=$ROOT/tests/dist
IMAGE=mur-installer-test:local
ARCHIVE=mur-x86_64-unknown-linux-musl.tar.xz

say() { printf '[dist-test] %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }

VERSION=$(cargo metadata --locked --no-deps --format-version 1 --manifest-path "$ROOT/Cargo.toml" |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mur"))')
[ -f "$DISTRIB/mur-installer.sh" ] && [ -f "$DISTRIB/$ARCHIVE" ] ||
    die "no installer or $ARCHIVE in $DISTRIB; run \`just dist\` first"
grep -q "_checksum_value=\"$(cut -d' ' -f1 "$DISTRIB/$ARCHIVE.sha256")\"" "$DISTRIB/mur-installer.sh" ||
    die "the installer does not carry $ARCHIVE's sha256"
command -v docker >/dev/null || die "docker not found"
BUSYBOX=$(command -v busybox || true)
# ldd exits 1 on a static binary, hence the capture.
[ -n "$BUSYBOX" ] && grep -Eq 'statically linked|not a dynamic executable' <<<"$(ldd "$BUSYBOX" 2>&1 || true)" ||
    die "a static busybox is needed: apt-get install busybox-static"

WORK=$(mktemp -d /tmp/mur-dist-test.XXXXXX)
SERVER_PID=
CONTAINERS=()
cleanup() {
    local c
    for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    docker rmi -f "$IMAGE" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- the image: a root filesystem assembled from this machine's files ---------
ROOTFS=$WORK/image/rootfs
mkdir -p "$ROOTFS/bin" "$ROOTFS/usr/bin" "$ROOTFS/tmp" "$ROOTFS/etc"
chmod 1777 "$ROOTFS/tmp"
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
for applet in $("$BUSYBOX" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$ROOTFS/bin/$applet"
done
# Debian's busybox sh runs its own applets before PATH, so its tar would win:
# sh is dash and tar is GNU tar, each with its libraries and loader.
rm "$ROOTFS/bin/tar" "$ROOTFS/bin/sh"
for tool in tar dash; do
    bin=$(command -v "$tool") || die "$tool not found"
    cp "$bin" "$ROOTFS/usr/bin/$tool"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
        mkdir -p "$ROOTFS$(dirname "$lib")"
        cp -L "$lib" "$ROOTFS$lib"
    done
done
ln -s ../usr/bin/dash "$ROOTFS/bin/sh"
echo 'tester:x:1000:1000::/tmp/home:/bin/sh' >"$ROOTFS/etc/passwd"
cp "$HERE/Dockerfile" "$WORK/image/Dockerfile"
docker build -q -t "$IMAGE" "$WORK/image" >/dev/null 2>"$WORK/build.log" ||
    { cat "$WORK/build.log" >&2; die "could not build the test image"; }

# --- what is served: the release as built, and a copy with one byte changed ---
mkdir -p "$WORK/www"
cp -r "$DISTRIB" "$WORK/www/good"
cp -r "$DISTRIB" "$WORK/www/bad"
python3 - "$WORK/www/bad/$ARCHIVE" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-100, 2)
    b = f.read(1)
    f.seek(-100, 2)
    f.write(bytes([b[0] ^ 0xFF]))
EOF

python3 -u -m http.server --bind 127.0.0.1 --directory "$WORK/www" 0 \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PORT=
for _ in $(seq 1 100); do # up to 10 s for the server to say where it listens
    PORT=$(sed -n 's/^Serving HTTP on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' "$WORK/server.log")
    [ -n "$PORT" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || die "the http server exited: $(cat "$WORK/server.log")"
    sleep 0.1
done
[ -n "$PORT" ] || die "the http server did not start: $(cat "$WORK/server.log")"
BASE=http://127.0.0.1:$PORT
say "serving $DISTRIB at $BASE"

# Runs the installer in a fresh container as uid 1000 with HOME=/tmp/home.
# $1: the served folder (good|bad); $2: the variable that points the installer at
# it (MUR_DOWNLOAD_URL, or the generic INSTALLER_DOWNLOAD_URL).
# Prints what the container printed.
install_from() {
    local name=mur-dist-test-$$-$1-$2
    CONTAINERS+=("$name")
    docker run --name "$name" --network host --user 1000:1000 \
        -e HOME=/tmp/home -e MUR_NO_MODIFY_PATH=1 \
        -e "$2=$BASE/$1" -e "URL=$BASE/$1" \
        "$IMAGE" sh -c '
            mkdir -p "$HOME"
            wget -q -O- "$URL/mur-installer.sh" | sh
            status=$?
            echo "installer-exit=$status"
            if [ -x "$HOME/.cargo/bin/mur" ]; then
                echo "installed=yes"
                "$HOME/.cargo/bin/mur" --version
            else
                echo "installed=no"
            fi
            [ -f "$HOME/.config/mur/mur-receipt.json" ] && echo "receipt=yes" || echo "receipt=no"
        ' 2>&1
    docker rm -f "$name" >/dev/null
}

PASSED=0 FAILED=0
pass() { say "ok: $1"; PASSED=$((PASSED + 1)); }
fail() { say "not ok: $1"; FAILED=$((FAILED + 1)); }
check() { # $1 description, $2 output, $3 a line the output must have
    if grep -qxF -- "$3" <<<"$2"; then pass "$1"; else fail "$1 (no line '$3')"; fi
}

OUT=$(install_from good MUR_DOWNLOAD_URL)
printf '%s\n' "$OUT" >"$WORK/good.log"
check "the installer exits 0" "$OUT" "installer-exit=0"
check "mur is in \$HOME/.cargo/bin" "$OUT" "installed=yes"
check "the installed mur prints its version" "$OUT" "mur $VERSION"
check "the installer wrote its receipt" "$OUT" "receipt=yes"

OUT=$(install_from good INSTALLER_DOWNLOAD_URL)
printf '%s\n' "$OUT" >>"$WORK/good.log"
check "INSTALLER_DOWNLOAD_URL works too: mur prints its version" "$OUT" "mur $VERSION"

OUT=$(install_from bad MUR_DOWNLOAD_URL)
printf '%s\n' "$OUT" >"$WORK/bad.log"
check "a changed archive is refused" "$OUT" "installer-exit=1"
if grep -q 'checksum mismatch' <<<"$OUT"; then pass "it says checksum mismatch"; else
    fail "it says checksum mismatch (not in the installer's output)"; fi
check "nothing is installed from a changed archive" "$OUT" "installed=no"

if [ "$FAILED" != 0 ]; then
    echo "dist-test: $PASSED passed, $FAILED failed"
    say "--- good install ---"; cat "$WORK/good.log" >&2
    say "--- changed archive ---"; cat "$WORK/bad.log" >&2
    die "the installer test failed"
fi
echo "dist-test: $PASSED passed, $FAILED failed"
