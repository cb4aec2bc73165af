#!/usr/bin/env python3
"""Renders a bench run's figures as a report beside the goals (issue 19).

    bench-report.py begin RESULTS            # before the benches: date, load, versions
    bench-report.py render RESULTS OUT_DIR   # after: OUT_DIR/report.md and its PNGs
        [--table docs/benchmarks.md]         # and the goal table between its markers

RESULTS holds one JSON line per measured figure, {bench, figure, labels, value, unit,
smoke}, appended by crates/mur-test/src/measure.rs (`record`) when MUR_BENCH_OUT names it.
Figures of one (bench, figure, labels) are runs: the report gives their median and
their spread (min-max). A ratio's spread is the widest its two ranges allow.
"""

import json
import os
import platform
import re
import subprocess
import sys
import time
from collections import defaultdict
from statistics import median

BEGIN, END = "<!-- report:begin -->", "<!-- report:end -->"


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def begin(results):
    """The run's context, read before the benches load the machine."""
    os.makedirs(os.path.dirname(results) or ".", exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": open("/proc/loadavg").read().split()[:3],
        "rustc": sh("rustc", "-V"),
        "kernel": platform.release(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), "?"),
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        # "-dirty" when the run measured changes not yet committed.
        "commit": sh("git", "describe", "--always", "--abbrev=7", "--dirty"),
    }
    with open(results, "w") as f:  # a run starts a new file
        f.write(json.dumps({"bench": "meta", "figure": "begin", "labels": meta,
                            "value": 0, "unit": "", "smoke": False}) + "\n")


class Figures:
    def __init__(self, path):
        self.meta, self.groups, self.smoke = {}, defaultdict(list), False
        self.units = {}
        for n, line in enumerate(open(path), 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}:{e.colno}: not a JSON line: {e.msg}")
            if r["bench"] == "meta":
                self.meta = r["labels"]
                continue
            self.smoke |= r["smoke"]
            key = (r["bench"], r["figure"], json.dumps(r["labels"], sort_keys=True))
            self.groups[key].append(r["value"])
            self.units[key] = r["unit"]

    def runs(self, bench, figure, **labels):
        return self.groups.get((bench, figure, json.dumps(labels, sort_keys=True)), [])

    def stat(self, bench, figure, **labels):
        """(median, min, max, n), or None when not measured."""
        v = self.runs(bench, figure, **labels)
        return (median(v), min(v), max(v), len(v)) if v else None

    def series(self, bench, figure, x, **labels):
        """{x value: [values]} of the figures whose other labels are `labels`."""
        out = defaultdict(list)
        for (b, f, l), v in self.groups.items():
            l = json.loads(l)
            if b == bench and f == figure and x in l:
                if all(l.get(k) == w for k, w in labels.items()):
                    out[l[x]].extend(v)
        return dict(sorted(out.items()))


def fmt(x):
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def spread(s, unit):
    m, lo, hi, n = s
    u = f" {unit}" if unit else ""
    return f"{fmt(m)}{u} ({fmt(lo)}–{fmt(hi)}, n={n})" if n > 1 else f"{fmt(m)}{u}"


