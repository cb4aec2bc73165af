#!/usr/bin/env python3
"""Writes link/symbol-order/<target>.txt: the functions mur runs, start-up first.

`just symbol-order` runs this on the release binary of each target with a list. It
runs mur under valgrind's callgrind, which names every function a process executes,
in three scenarios:

1. a session's start-up: `mur run --json --capsule`, its Agent Card, SIGTERM;
2. a formation: `mur run --roster --task` on the scaffolded two-member roster
   (launcher, watcher and members, following each exec);
3. a session serving SendMessage, GetTask and ListTasks.

Each function is listed once, in the order of the first scenario that ran it, so the
start-up's code comes first. build.rs hands the file to the linker
(`--symbol-ordering-file`), which places those functions side by side at the start
of `.text`: a start then maps a few hundred KiB of code instead of pages spread over
the whole binary (docs/benchmarks.md, "The code layout").

`--check` instead says how many of the list's names the binary defines, and fails
below 90% of those without a thin LTO module hash: the names carry hashes that change
with the toolchain, the target, the dependencies and the profile, and a stale list
lays out nothing (`just bench` checks).
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEADLINE = 120  # seconds: valgrind runs mur some 50 times slower


def callgrind(out, trace_children=False):
    args = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}"]
    if trace_children:
        args.append("--trace-children=yes")
    return args


def functions(path):
    """The function names a callgrind file names, in the order they first appear."""
    names = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"c?fn=\(\d+\) (.+)", line)
            if m:
                names.append(m.group(1).strip())
    return names


def defined_functions(binary):
    """The names of the binary's own functions (its symbol table)."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
    names = {p[2] for p in (l.split() for l in out.stdout.splitlines()) if len(p) == 3 and p[1] in "tT"}
    if not names:
        # A stale list and a stripped binary would otherwise both read as 0%.
        sys.exit(f"symbol-order: {binary} has no symbol table (a stripped build?): nothing to list or check")
    return names


def wait_for(what, check):
    until = time.monotonic() + DEADLINE
    while time.monotonic() < until:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    sys.exit(f"symbol-order: timed out waiting for {what}")


def project(mur, home):
    """A project with the bench's echo capsule (built-in transport, a token door)."""
    project = os.path.join(home, "project")
    capsule = os.path.join(project, "src", "echo")
    os.makedirs(capsule)
    with open(os.path.join(capsule, "murmur.yaml"), "w") as f:
        f.write(
            "name: echo\nversion: 1.0.0\ndescription: Symbol order.\nagent:\n  transport: builtin\n"
            "lifecycle:\n  task_acceptance: queue\n  queue_depth: 8\nnetwork:\n  authentication: {}\n"
        )
    subprocess.run([mur, "install", capsule], cwd=project, env=env(home), check=True, stdout=subprocess.DEVNULL)
    return project


def env(home):
    # No MURMUR_ALLOW_ROOT: run as root (a CI container, the bench), mur warns with
    # W-SEC-013 at every start, and that path is laid out too.
    return {"HOME": home, "PATH": os.environ["PATH"]}


def rpc(door, token, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(
        door + "/",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=DEADLINE) as response:
        return json.load(response)


def session(mur, home, project, out, serve):
    """Scenario 1 (serve=False) or 3 (serve=True): one session under callgrind."""
    ready_file = os.path.join(home, f"ready-{serve}.json")
    with open(ready_file, "w") as stdout:
        child = subprocess.Popen(
            callgrind(out) + [mur, "run", "--json", "--capsule", "local/echo", "--capsule-version", "1.0.0"],
            cwd=project,
            env=env(home),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
        )
    try:
        ready = wait_for("the readiness line", lambda: read_ready(ready_file))
        door = ready["door"].rstrip("/")
        urllib.request.urlopen(door + "/.well-known/agent-card.json", timeout=DEADLINE).read()
        if serve:
            token_file = os.path.join(home, ".murmur", "running", ready["session_id"] + ".token")
            with open(token_file) as f:
                token = f.read().strip()
            message = {"role": "ROLE_USER", "parts": [{"text": "hello"}], "messageId": "m1"}
            task = rpc(door, token, "SendMessage", {"message": message})["result"]["task"]
            rpc(door, token, "GetTask", {"id": task["id"]})
            rpc(door, token, "ListTasks", {})
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=DEADLINE)


