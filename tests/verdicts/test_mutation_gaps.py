"""The gaps the mutation run of the verdicts left (docs/mutation.md, "Verdicts, grouping,
phases, baseline checks": "Gaps, not shown equivalent"), each through a real check.

Every capture here is SYNTHETIC, derived in memory from a real one of tests/data: each test
says which file, which launches and which of their values it changed; every other value is
the real capture's. The baselines are baselines/h100/zoo.yaml and one recorded from the real
h100-a decoder runs, changed where a test says so."""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import replace

import pytest

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline, KernelBaseline, LaunchConfig
from perfgate.causes.model import CauseKind
from perfgate.common.errors import CaptureError
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.values import check_values
from perfgate.verdicts.check import check
from perfgate.verdicts.model import KernelVerdict
from tests.conftest import ROOT, data

FIELD = ROOT / "tests" / "data" / "field"


@functools.cache
def _zoo() -> Baseline:
    return load_baseline(ROOT / "baselines" / "h100" / "zoo.yaml")


def _entry(baseline: Baseline, kid: str) -> KernelBaseline:
    return next(k for k in baseline.kernels if k.id == kid)


def _with_entry(baseline: Baseline, kid: str, **changes: object) -> Baseline:
    kernels = tuple(replace(k, **changes) if k.id == kid else k for k in baseline.kernels)  # type: ignore[arg-type]
    return replace(baseline, kernels=kernels)


def _verdict(verdicts: tuple[KernelVerdict, ...], kid: str) -> KernelVerdict:
    return next(v for v in verdicts if v.kernel == kid)


def _of(capture: Capture, function: str) -> list[Launch]:
    return [la for la in capture.launches if la.name.startswith(f"{function}(")]


def _renamed_atomics(capture: Capture) -> tuple[Launch, ...]:
    """zoo_atomics' launches renamed zoo2_atomics: one user kernel gone, another new (the
    change the findings are made for)."""
    return tuple(
        replace(la, name=la.name.replace("zoo_atomics", "zoo2_atomics"))
        if la.name.startswith("zoo_atomics(")
        else la
        for la in capture.launches
    )


def test_a_user_kernel_slower_at_a_configuration_never_recorded_is_a_configuration_finding() -> (
    None
):
    """absent.change_findings' configuration finding (absent.py 233-241). The baseline is
    zoo.yaml with zoo_registers pinned at the grid and block its entry recorded (a baseline's
    `configurations`, one of them: as record writes for a kernel at one configuration).
    SYNTHETIC capture, from the real tests/data/h100/zoo-bad-short-run1.csv (zoo_registers
    there is 10% slower than recorded): zoo_registers' three launches moved from grid
    16384x1x1 to 8192x1x1, and zoo_atomics' launches renamed zoo2_atomics (change findings
    are made where kernels are gone or new)."""
    entry = _entry(_zoo(), "zoo_registers")
    pinned = LaunchConfig(entry.match.grid, entry.match.block, runs=3)
    baseline = _with_entry(_zoo(), "zoo_registers", configurations=(pinned,))
    capture = read_captures([data("zoo-bad-short-run1.csv")])
    launches = tuple(
        replace(la, grid=(8192, 1, 1)) if la.name.startswith("zoo_registers(") else la
        for la in _renamed_atomics(capture)
    )
    result = check(baseline, replace(capture, launches=launches))
    verdict = _verdict(result.verdicts, "zoo_registers")
    assert verdict.state is KernelState.REGRESSED and verdict.matched_by == "reconfigured"
    assert verdict.family is None  # the program's own kernel
    time = next(c for c in verdict.comparisons if c.metric == "total_time")
    assert time.state is State.REGRESSED
    found = [f for f in result.changes if f.kind == "configuration"]
    assert len(found) == 1, [f.kind for f in result.changes]
    finding = found[0]
    # Only the reconfigured kernel: the other regressed kernels (zoo-bad's, at their recorded
    # configurations) and the renamed one are not of this change.
    others = {v.kernel for v in result.verdicts if v.state is KernelState.REGRESSED}
    assert others - {"zoo_registers"}
    assert finding.members == ("zoo_registers",)
    assert [n for n, _ in finding.replaced] == [n for n, _ in finding.by]
    assert "zoo_registers" in finding.title
    # Its total time a run, as recorded (the entry's total_time) and now (its comparison).
    recorded = entry.value("total_time")
    assert isinstance(recorded, float)
    assert finding.before_ns == pytest.approx(recorded)
    assert finding.after_ns == pytest.approx(float(time.current))  # type: ignore[arg-type]
    assert finding.after_ns > finding.before_ns
    # A kernel of a library at a new configuration is the library's choice, not this change:
    # the same capture against the entry named as cuBLAS's gives no configuration finding.
    library = _with_entry(baseline, "zoo_registers", family="cuBLAS")
    assert _verdict(check(library, replace(capture, launches=launches)).verdicts,
                    "zoo_registers").family == "cuBLAS"  # fmt: skip
    assert not [
        f for f in check(library, replace(capture, launches=launches)).changes
        if f.kind == "configuration"
    ]  # fmt: skip