def goals(f):
    """(figure, goal, measured, met) rows; met is True, False or None (not measured)."""
    rows = []

    def absolute(name, s, unit, limit, below=True):
        if not s:
            rows.append((name, f"< {limit} {unit}", "not measured", None))
        else:
            met = s[0] < limit if below else s[0] >= limit
            rows.append((name, f"< {limit} {unit}", spread(s, unit), met))

    def ratio(name, a, b, goal, at_most=False, what="×"):
        if not a or not b:
            rows.append((name, f"{'≤' if at_most else '≥'} {goal}{what}", "not measured", None))
            return
        r, lo, hi = a[0] / b[0], a[1] / b[2], a[2] / b[1]
        met = r <= goal if at_most else r >= goal
        band = f" ({lo:.2f}–{hi:.2f}×)" if a[3] > 1 or b[3] > 1 else ""
        rows.append((name, f"{'≤' if at_most else '≥'} {goal}×",
                     f"{r:.2f}×{band}: {fmt(a[0])} against {fmt(b[0])}", met))

    S = lambda fig, **l: f.stat("session", fig, **l)
    for method, goal in [("SendMessage", 1.2), ("GetTask", 1.5)]:
        for c in (8, 64):
            ratio(f"session {method} c{c}, requests/s vs the Rust SDK",
                  S("rps", server="mur", method=method, connections=c),
                  S("rps", server="rust-sdk", method=method, connections=c), goal)
    # Like for like: each store holding the same 1,000 tasks (benches/session.rs).
    for c in (8, 64):
        ratio(f"session ListTasks c{c} at 1,000 tasks in each store, requests/s vs the Rust SDK",
              S("rps", server="mur", method="ListTasks", connections=c, tasks=1000),
              S("rps", server="rust-sdk", method="ListTasks", connections=c, tasks=1000), 3.0)
    # Beside it, no goal: after a round's calls, mur keeps 1,000 tasks, the SDK every one.
    made = S("round_tasks", server="rust-sdk")
    for c in (8, 64):
        a = S("rps", server="mur", method="ListTasks", connections=c, tasks="round")
        b = S("rps", server="rust-sdk", method="ListTasks", connections=c, tasks="round")
        if a and b:
            held = f"{made[0]:,.0f}" if made else "every"
            rows.append((f"session ListTasks c{c} after a round (mur keeps at most 1,000 tasks, the Rust SDK"
                         f" all {held}), vs the Rust SDK", "none: the stores differ",
                         f"{a[0] / b[0]:.2f}×: {fmt(a[0])} against {fmt(b[0])}", "shown"))
    for c in (8, 64):
        ratio(f"session GetTask c{c}, requests/s vs the axum floor",
              S("rps", server="mur", method="GetTask", connections=c),
              S("rps", server="floor", method="GetTask", connections=c), 0.8)
    for method in ("SendMessage", "GetTask"):
        ratio(f"session {method} c8, requests/s vs a2a-sdk (Python)",
              S("rps", server="mur", method=method, connections=8),
              S("rps", server="a2a-sdk", method=method, connections=8), 20)
    ratio("session first streamed event (SendStreamingMessage, for SubscribeToTask) vs the Rust SDK",
          S("first_event", server="mur"), S("first_event", server="rust-sdk"), 1.0, at_most=True)
    ratio("session start-up to the Agent Card vs the Rust SDK",
          S("start_up", server="mur"), S("start_up", server="rust-sdk"), 1.0, at_most=True)
    absolute("session start-up to the Agent Card", S("start_up", server="mur"), "ms", 20)
    ratio("session idle RSS vs the Rust SDK",
          S("idle_rss", server="mur"), S("idle_rss", server="rust-sdk"), 1.0, at_most=True)
    absolute("session idle RSS", S("idle_rss", server="mur"), "MiB", 15)
    # One reading per point of a curve: the first at or past n tasks, as a stat.
    curves = {s: f.series("session", "rss_tasks", "tasks", server=s) for s in ("mur", "rust-sdk")}
    def at(curve, n):
        t = next((t for t in curve if t >= n), max(curve, default=None))
        return None if t is None else (t, (median(curve[t]),) * 3 + (1,))
    m10, s10 = at(curves["mur"], 10_000), at(curves["rust-sdk"], 10_000)
    if m10 and s10:
        ratio(f"session RSS after {m10[0]:,} tasks vs the Rust SDK's after {s10[0]:,}",
              m10[1], s10[1], 1.0, at_most=True)
    else:
        rows.append(("session RSS after 10,000 tasks vs the Rust SDK", "≤ 1×", "not measured", None))
    last = at(curves["mur"], 150_000)
    if last:
        absolute(f"session RSS after {last[0]:,} tasks (goal at 150,000)", last[1], "MiB", 64)
    for members in (8, 32):
        ratio(f"formation launch, {members} members, vs {members} bare processes",
              f.stat("formation", "launch", members=members),
              f.stat("formation", "launch_floor", members=members), 4.0, at_most=True)
    for members in (8, 32):
        for state in ("idle", "busy"):
            absolute(f"teardown after SIGKILL of the launcher, {members} members, {state}",
                     f.stat("formation", "teardown", members=members, state=state), "ms", 100)
    absolute("admission, 64 members", f.stat("admission", "admission", members=64), "ms", 20)
    absolute("WASM tool call, warm", f.stat("components", "tool_call", state="warm"), "ms", 1)
    absolute("WASM tool call, first from the on-disk cache",
             f.stat("components", "tool_call", state="cached"), "ms", 20)
    absolute("session start-up with 8 tools", f.stat("components", "start_up", tools=8), "ms", 20)
    absolute("call-member round trip (median)", f.stat("call_member", "round_trip", via="call-member"), "ms", 5)
    for via in ("murmur:message/send", "wasi:http"):
        ratio(f"a component's call ({via}) vs call-member",
              f.stat("call_member", "round_trip", via=via),
              f.stat("call_member", "round_trip", via="call-member"), 1.5, at_most=True)
    absolute("shell call (`true`), median", f.stat("host", "shell_call"), "ms", 5)
    absolute("delegation round trip, median", f.stat("host", "delegation"), "ms", 50)
    ratio("rightful caller's SendMessage p99 under hostile load vs unloaded",
          f.stat("hostile", "rightful_p99", load="hostile"),
          f.stat("hostile", "rightful_p99", load="unloaded"), 2.0, at_most=True)
    lost = f.stat("load", "lost", tasks=max((json.loads(k[2]).get("tasks", 0) for k in f.groups
                                             if k[:2] == ("load", "lost")), default=0))
    rows.append(("load: tasks lost at a formation's entry member, 8 clients", "0",
                 spread(lost, "") if lost else "not measured", (lost[0] == 0) if lost else None))
    lead = f.series("load", "rss", "tasks", process="lead")
    if len(lead) >= 3:
        xs = list(lead)
        third, last = median(lead[xs[len(xs) // 3]]), median(lead[xs[-1]])
        rows.append(("load: the entry member's RSS from a third of the tasks to the end",
                     "flat (≤ +2 MiB)", f"{third:.1f} → {last:.1f} MiB", last - third <= 2.0))
    return rows


def micro(f):
    """Figures with no goal of their own, for the record."""
    rows = []
    for cache in ("cached", "uncached"):
        rows.append((f"token verification, {cache}", f.stat("door", "token_check", cache=cache), "µs"))
    rows.append(("token issue (one ed25519 signature)", f.stat("door", "token_issue"), "µs"))
    for state in ("cold", "cached", "warm"):
        rows.append((f"WASM tool call, {state}", f.stat("components", "tool_call", state=state), "ms"))
    rows.append(("admission of 64 members", f.stat("admission", "admission", members=64), "ms"))
    for via in ("bare", "call-member", "murmur:message/send", "wasi:http"):
        rows.append((f"round trip: {via}", f.stat("call_member", "round_trip", via=via), "ms"))
        rows.append((f"round trip: {via}, p99", f.stat("call_member", "round_trip_p99", via=via), "ms"))
    rows.append(("shell call", f.stat("host", "shell_call"), "ms"))
    rows.append(("shell call, p99", f.stat("host", "shell_call_p99"), "ms"))
    rows.append(("delegation round trip", f.stat("host", "delegation"), "ms"))
    rows.append(("load: tasks/s at the entry member", f.stat("load", "tasks_per_s", tasks=max(
        (json.loads(k[2]).get("tasks", 0) for k in f.groups if k[:2] == ("load", "tasks_per_s")),
        default=0)), "tasks/s"))
    return [(n, s, u) for n, s, u in rows if s]


def plots(f, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []

    def save(fig, name, title):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=100)
        plt.close(fig)
        made.append((name, title))

    launch, floor = (f.series("formation", k, "members") for k in ("launch", "launch_floor"))
    if launch:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, s in (("mur run --roster", launch), ("bare processes (floor)", floor)):
            xs = list(s)
            ax.errorbar(xs, [median(s[x]) for x in xs],
                        yerr=[[median(s[x]) - min(s[x]) for x in xs], [max(s[x]) - median(s[x]) for x in xs]],
                        marker="o", capsize=3, label=label)
        ax.plot(list(floor), [4 * median(v) for v in floor.values()], "k:", label="goal: 4× the floor")
        ax.set(xlabel="members", ylabel="ms to the entry member's task", title="Formation launch")
        ax.legend()
        save(fig, "launch.png", "Launch time against members")

    session = {s: f.series("session", "rss_tasks", "tasks", server=s) for s in ("mur", "rust-sdk")}
    load = {p: f.series("load", "rss", "tasks", process=p) for p in ("launcher", "lead", "helper")}
    if any(session.values()) or any(load.values()):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        for p, s in load.items():
            a.plot(list(s), [median(v) for v in s.values()], marker=".", label=p)
        a.set(xlabel="tasks", ylabel="RSS, MiB", title="A formation across its tasks (load)")
        a.legend()
        a.set_ylim(bottom=0)
        for name, s in session.items():
            b.plot(list(s), [median(v) for v in s.values()], label=name)
        b.axhline(64, color="k", linestyle=":", label="goal: mur < 64 MiB")
        b.axvline(10_000, color="grey", linestyle="--", linewidth=0.8)
        b.set(xlabel="tasks (SendMessage, 8 connections)", ylabel="RSS, MiB",
              title="One session across its tasks", yscale="log")
        b.legend()
        save(fig, "rss.png", "RSS across tasks")

    servers = [s for s in ("mur", "rust-sdk", "floor", "a2a-sdk")
               if f.stat("session", "idle_rss", server=s)]
    calls = [(m, c, l) for m, l in (("SendMessage", {}), ("GetTask", {}), ("ListTasks", {"tasks": 1000}))
             for c in (8, 64)]
    if servers:
        fig, ax = plt.subplots(figsize=(10, 4.5))
        width = 0.8 / len(servers)
        for i, s in enumerate(servers):
            st = [f.stat("session", "rps", server=s, method=m, connections=c, **l) for m, c, l in calls]
            xs = [j + i * width for j in range(len(calls))]
            ax.bar(xs, [x[0] if x else 0 for x in st], width,
                   yerr=[[x[0] - x[1] if x else 0 for x in st], [x[2] - x[0] if x else 0 for x in st]],
                   capsize=2, label=s)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(calls))],
                      [f"{m}\nc{c}" + (" (1,000 tasks)" if l else "") for m, c, l in calls])
        ax.set(ylabel="requests/s (log)", yscale="log", title="Requests/s per call per server")
        ax.legend()
        save(fig, "rps.png", "Requests/s per call per server")

    teardown = {st: f.series("formation", "teardown", "members", state=st) for st in ("idle", "busy")}
    if any(teardown.values()):
        fig, ax = plt.subplots(figsize=(6, 4))
        for st, s in teardown.items():
            ax.plot(list(s), [median(v) for v in s.values()], marker="o", label=st)
        ax.axhline(100, color="k", linestyle=":", label="goal: 100 ms")
        ax.set(xlabel="members", ylabel="ms, SIGKILL to the last member gone",
               title="Teardown after SIGKILL of the launcher")
        ax.legend()
        save(fig, "teardown.png", "Teardown against members")
    return made


