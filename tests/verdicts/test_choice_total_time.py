"""An autotuned kernel whose slower choice shows in its total time only: the duration judged
at the configuration's own recorded time passes, the total time (each run's launches x its
fastest) regresses, and the finding names the autotuner's choice, not a mechanism of the
kernel's code. Real gate captures: Triton's perfgate_rmsnorm_kernel, a baseline pooled over
h200-h, h200-i and h200-j (each start's runs; benchmarks/pooled.py), checked against h200-m's
two runs (held back for the pooled rule and evaluated once before this rule changed: that
evaluation counted it a false alarm, named "Register pressure cut occupancy")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfgate.ingest import read_captures
from perfgate.judge.comparison import State
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check

GATE = Path(__file__).resolve().parents[1] / "data" / "field" / "gate"


def _runs(start: str, n: int) -> list[Path]:
    return [GATE / start / f"triton-autotune-run{i}.csv.gz" for i in range(1, n + 1)]


def test_a_slower_choice_seen_in_the_total_time_alone_is_named_the_autotuners() -> None:
    paths = [p for s in ("h200-h", "h200-i", "h200-j") for p in _runs(s, 2)]
    capture = read_captures(paths)
    capture = replace(capture, starts=tuple((str(p), p.parent.name) for p in paths))
    base = record(capture, RecordSettings()).baseline
    result = check(base, read_captures(_runs("h200-m", 2)))
    verdict = next(v for v in result.verdicts if v.kernel == "perfgate_rmsnorm_kernel")
    states = {c.metric: c.state for c in verdict.comparisons}
    assert states["duration"] is State.PASS and states["total_time"] is State.REGRESSED
    assert verdict.headline is not None
    assert verdict.headline.mechanism == "autotuned-configuration"
    assert "not seen when recorded" in verdict.headline.detail