def test_a_kernel_gone_whose_entry_has_no_launch_count_counts_one_launch_a_run() -> None:
    """absent.change_findings' `k.launches or 1` (absent.py 204-205). zoo.yaml with
    zoo_atomics' launch count taken out (a hand-written entry may have none); SYNTHETIC
    capture from the real tests/data/h100/zoo-bad-short-run1.csv, zoo_atomics' three launches
    renamed zoo2_atomics. The kernel gone ran at least once a run: it is listed with one
    launch; the new kernel with its three."""
    assert _entry(_zoo(), "zoo_atomics").launches == 3
    capture = read_captures([data("zoo-bad-short-run1.csv")])
    new = len(_of(capture, "zoo_atomics"))
    for launches, gone in ((None, 1.0), (3, 3.0)):
        baseline = _with_entry(_zoo(), "zoo_atomics", launches=launches)
        result = check(baseline, replace(capture, launches=_renamed_atomics(capture)))
        states = {v.kernel: v.state for v in result.verdicts}
        assert states["zoo_atomics"] is KernelState.MISSING
        assert states["zoo2_atomics"] is KernelState.NEW
        finding = next(f for f in result.changes if any("zoo_atomics" in n for n, _ in f.replaced))
        assert [c for n, c in finding.replaced if "zoo_atomics" in n] == [gone]
        assert [c for n, c in finding.by if "zoo2_atomics" in n] == [float(new)]


def test_a_recounted_kernel_with_a_cause_besides_its_launch_count_is_still_recounted() -> None:
    """absent.change_findings' recounted kernels (absent.py 227): only the kernel's
    regressions must all be its launch count; a cause of another kind (NCU's rules, a change)
    leaves it under the change. The real change hf-decoder-sdpa-math (h100-e) against the
    h100-a decoder baseline: its attention finding holds two copy kernels launched more often.
    SYNTHETIC: the first copy kernel's launches carry an NCU rule that fires (SOLBottleneck,
    30% estimated speedup), as a .ncu-rep captured with sections would."""
    baseline = record(
        read_captures([FIELD / "h100" / "h100-a" / f"hf-decoder-run{i}.csv.gz" for i in (1, 2, 3)]),
        RecordSettings(),
    ).baseline
    capture = read_captures([FIELD / "changes" / "h100-e" / "hf-decoder-sdpa-math-run1.csv.gz"])
    plain = check(baseline, capture)
    recounted = [
        v for v in plain.verdicts if v.headline is not None and v.headline.mechanism == "launch-count"
    ]  # fmt: skip
    assert len(recounted) == 2
    (attention,) = [f for f in plain.changes if f.kind == "attention"]
    assert {r.kernel for r in recounted} <= set(attention.members)
    ruled = recounted[0]
    launches = tuple(
        replace(
            la,
            rules={"SOLBottleneck": "a rule that fires"},
            metrics={**la.metrics, "ncu_rule.SOLBottleneck": 30.0},
        )
        if la.name == ruled.name
        else la
        for la in capture.launches
    )
    result = check(baseline, replace(capture, launches=launches))
    verdict = _verdict(result.verdicts, ruled.kernel)
    kinds = {c.mechanism: c.kind for c in verdict.causes}
    assert kinds == {"launch-count": CauseKind.REGRESSION, "ncu-rules": CauseKind.CHANGE}
    (after,) = [f for f in result.changes if f.kind == "attention"]
    assert after.members == attention.members
    assert after.recounted == attention.recounted


def test_a_column_the_table_cannot_hold_sends_its_metric_the_plain_way() -> None:
    """passing.Passing._route (passing.py 59): a column with an infinite value cannot be held
    by the column table (perfgate.metrics.columns), so the metrics read from it have no route
    and every kernel compares them the plain way. SYNTHETIC, from the real
    tests/data/h100/zoo-good-short-run1.csv: the last zoo_registers launch's
    sm__maximum_warps_per_active_cycle_pct (theoretical_occupancy) set to inf. A check from
    the command line refuses the value first (check_values); check() itself judges it."""
    capture = read_captures([data("zoo-good-short-run1.csv")])
    column = "sm__maximum_warps_per_active_cycle_pct"
    last = _of(capture, "zoo_registers")[-1]
    bad = replace(last, metrics={**last.metrics, column: math.inf})
    changed = replace(capture, launches=tuple(bad if la is last else la for la in capture.launches))
    with pytest.raises(CaptureError, match="infinite"):
        check_values(changed)
    result = check(_zoo(), changed)
    assert {v.state for v in result.verdicts} == {KernelState.PASS}
    raw = [float(la.metrics[column]) for la in _of(changed, "zoo_registers")]  # type: ignore[arg-type]
    occupancy = next(
        c for c in _verdict(result.verdicts, "zoo_registers").comparisons
        if c.metric == "theoretical_occupancy"
    )  # fmt: skip
    assert occupancy.state is State.PASS
    assert occupancy.current == pytest.approx(statistics.median(raw))
