#!/usr/bin/env python3
"""Turns `swift package benchmark` text output into the README's table: p50 wall-clock time per engine,
records per second, and Cellar's ratio to GRDB and to raw LMDB. Given several runs, each figure is the median of
its runs' p50s, and each ratio the median of the ratios within each run (engines are compared inside one run only).

Usage: swift package benchmark --no-progress > run1.txt  (and run2.txt, run3.txt)
       python3 table.py run1.txt run2.txt run3.txt
"""
import re
import statistics
import sys


def read_run(text, metric="wall clock"):
    p50 = {}
    for block in re.split(r"\n(?=\S[^\n]*\n╒)", text):
        name = block.strip().split("\n")[0]
        match = re.search(r"Time \(" + metric + r"\) \((\w+)\) \*?\s*│\s*[\d,]+\s*│\s*[\d,]+\s*│\s*([\d,]+)", block)
        if match and ": " in name:
            scale = {"ns": 1e-9, "us": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}[match.group(1)]
            p50[name] = int(match.group(2).replace(",", "")) * scale
    return p50


runs = [read_run(open(path).read()) for path in sys.argv[1:]] or [read_run(sys.stdin.read())]
p50 = {name: statistics.median(run[name] for run in runs if name in run) for name in runs[0]}

WHOLE = ("query", "open", "capture", "describe")
# One delivery each: shown as the time it takes, not as a rate.
LATENCY = ("deliver", "commit and deliver")

def count(task):
    # Queries, openings and schema descriptions are counted whole; the others count the records they handle.
    return 1 if task.startswith(WHOLE) else int(re.search(r"(\d+)", task).group(1))

tasks = []
for name in p50:
    task = name.split(": ")[0]
    if task not in tasks:
        tasks.append(task)

def moved(name):
    # Whether a figure moved by more than 20% between runs: marked in the table.
    values = [run[name] for run in runs if name in run]
    return len(values) > 1 and min(values) > 0 and max(values) / min(values) > 1.2

def row(task):
    def rate(engine):
        name = f"{task}: {engine}"
        if name not in p50:
            return "absent"
        seconds = p50[name]
        return count(task) / seconds if seconds else None

    def ratio(engine, cellar="Cellar"):
        # Cellar's speed over `engine`'s, within each run, then the median across runs.
        cellar_name, other = f"{task}: {cellar}", f"{task}: {engine}"
        pairs = [(run[other], run[cellar_name]) for run in runs if cellar_name in run and other in run]
        ratios = [o / c for o, c in pairs if c > 0 and o > 0]
        return statistics.median(ratios) if ratios else None

    def fmt(r):
        if r == "absent":
            return "—"
        if r is None:
            return "(below the clock's resolution)"
        if r >= 1e6:
            return f"{r / 1e6:.2f}M/s"
        return f"{r / 1e3:.0f}k/s" if r >= 1e4 else f"{r:,.0f}/s"

    def figure(engine):
        return fmt(rate(engine)) + (" †" if moved(f"{task}: {engine}") else "")

    def times(r, digits):
        # Small ratios keep two significant digits rather than showing 0.0×.
        return "—" if r is None else f"{r:.{max(digits, 2) if r < 0.1 else digits}f}×"

    # Cellar as it runs by default, and on one core where the benchmark has that variant.
    # The `@Record` model's rows follow the `Codable` model's.
    variants = ("Cellar", "Cellar (one core)", "Cellar @Record", "Cellar @Record (one core)")
    cellars = [c for c in variants if rate(c) != "absent"]
    label = {"Cellar": "", "Cellar (one core)": " (one core)", "Cellar @Record": " @Record",
             "Cellar @Record (one core)": " @Record (one core)"}
    grdbs = [e for e in ("GRDB", "GRDB fetchOne", "GRDB cached statement") if rate(e) != "absent"]
    cellar_cell = "<br>".join(figure(c) + label[c] for c in cellars) or "—"
    grdb_cell = "<br>".join(f"{figure(e)}{' (' + e[5:] + ')' if e != 'GRDB' else ''}" for e in grdbs) or "—"
    vs_grdb = "<br>".join(times(ratio(e, c), 1) + label[c] for c in cellars for e in grdbs) or "—"
    vs_raw = "<br>".join(times(ratio("raw LMDB", c), 2) + label[c] for c in cellars) if rate("raw LMDB") != "absent" else "—"
    return f"| {task} | {cellar_cell} | {figure('raw LMDB')} | {grdb_cell} | {vs_grdb} | {vs_raw} |"

header = "| operation | Cellar | raw LMDB | GRDB | Cellar vs GRDB | Cellar vs raw LMDB |\n| --- | ---: | ---: | ---: | ---: | ---: |"
def group(task):
    if task.startswith(LATENCY):
        return "latency"
    return "queries" if task.startswith("query") else "whole" if task.startswith(WHOLE) else "records"

def latency_row(task):
    def time(engine):
        seconds = p50.get(f"{task}: {engine}")
        if seconds is None:
            return "—"
        return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} µs"
    pairs = [(run[f"{task}: GRDB"], run[f"{task}: Cellar"]) for run in runs
             if f"{task}: GRDB" in run and f"{task}: Cellar" in run and run[f"{task}: Cellar"] > 0]
    vs = f"{statistics.median(g / c for g, c in pairs):.1f}×" if pairs else "—"
    return f"| {task} | {time('Cellar')} | {time('GRDB')} | {vs} |"

for kind, unit in (("records", "records per second"), ("queries", "queries per second"),
                   ("whole", "operations per second")):
    chosen = [task for task in tasks if group(task) == kind]
    if not chosen:
        continue
    print(f"\n{unit}:\n\n{header}")
    for task in chosen:
        print(row(task))
if len(runs) > 1:
    print("\n† moved by more than 20% between runs.")

chosen = [task for task in tasks if group(task) == "latency"]
if chosen:
    print("\ntime per delivery (lower is better):\n\n| operation | Cellar | GRDB | Cellar vs GRDB |\n| --- | ---: | ---: | ---: |")
    for task in chosen:
        print(latency_row(task))

def read_custom(text, metric):
    # The p50 of a custom metric, per benchmark.
    values = {}
    for block in re.split(r"\n(?=\S[^\n]*\n╒)", text):
        name = block.strip().split("\n")[0]
        match = re.search(re.escape(metric) + r"( \((K|M)\))?[^│]*│\s*[\d,]+\s*│\s*[\d,]+\s*│\s*([\d,]+)", block)
        if match and ": " in name:
            scale = {"K": 1_000, "M": 1_000_000}.get(match.group(2), 1)
            values[name] = int(match.group(3).replace(",", "")) * scale
    return values

cpu_runs = [read_custom(open(path).read(), "process CPU time") for path in sys.argv[1:]]
for name in (cpu_runs[0] if cpu_runs else {}):
    values = [run[name] for run in cpu_runs if name in run]
    print(f"\n{name.split(': ')[0]} (Cellar): {statistics.median(values):.0f} µs of process CPU time (median)")

decoded_runs = [read_custom(open(path).read(), "records decoded") for path in sys.argv[1:]]
for name in (decoded_runs[0] if decoded_runs else {}):
    values = [run[name] for run in decoded_runs if name in run]
    print(f"\nrecords decoded, {name}: {statistics.median(values):,.0f}")