def read_ready(path):
    with open(path) as f:
        line = f.readline()
    return json.loads(line) if line.endswith("\n") else None


def formation(mur, home, outdir):
    """Scenario 2: the scaffolded roster, one task, every process under callgrind."""
    subprocess.run([mur, "new", "--roster", "team"], cwd=home, env=env(home), check=True, capture_output=True)
    team = os.path.join(home, "team")
    subprocess.run([mur, "install", "lead", "helper"], cwd=team, env=env(home), check=True, capture_output=True)
    subprocess.run(
        callgrind(os.path.join(outdir, "formation.%p"), trace_children=True)
        + [mur, "run", "--roster", "--task", "Plan a picnic."],
        cwd=team,
        env=env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=DEADLINE,
    )
    return sorted(os.path.join(outdir, n) for n in os.listdir(outdir) if n.startswith("formation."))


def check(mur, out):
    with open(out) as f:
        listed = [line.strip() for line in f if line.strip()]
    own = defined_functions(mur)
    # Only the names without a thin LTO module hash say whether the list is stale:
    # some of those with one differ by build folder (above).
    plain = [name for name in listed if ".llvm." not in name]
    found = sum(name in own for name in plain)
    share = found / len(plain) if plain else 0.0
    hashed = len(listed) - len(plain)
    found_hashed = sum(name in own for name in listed if ".llvm." in name)
    print(
        f"symbol-order: {found} of the {len(plain)} functions in {os.path.relpath(out, ROOT)} are in {mur} ({share:.0%}),"
        f" and {found_hashed} of the {hashed} named with a thin LTO module hash"
    )
    if share < 0.9:
        sys.exit("symbol-order: the list is stale for this build: run `just symbol-order` and commit it")


def main():
    parser = argparse.ArgumentParser(description="The functions mur runs, start-up first.")
    parser.add_argument("--check", action="store_true", help="only check the list against BINARY")
    parser.add_argument("--target", default="x86_64-unknown-linux-gnu", help="the target BINARY was built for")
    parser.add_argument("binary")
    args = parser.parse_args()
    mur = os.path.abspath(args.binary)
    out = os.path.join(ROOT, "link", "symbol-order", f"{args.target}.txt")
    if args.check:
        return check(mur, out)
    if not shutil.which("valgrind"):
        sys.exit("symbol-order: needs valgrind (apt-get install valgrind)")
    own = defined_functions(mur)
    home = tempfile.mkdtemp(prefix="mur-symbol-order-")
    try:
        proj = project(mur, home)
        runs = [os.path.join(home, "start.cg")]
        session(mur, home, proj, runs[0], serve=False)
        runs += formation(mur, home, home)
        runs.append(os.path.join(home, "serve.cg"))
        session(mur, home, proj, runs[-1], serve=True)
        order, seen = [], set()
        for run in runs:
            for name in functions(run):
                # Thin LTO's `….llvm.<hash>` names are kept: the hash is of their
                # module's bitcode, the same in every checkout on this machine except
                # for a module holding a path that differs (cranelift's generated
                # code names the target folder; build-env.sh's remapped paths). A
                # build without a name skips it.
                if name in own and name not in seen:
                    seen.add(name)
                    order.append(name)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.writelines(name + "\n" for name in order)
    print(f"symbol-order: {len(order)} functions from {len(runs)} processes -> {os.path.relpath(out, ROOT)}")


if __name__ == "__main__":
    main()
