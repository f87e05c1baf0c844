"""Measure how far unchanged re-captures stray from a baseline, per metric (docs/noise.md).

Each --group is a set of captures of one unchanged build, taken in separate ncu runs. Every
run in turn is "the check": a baseline is recorded from the other runs of its group, and the
report measures how far the check's median lies outside that baseline's launch range (the
excess, which is what the gate judges), next to the default bound that must not be exceeded.

    python tests/zoo/noise_report.py \
        --group zoo tests/data/h100/session1/zoo-good-short-run?.csv.gz tests/data/h100/zoo-good-short-run?.csv \
        --group torch tests/data/h100/session1/torch-short-run?.csv.gz tests/data/h100/torch-short-run?.csv \
        --group zoo-full tests/data/h100/zoo-good-full-run?.csv.gz
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass, field

from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, Launch
from perfgate.metrics.catalog import default_metrics, lookup
from perfgate.metrics.measure import Measured, measure
from perfgate.metrics.thresholds import Direction, describe_bound


@dataclass
class Worst:
    excess: float = 0.0
    excess_rel: float = 0.0
    where: str = "-"
    launch_spread: float = 0.0
    run_spread: float = 0.0
    samples: int = 0
    groups: set[str] = field(default_factory=set)


def _by_name(launches: tuple[Launch, ...] | list[Launch]) -> dict[str, list[Launch]]:
    out: dict[str, list[Launch]] = {}
    for launch in launches:
        out.setdefault(launch.name, []).append(launch)
    return out


def analyse(groups: dict[str, list[str]], baseline_runs: int | None = None) -> dict[str, Worst]:
    """`baseline_runs`: record each baseline from every combination of this many other runs
    (None: from all other runs)."""
    worst: dict[str, Worst] = {}
    for label, paths in groups.items():
        caps = [read_capture(p) for p in paths]
        columns = frozenset.intersection(*(c.columns for c in caps))
        names = default_metrics(columns, caps[0].launches[0].cc)
        for i, held_out in enumerate(caps):
            others = [c for j, c in enumerate(caps) if j != i]
            size = len(others) if baseline_runs is None else baseline_runs
            for chosen in itertools.combinations(others, size):
                _compare(label, held_out, chosen, columns, names, worst)
    return worst


def _compare(
    label: str,
    held_out: Capture,
    chosen: tuple[Capture, ...],
    columns: frozenset[str],
    names: list[str],
    worst: dict[str, Worst],
) -> None:
    rest = _by_name([la for c in chosen for la in c.launches])
    for kname, group in _by_name(held_out.launches).items():
        if kname not in rest:
            continue
        for name in names:
            defn = lookup(name)
            if defn.categorical:
                continue
            b = measure(defn, rest[kname], columns)
            c = measure(defn, group, columns)
            if not isinstance(b, Measured) or not isinstance(c, Measured):
                continue
            bv, cv = float(b.value), float(c.value)
            lo, hi = float(b.low or bv), float(b.high or bv)
            direction = defn.direction
            worse = {Direction.HIGHER_IS_WORSE: cv - hi, Direction.LOWER_IS_WORSE: lo - cv}
            out = max(worse.get(direction, max(cv - hi, lo - cv)), 0.0)
            w = worst.setdefault(name, Worst())
            w.samples += 1
            w.groups.add(label)
            rel = out / abs(bv) if bv else 0.0
            if out > w.excess:
                w.excess, w.excess_rel = out, rel
                w.where = f"`{group[0].function[:34]}` ({label})"
            if bv:
                w.launch_spread = max(w.launch_spread, (hi - lo) / abs(bv))
                w.run_spread = max(w.run_spread, abs(cv - bv) / abs(bv))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--group", nargs="+", action="append", required=True, metavar=("LABEL", "CAPTURE"),
                    help="a label, then the captures of separate runs of one build")  # fmt: skip
    ap.add_argument(
        "--baseline-runs",
        type=int,
        help="record each baseline from this many other runs (default: all)",
    )
    args = ap.parse_args(argv)
    groups = {g[0]: g[1:] for g in args.group}
    worst = analyse(groups, args.baseline_runs)
    print(
        "| metric | default bound | worst launch spread | worst run-to-run | worst excess | of the median | where | within bound |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, w in worst.items():
        defn = lookup(name)
        t = defn.threshold
        trips = w.excess > t.absolute and w.excess > t.relative * (
            w.excess / w.excess_rel if w.excess_rel else 0.0
        )
        bound = describe_bound(t, defn.direction, defn.unit)
        print(f"| `{name}` | {bound} | {w.launch_spread * 100:.1f}% | {w.run_spread * 100:.1f}% "
              f"| {w.excess:.4g} | {w.excess_rel * 100:.1f}% | {w.where} | {'NO' if trips else 'yes'} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
