"""Measure how far unchanged re-captures stray from a baseline, per metric (docs/noise.md).

For every set of repeated captures (separate ncu runs of one unchanged build), take each run
in turn as "the check", record a baseline from the other runs, and measure how far the check's
median lies outside the baseline's launch range, in absolute units and relative to the median.
The maximum over kernels and runs is what a default threshold must exceed.

    python tests/zoo/noise_report.py tests/data/h100/zoo-good-short-run*.csv
"""

from __future__ import annotations

import argparse
import collections
import sys

from perfgate.catalog import default_metrics, lookup
from perfgate.ingest import read_capture
from perfgate.measure import Measured, measure
from perfgate.record import _group_launches


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="+", help="captures of separate runs of one build")
    args = ap.parse_args(argv)
    caps = [read_capture(p) for p in args.captures]
    cc = caps[0].launches[0].cc
    names = default_metrics(caps[0].columns, cc)
    excess: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
    launch_spread: dict[str, list[float]] = collections.defaultdict(list)
    run_spread: dict[str, list[float]] = collections.defaultdict(list)
    for i, held_out in enumerate(caps):
        rest = [c for j, c in enumerate(caps) if j != i]
        groups = {g[0].name: g for g in _group_launches(held_out.launches)}
        rest_launches = [la for c in rest for la in c.launches]
        for kname, group in groups.items():
            base_group = [la for la in rest_launches if la.name == kname]
            if not base_group:
                continue
            for name in names:
                defn = lookup(name)
                if defn.categorical:
                    continue
                b = measure(defn, base_group, held_out.columns)
                c = measure(defn, group, held_out.columns)
                if not isinstance(b, Measured) or not isinstance(c, Measured):
                    continue
                bv, cv = float(b.value), float(c.value)
                lo, hi = float(b.low), float(b.high)  # type: ignore[arg-type]
                out = max(cv - hi, lo - cv, 0.0)
                rel = out / abs(bv) if bv else (0.0 if out == 0 else float("inf"))
                excess[name].append((out, rel, group[0].function))
                if bv:
                    launch_spread[name].append((hi - lo) / abs(bv))
                    run_spread[name].append(abs(cv - bv) / abs(bv))
    print(
        f"{len(caps)} runs, {len(caps[0].launches)} launches in the first; "
        "excess = how far a held-out run's median lies outside the other runs' launch range"
    )
    print(
        "| metric | worst excess (abs) | worst excess (rel) | kernel | launch spread max | run-to-run max |"
    )
    print("|---|---|---|---|---|---|")
    for name in names:
        if name not in excess:
            continue
        worst_abs = max(excess[name], key=lambda t: t[0])
        worst_rel = max(excess[name], key=lambda t: t[1] if t[0] > 0 else -1)
        ls = max(launch_spread[name], default=0.0)
        rs = max(run_spread[name], default=0.0)
        print(
            f"| {name} | {worst_abs[0]:.4g} | {worst_rel[1] * 100:.2f}% | {worst_abs[2][:40]} | "
            f"{ls * 100:.1f}% | {rs * 100:.1f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