def mark(met):
    return {True: "met", False: "**not met**", None: "not measured", "shown": ""}[met]


def render(results, out, table=None):
    f = Figures(results)
    os.makedirs(out, exist_ok=True)
    rows = goals(f)
    m = f.meta
    head = [
        "# Benchmark report",
        "",
        "Written by `just bench` (scripts/bench-report.py) from the figures of one run"
        + (" **in smoke mode: every bench at its smallest size, in the debug build; the"
           " numbers mean nothing**" if f.smoke else "") + ".",
        "",
        f"- Date: {m.get('date', '?')}; commit {m.get('commit', '?')}",
        f"- Machine: {m.get('cores', '?')} cores ({m.get('cpu', '?')}), {m.get('memory_gib', '?')} GiB,"
        f" Linux {m.get('kernel', '?')}",
        f"- Load average before the run: {' '.join(m.get('load', ['?']))};"
        f" after: {' '.join(open('/proc/loadavg').read().split()[:3])}",
        f"- Versions: {m.get('rustc', '?')}; peers: a2a-server-lf 0.4.4 (Rust SDK),"
        " a2a-sdk 1.3.0 with uvicorn (Python), a bare axum floor",
        "- Each figure: the median of its runs, (min–max, n runs). Servers ran in"
        " alternating rounds, all under the same load generator.",
        "",
    ]
    met = sum(1 for r in rows if r[3] is True)
    goal_rows = sum(1 for r in rows if r[3] != "shown")
    table_md = ["| Figure | Goal | Measured | |", "|---|---|---|---|"]
    table_md += [f"| {n} | {g} | {v} | {mark(ok)} |" for n, g, v, ok in rows]
    body = head + [f"## Goals: {met} of {goal_rows} met", ""] + table_md + [""]
    body += ["## Micro figures", "", "| Figure | Median (spread, runs) |", "|---|---|"]
    body += [f"| {n} | {spread(s, u)} |" for n, s, u in micro(f)]
    body += [""]
    for name, title in plots(f, out):
        body += [f"## {title}", "", f"![{title}]({name})", ""]
    with open(os.path.join(out, "report.md"), "w") as w:
        w.write("\n".join(body))
    if table and not f.smoke:
        doc = open(table).read()
        if BEGIN not in doc or END not in doc:
            sys.exit(f"{table}: no {BEGIN} … {END} markers for the goal table")
        stamp = f"From benchmarks/report.md ({m.get('date', '?')}, load {' '.join(m.get('load', ['?']))}):"
        new = "\n".join([BEGIN, stamp, ""] + table_md + [END])
        doc = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: new, doc, flags=re.S)
        open(table, "w").write(doc)
    print(f"{out}/report.md: {met} of {goal_rows} goals met")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["begin"] and len(a) == 2:
        begin(a[1])
    elif a[:1] == ["render"] and len(a) in (3, 5) and (len(a) == 3 or a[3] == "--table"):
        render(a[1], a[2], a[4] if len(a) == 5 else None)
    else:
        sys.exit(__doc__)
