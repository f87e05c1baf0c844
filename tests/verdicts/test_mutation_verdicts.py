"""The verdicts of kernels a capture does not hold (perfgate.verdicts.absent), held to what
their entry and the capture say: the tests written for the survivors of scripts/mutate.py over
verdicts/absent.py (docs/mutation.md, "Verdicts, grouping, phases, baseline checks").

The captures are real: the BERT encoder of tests/data/field/h100 (h100-a's three runs recorded,
h100-b's run checked) and the MoE gate runs of tests/data/field/gate (h100-m recorded, h100-n
checked). Where a test changes a capture, it is SYNTHETIC, derived in memory from the real
one: the test says which launches it moved; every other value is the real capture's.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.baseline.load import load_baseline, parse_baseline
from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.causes import substitution_cause
from perfgate.causes.model import Side
from perfgate.common.errors import BaselineError, CaptureError
from perfgate.identity.grouping import (
    KernelGroup,
    KernelKey,
    log_distance,
    new_ids,
    pair_work_classes,
    readable_ids,
)
from perfgate.identity.matching import SPLIT, recorded_work
from perfgate.ingest import read_capture, read_captures
from perfgate.ingest.launches import Capture, Launch
from perfgate.ingest.meta import CaptureMeta
from perfgate.ingest.names import function_name, short_name, unqualified
from perfgate.ingest.phases import fold_diagnosis, read_phased, same_program
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts import absent, passing
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.metric import compare_one
from perfgate.verdicts.model import KernelVerdict
from tests.conftest import ROOT, data
from tests.twophase_data import gate_capture, sidecar

FIELD = Path(__file__).resolve().parents[1] / "data" / "field"
ENCODER = FIELD / "h100"
GATE = FIELD / "gate"
NVJET = "nvjet_sm90_hsh_96x64_64x10_1x2_h_bz_bias_TNN"
LAYER_NORM = "vectorized_layer_norm_kernel"
WORK = "smsp__inst_executed.sum"


@functools.cache
def _encoder() -> tuple[Baseline, Capture]:
    runs = [ENCODER / "h100-a" / f"hf-encoder-run{i}.csv.gz" for i in (1, 2, 3)]
    baseline = record(read_captures(runs), RecordSettings()).baseline
    return baseline, read_captures([ENCODER / "h100-b" / "hf-encoder-run1.csv.gz"])


@functools.cache
def _moe() -> tuple[Baseline, Capture]:
    runs = [GATE / "h100-m" / f"moe-run{i}.csv.gz" for i in (1, 2, 3)]
    baseline = record(read_captures(runs), RecordSettings()).baseline
    return baseline, read_captures([GATE / "h100-n" / "moe-run1.csv.gz"])


def _verdict(verdicts: tuple[KernelVerdict, ...], kid: str) -> KernelVerdict:
    return next(v for v in verdicts if v.kernel == kid)


def _work(launch: Launch) -> float:
    return float(launch.metrics[WORK])  # type: ignore[arg-type]


def test_a_skipped_kernel_counts_its_recorded_launches_and_none_in_each_file() -> None:
    """A kernel only some recorded runs launched, absent from the check: its verdict still says
    how often the baseline recorded it a run, and 0 launches in every capture file."""
    baseline, capture = _moe()
    result = check(baseline, capture)
    skipped = [v for v in result.verdicts if v.state is KernelState.SKIPPED]
    assert skipped
    entries = {k.id: k for k in baseline.kernels}
    for v in skipped:
        kernel = entries[v.kernel]
        assert kernel.seen_in is not None and kernel.launches is not None
        assert v.launches is not None
        assert v.launches.baseline == float(kernel.launches)
        assert v.launches.current == (0,) * len(capture.paths)
        assert v.name == (kernel.name or kernel.match.name)


def _work_gone(factors: tuple[float, ...] = (0.3,)) -> tuple[KernelVerdict, list[float], Launch]:
    """The encoder's big GEMM class (#work2) running `factors` x the small class's
    instructions, one launch each (tests/identity/test_work_classes.py: 0.3 alone; the others are
    copies of its launch after the capture's last): missing, its work replaced by classes of
    other work."""
    baseline, capture = _encoder()
    nvjet = sorted((la for la in capture.launches if la.name == NVJET), key=lambda la: la.index)
    big = next(la for la in nvjet if _work(la) > 1e6)
    small = next(la for la in nvjet if _work(la) < 1e6)
    now = [_work(small) * f for f in factors]
    last = max(la.index for la in capture.launches)
    changed = replace(big, metrics={**big.metrics, WORK: now[0]})
    copies = tuple(
        replace(big, index=last + i, metrics={**big.metrics, WORK: w})
        for i, w in enumerate(now[1:], start=1)
    )
    launches = tuple(changed if la is big else la for la in capture.launches) + copies
    moved = replace(capture, launches=launches)
    return _verdict(check(baseline, moved).verdicts, f"{NVJET} #work2"), now, big


def test_a_missing_work_class_names_the_work_that_runs_now_and_its_kernel() -> None:
    verdict, (now,), big = _work_gone()
    assert verdict.state is KernelState.MISSING
    # The entry's id carries the class (#work2); its name is the kernel's.
    assert verdict.name == NVJET
    assert f"now run other work ({now:,.0f} instructions)" in verdict.message
    # The class's work as its entry recorded it (the recorded runs', not this capture's).
    entry = next(k for k in _encoder()[0].kernels if k.id == verdict.kernel)
    recorded = recorded_work(entry)
    assert recorded is not None and abs(recorded - _work(big)) < 0.01 * recorded
    assert f"recorded at {recorded:,.0f} instructions a launch" in verdict.message
    # The recorded count a run (one launch of the big class in each recorded run).
    assert verdict.launches is not None and verdict.launches.baseline == 1.0
    assert verdict.launches.current == (0,)


def test_a_work_class_replaced_by_four_names_three_of_their_counts() -> None:
    verdict, now, _ = _work_gone((0.3, 0.1, 0.03, 0.01))
    assert verdict.state is KernelState.MISSING and len(verdict.related) == 4
    named = [w for w in now if f"{w:,.0f}" in verdict.message]
    assert len(named) == 3, verdict.message


def _reshaped(count: int) -> tuple[KernelVerdict, list[tuple[int, int, int]]]:
    """The encoder's layer norm (3 launches at grid 2048, one entry) launched at `count` other
    grids, one launch each (copies of its first launch after the last launch where it had
    fewer): the same kernel at new shapes, so missing with the shapes it now runs."""
    baseline, capture = _encoder()
    ours = sorted((la for la in capture.launches if LAYER_NORM in la.name), key=lambda la: la.index)
    last = max(la.index for la in capture.launches)
    copies = [replace(ours[0], index=last + 1 + i) for i in range(count - len(ours))]
    grids = [(1024 >> i, 1, 1) for i in range(count)]
    moved = {id(la): g for la, g in zip([*ours, *copies], grids, strict=True)}
    launches = tuple(
        replace(la, grid=moved[id(la)]) if id(la) in moved else la
        for la in (*capture.launches, *copies)
    )
    entry = next(k for k in baseline.kernels if LAYER_NORM in k.id)
    return _verdict(check(baseline, replace(capture, launches=launches)).verdicts, entry.id), grids


def test_a_kernel_at_new_shapes_is_missing_with_at_most_three_shapes_and_four_names() -> None:
    """Five new shapes: the message names three of them, the evidence four kernels, the
    verdict relates all five (the report's other lines list the rest)."""
    verdict, grids = _reshaped(5)
    assert verdict.state is KernelState.MISSING
    assert verdict.message.startswith("launch shape changed: recorded at grid (2048, 1, 1)")
    named = [g for g in grids if f"grid {g} " in verdict.message]
    assert len(named) == 3, verdict.message
    assert len(verdict.related) == 5
    (cause,) = verdict.causes
    assert cause.title == "Launch shape changed"
    (evidence,) = cause.evidence
    assert isinstance(evidence.after, str) and len(evidence.after.split("; ")) == 4


def test_three_new_shapes_are_each_named_in_the_message() -> None:
    verdict, grids = _reshaped(3)
    assert verdict.state is KernelState.MISSING
    assert all(f"grid {g} block" in verdict.message for g in grids), verdict.message


def _groups(count: int) -> tuple[list[KernelGroup], dict[KernelKey, str]]:
    keys = [KernelKey(f"k{i}", (i + 1, 1, 1), (32, 1, 1)) for i in range(count)]
    return [KernelGroup(k, ()) for k in keys], {k: f"id{i}" for i, k in enumerate(keys)}


@pytest.mark.parametrize("count", [1, 4, 5, 7])
def test_the_replacing_kernels_are_listed_up_to_four(count: int) -> None:
    """A kernel replaced by several new ones: its message names four at most, then how many
    more (no real capture replaces a kernel by more than four)."""
    groups, ids = _groups(count)
    shown = min(count, 4)
    expected = ", ".join(f"id{i}" for i in range(shown))
    if count > 4:
        expected += f" and {count - 4} more"
    assert absent._names(groups, ids) == expected


@pytest.mark.parametrize(
    "source",
    [
        FIELD / "h100" / "h100-e" / "hf-decoder-run1.csv.gz",
        ROOT / "tests" / "data" / "h100" / "zoo-good-full-run1.csv.gz",
    ],
    ids=lambda p: p.name,
)
def test_a_diagnosis_capture_lends_the_mean_of_a_kernels_launches(
    tmp_path: Path, source: Path
) -> None:
    """perfgate.ingest.phases.fold_diagnosis: a gate capture derived from a real full capture
    (tests/twophase_data.gate_capture) completed by that capture's launches: each counter the
    gate set lacks is, on every launch of a kernel, the mean of the diagnosis launches of the
    same name and shape, never one of them (the largest, the first); a value that is not a
    number (ncu's "no data") is the first launch's that has one."""
    gate = read_capture(gate_capture(source, tmp_path / "gate.csv"))
    diagnosis = read_capture(source)
    folded = fold_diagnosis(gate, diagnosis)
    extra = sorted(diagnosis.columns - gate.columns)
    assert extra
    donors: dict[tuple[object, ...], list[Launch]] = {}
    for la in diagnosis.launches:
        donors.setdefault((la.name, la.grid, la.block), []).append(la)
    varied = labels = 0
    for la in folded.launches:
        own = donors[(la.name, la.grid, la.block)]
        for column in extra:
            values = [d.metrics.get(column) for d in own]
            numbers = [v for v in values if isinstance(v, float)]
            if numbers:
                assert la.metrics[column] == pytest.approx(sum(numbers) / len(numbers), rel=1e-12)
                varied += len(set(numbers)) > 1
            elif any(v is not None for v in values):
                assert la.metrics[column] == next(v for v in values if v is not None)
                labels += 1
    # Kernels whose counters differ between their launches, where a mean is no one launch's
    # value; the zoo's full capture has ncu's "no data" for its spilling counters.
    assert varied > 0
    assert labels > 0 or "zoo" not in source.name


def test_a_diagnosis_capture_of_another_gpu_is_told_by_its_sidecar() -> None:
    """perfgate.ingest.phases.same_program: a diagnosis capture whose launches name no device
    (a capture without the device columns) is of the GPU its sidecar says: an H200 sidecar, or
    another compute capability, beside a real H100 gate capture is refused."""
    gate = read_captures([ENCODER / "h100-a" / "hf-encoder-run1.csv.gz"])
    assert {la.device for la in gate.launches} == {"NVIDIA H100 80GB HBM3"}
    bare = replace(gate, launches=tuple(replace(la, device=None, cc=None) for la in gate.launches))
    same_program(
        gate,
        bare,
        "d.csv",
        meta=CaptureMeta("d.csv.meta.json", gpu="NVIDIA H100 80GB HBM3", cc="9.0"),
    )
    for gpu, cc in (("NVIDIA H200", "9.0"), ("NVIDIA H100 80GB HBM3", "10.0")):
        with pytest.raises(CaptureError, match="a diagnosis capture of another GPU"):
            same_program(gate, bare, "d.csv", meta=CaptureMeta("d.csv.meta.json", gpu=gpu, cc=cc))


PAIR = FIELD / "twophase"
PAIR_GATE = PAIR / "hf-decoder-regressed.csv"
PAIR_DIAGNOSIS = PAIR / "hf-decoder-regressed.diagnosis.csv"


def test_the_diagnosis_lends_its_units_rules_and_source_lines() -> None:
    """The real `--phases auto` pair of tests/data/field/twophase: each counter lent keeps its
    unit. ncu's rule results and source lines come only from a report (.ncu-rep), which this
    pair is not: they are added to its diagnosis launches here (SYNTHETIC) and must reach the
    gate capture's launches of those kernels, which have none of their own."""
    gate, diagnosis = read_capture(PAIR_GATE), read_capture(PAIR_DIAGNOSIS)
    ruled = replace(
        diagnosis,
        launches=tuple(
            replace(la, rules={"R": la.name}, lines={"c": (("k.cu:1", 1.0),)})
            for la in diagnosis.launches
        ),
    )
    folded = fold_diagnosis(gate, ruled)
    lent = [la for la in folded.launches if la.rules]
    assert lent and all(not la.rules for la in gate.launches)
    for la in lent:
        assert la.lines == {"c": (("k.cu:1", 1.0),)}
        assert unqualified(str(la.rules["R"])) == unqualified(la.name)
    extra = diagnosis.columns - gate.columns
    units = {c: u for d in diagnosis.launches for c, u in d.units.items() if c in extra}
    assert units
    for la in lent:
        for column, unit in units.items():
            if column in la.metrics:
                assert la.units[column] == unit, column


def _phased(tmp_path: Path, gate: Capture, scope: str | None) -> Capture:
    """read_phased over a gate capture and the real pair's diagnosis capture, each with the
    sidecar perfgate capture writes (the gate's scope as given), read from memory."""
    files = {"gate.csv": gate, "gate.diagnosis.csv": read_capture(PAIR_DIAGNOSIS)}
    for name in files:
        (tmp_path / name).write_text("")
    more = {"scope": scope} if scope else {}
    sidecar(tmp_path / "gate.csv", "gate", diagnosis="gate.diagnosis.csv", **more)
    sidecar(tmp_path / "gate.diagnosis.csv", "diagnosis")
    return read_phased([str(tmp_path / "gate.csv")], lambda p: files[Path(p).name])


def test_a_gate_capture_cut_by_its_sidecars_launch_count_compares_functions(
    tmp_path: Path,
) -> None:
    """SYNTHETIC, from the real pair (as tests/ingest/test_diagnosis_refusal.py): the gate capture
    without its CompareEqFunctor launch. Its sidecar's scope says whether a --launch-count
    cut it: then the diagnosis may hold that kernel (the same function), else it is refused."""
    gate = read_capture(PAIR_GATE)
    cut = replace(
        gate, launches=tuple(la for la in gate.launches if "CompareEqFunctor" not in la.name)
    )
    assert len(cut.launches) < len(gate.launches)
    assert _phased(tmp_path, cut, "--launch-count 1000").diagnosis_paths
    with pytest.raises(CaptureError, match="never ran in the gate capture"):
        _phased(tmp_path, cut, None)


@pytest.mark.parametrize("count", [3, 4, None])
def test_a_diagnosis_of_another_program_names_three_of_its_kernels(count: int | None) -> None:
    """The real H100 encoder capture (h100-a) as the diagnosis of the real decoder pair's gate
    capture: another program; the error names three of the kernels it holds that the gate
    capture never ran, and how many more. `count`: only the launches of that many of them
    (the first in name order), None: all."""
    gate = read_capture(PAIR_GATE)
    other = read_capture(ENCODER / "h100-a" / "hf-encoder-run1.csv.gz")
    held = {unqualified(la.name) for la in gate.launches}
    strangers = sorted({la.name for la in other.launches if unqualified(la.name) not in held})
    assert len(strangers) > 4
    strangers = strangers[:count]
    other = replace(other, launches=tuple(la for la in other.launches if la.name in strangers))
    with pytest.raises(CaptureError) as refused:
        same_program(gate, other, "other.csv")
    text = str(refused.value)
    assert f"{len(strangers)} kernels it holds never ran" in text
    assert sum(name in text for name in strangers) == 3
    assert ("more)" in text) is (len(strangers) > 3)
    if len(strangers) > 3:
        assert f"and {len(strangers) - 3} more)" in text


def test_a_class_member_kernel_is_its_function_without_the_class() -> None:
    """A gate capture cut by a count compares kernel functions without namespace or class
    (ncu prints a diagnosis capture's names without them). SYNTHETIC, from the real pair: its
    gate capture's gather kernel renamed as a member of a class template
    (`Gather<long>::vectorized_gather_kernel`, which unqualified() keeps), the diagnosis
    printing the bare function: the same function, accepted."""
    gate, diagnosis = read_capture(PAIR_GATE), read_capture(PAIR_DIAGNOSIS)
    member = "void Gather<long>::vectorized_gather_kernel<16, long>(char *)"
    bare = "void vectorized_gather_kernel<16, long>(char *)"
    renamed = replace(
        gate,
        launches=tuple(
            replace(la, name=member) if "vectorized_gather_kernel" in la.name else la
            for la in gate.launches
        ),
    )
    plain = replace(
        diagnosis,
        launches=tuple(
            replace(la, name=bare) if "vectorized_gather_kernel" in la.name else la
            for la in diagnosis.launches
        ),
    )
    assert "::" in function_name(unqualified(member))
    same_program(renamed, plain, "d.csv", cut=True)
    with pytest.raises(CaptureError):
        same_program(renamed, plain, "d.csv")


def test_a_user_kernel_replaced_by_another_is_no_librarys_pick() -> None:
    """perfgate.causes.substitution: the zoo's own zoo_registers (user code, no library
    family) replaced by a kernel of another name launched where it ran. SYNTHETIC, from the
    real tests/data/h100/zoo-good-short-run1.csv: its launches renamed zoo2_registers. No
    library picked it: the cause says what replaced the kernel, never "<family> picked a
    different kernel" (a family of None)."""
    baseline = load_baseline(ROOT / "baselines" / "h100" / "zoo.yaml")
    capture = read_captures([data("zoo-good-short-run1.csv")])
    renamed = tuple(
        replace(la, name=la.name.replace("zoo_registers", "zoo2_registers"))
        if la.name.startswith("zoo_registers(")
        else la
        for la in capture.launches
    )
    assert renamed != capture.launches
    result = check(baseline, replace(capture, launches=renamed))
    (missing,) = [v for v in result.verdicts if v.state is KernelState.MISSING]
    assert missing.kernel == "zoo_registers" and missing.family is None
    assert missing.related == ("zoo2_registers",)
    (cause,) = missing.causes
    assert cause.mechanism == "substitution"
    assert "picked" not in cause.title and "None" not in cause.title, cause.title
    # A user kernel in place of a user kernel: user code, not PyTorch's math path.
    assert cause.title == "the kernel was replaced by 1 kernel of user code", cause.title


def _split_zoo() -> Capture:
    """SYNTHETIC, from the real tests/data/h100/zoo-good-short-run1.csv (as
    tests/identity/test_split.py): the last of zoo_registers' three launches runs 1.4 x its
    instructions, so its launches split into two work classes its entry does not have."""
    capture = read_captures([data("zoo-good-short-run1.csv")])
    ours = [la for la in capture.launches if la.name.startswith("zoo_registers(")]
    last = max(ours, key=lambda la: la.index)
    grown = replace(last, metrics={**last.metrics, WORK: _work(last) * 1.4})
    return replace(capture, launches=tuple(grown if la is last else la for la in capture.launches))


def _split_verdict(settings: CheckSettings) -> tuple[KernelVerdict, Launch]:
    baseline = load_baseline(ROOT / "baselines" / "h100" / "zoo.yaml")
    capture = _split_zoo()
    verdict = _verdict(check(baseline, capture, settings).verdicts, "zoo_registers")
    assert verdict.matched_by == SPLIT, verdict.message
    grown = max(
        (la for la in capture.launches if la.name.startswith("zoo_registers(")),
        key=_work,
    )
    return verdict, grown


def _states(verdict: KernelVerdict) -> dict[str, State]:
    names = [c.metric for c in verdict.comparisons]
    # Each metric once: the counts per run from the whole kernel, the rest from one class.
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    return {c.metric: c.state for c in verdict.comparisons}


def test_a_split_kernel_judges_its_counts_per_run_once_over_all_its_launches() -> None:
    verdict, grown = _split_verdict(CheckSettings())
    states = _states(verdict)
    # Three launches in the one capture file, as recorded: the count and total time pass.
    assert states["launches"] is State.PASS and states["total_time"] is State.PASS
    assert states["instructions_executed"] is State.REGRESSED
    assert verdict.state is KernelState.REGRESSED
    # The worst class is the grown launch alone, with its instruction count.
    assert f"(1 launch, {_work(grown):,.0f} instructions): regressed" in verdict.message


@pytest.mark.parametrize("other", ["scope", "basis"])
def test_a_split_kernel_of_another_scope_or_basis_skips_only_what_that_changes(
    other: str,
) -> None:
    """Another scope: its launch count and total time are not compared, never judged;
    another time basis: its durations and DRAM bytes, and its launch count is judged."""
    reason = "a test's reason"
    settings = CheckSettings(other_scope=reason if other == "scope" else "")
    if other == "basis":
        settings = CheckSettings(other_basis=reason)
    verdict, _ = _split_verdict(settings)
    states = _states(verdict)
    skipped = {State.UNJUDGED, State.SKIPPED}
    unjudged = {m for m, s in states.items() if s in skipped}
    # The entry's launch count a run goes with its launches comparison: left out where the
    # counts are of another scope, kept otherwise (zoo_registers: 3 launches a run).
    assert verdict.launches is not None
    if other == "scope":
        assert unjudged == {"launches", "total_time"}
        assert verdict.launches.baseline is None
    else:
        assert unjudged == {"duration", "total_time", "dram_bytes", "dram_throughput"}
        assert states["launches"] is State.PASS
        assert verdict.launches.baseline == 3.0
    assert states["instructions_executed"] is State.REGRESSED


@functools.cache
def _zoo() -> Baseline:
    """baselines/h100/zoo.yaml, one object: the metrics sent the plain way are told by it."""
    return load_baseline(ROOT / "baselines" / "h100" / "zoo.yaml")


# Each kernel's state in a check.
KernelStates = dict[str, KernelState]


def _passing_route(
    monkeypatch: pytest.MonkeyPatch, capture: str
) -> tuple[list[tuple[str, list[Comparison] | None]], list[MetricBaseline], KernelStates]:
    """A check of a real zoo capture against baselines/h100/zoo.yaml with the all-pass route
    watched: what Passing.comparisons gave per kernel, and which metrics it sent the plain
    way (compare_one)."""
    given: list[tuple[str, list[Comparison] | None]] = []
    plain: list[MetricBaseline] = []
    comparisons = passing.Passing.comparisons

    def watched(self: passing.Passing, kernel: KernelBaseline, *rest: Any) -> Any:
        got = comparisons(self, kernel, *rest)
        given.append((kernel.id, got))
        return got

    def one(kernel: KernelBaseline, metric: MetricBaseline, *rest: Any) -> Any:
        plain.append(metric)
        return compare_one(kernel, metric, *rest)

    monkeypatch.setattr(passing.Passing, "comparisons", watched)
    monkeypatch.setattr(passing, "compare_one", one)
    result = check(_zoo(), read_captures([data(capture)]))
    return given, plain, {v.kernel: v.state for v in result.verdicts}


def test_kernels_that_pass_take_the_column_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """perfgate.verdicts.passing (docs/scale.md): on the unchanged zoo build every kernel
    passes, and each gets its comparisons from the all-pass route; only a label, a metric
    with a bound of its own, or a count per capture file goes the plain way."""
    given, plain, states = _passing_route(monkeypatch, "zoo-good-short-run1.csv")
    assert set(states.values()) == {KernelState.PASS}
    assert sorted(k for k, _ in given) == sorted(states)
    for kid, got in given:
        assert got is not None, kid
        assert all(c.state is State.PASS for c in got), kid
    assert plain
    for m in plain:
        own = m.threshold is not None or m.check is not None
        assert isinstance(m.value, str) or own or m.name == "launches", m.name
    # Metrics without a bound of their own do exist in the zoo baseline: they took the
    # column route, never the plain way.
    entries = _zoo().kernels
    columns = {
        m.name
        for k in entries
        for m in k.metrics
        if m.threshold is None and m.check is None and not isinstance(m.value, str)
    }
    assert columns - {"launches"}
    assert not {m.name for m in plain} & (columns - {"launches"})
    # And every label and every metric with a bound of its own went the plain way: the route
    # keeps one bound per metric name, the catalog's and the file's, never an entry's own.
    sent = {id(m) for m in plain}
    own_bound = [
        m
        for k in entries
        for m in k.metrics
        if isinstance(m.value, str) or m.threshold is not None or m.check is not None
    ]
    assert own_bound and all(id(m) in sent for m in own_bound)


def test_a_kernel_that_moved_leaves_the_all_pass_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """The regressed zoo build: a kernel whose metric moved gets None from the all-pass route
    (it is compared and diagnosed metric by metric); a list it gives holds passes only."""
    given, _, states = _passing_route(monkeypatch, "zoo-bad-short-run1.csv")
    regressed = {k for k, s in states.items() if s is KernelState.REGRESSED}
    assert regressed
    for kid, got in given:
        if kid in regressed:
            assert got is None, kid
        elif got is not None:
            assert all(c.state is State.PASS for c in got), kid


# A one-kernel baseline with one metric (as tests/baseline/test_baseline.py writes them).
def _one_metric(metric: str) -> str:
    return f"format_version: 1\nkernels:\n- id: k\n  match: {{function: k}}\n  metrics:\n    {metric}\n"


_DURATION = "duration: {value: 1000, min: 900, max: 1100, unit: ns}"


@pytest.mark.parametrize("key", ["value", "min", "max"])
def test_a_negative_recorded_value_is_refused_where_it_is(key: str) -> None:
    """perfgate.baseline.validate: the schema takes any number for a metric's value, min and
    max; counters and durations are never negative, so a negative one (a hand edit) is one
    problem at its path, and 0 or a fraction of a unit is a value like any other."""
    text = _one_metric(_DURATION.replace(f"{key}: ", f"{key}: -", 1))
    with pytest.raises(BaselineError) as err:
        parse_baseline(text, "b.yaml")
    lines = err.value.lines()
    assert len(lines) == 1, lines
    assert f"$.kernels[0].metrics.duration.{key}: -" in lines[0], lines
    assert "is negative; counters are never negative" in lines[0]
    for fine in ("0", "0.5", "0.0"):
        edited = re.sub(rf"\b{key}: \d+", f"{key}: {fine}", _DURATION)
        assert edited != _DURATION
        parse_baseline(_one_metric(edited), "b.yaml")


@pytest.mark.parametrize(
    "char, what", [("\x85", "NEL (U+0085)"), ("\u2028", "U+2028"), ("\u2029", "U+2029")]
)
def test_a_unicode_line_break_is_refused_at_its_line_and_column(char: str, what: str) -> None:
    """YAML reads NEL, U+2028 and U+2029 as line breaks, perfgate's line edits do not: refused,
    at the line and column (both from 1) of the first one, wherever it is."""
    text = _one_metric(_DURATION)
    lines = text.splitlines(keepends=True)
    at_end = "".join(lines[:2]) + lines[2].rstrip("\n") + f" # {char}\n" + "".join(lines[3:])
    # In a comment at the end of line 3, as the file's first character, and as the first of
    # line 2 after an empty first line.
    placed = (
        (at_end, f"3:{len(lines[2].rstrip()) + 4}"),
        (char + text, "1:1"),
        ("\n" + char + text, "2:1"),
    )
    for edited, where in placed:
        with pytest.raises(BaselineError, match=rf"{where}: a {re.escape(what)} character"):
            parse_baseline(edited, "b.yaml")


def test_the_log_distance_of_an_unknown_or_zero_work_is_infinite() -> None:
    """perfgate.identity.grouping.log_distance: a work of 0 (a group without instruction
    counts, read as 0.0 by matching) or below is infinitely far from every work, never a
    math domain error; two known works are as far apart as their ratio, either way round."""
    assert log_distance(0.0, 5e5) == math.inf
    assert log_distance(5e5, 0.0) == math.inf
    assert log_distance(-1.0, -1.0) == math.inf
    assert log_distance(5e5, 1.5e6) == pytest.approx(math.log(3))
    assert log_distance(1.5e6, 5e5) == pytest.approx(math.log(3))
    # The smallest double against a million: a / b would underflow to 0.
    assert math.isfinite(log_distance(5e-324, 1e6))
    assert math.isfinite(log_distance(1e6, 5e-324))


# Two spellings ncu prints that share the short name `zoo_a` (perfgate.ingest.names).
_A, _A2 = "zoo_a(const float *, float *, int)", "zoo_a(float *)"
_G1, _G2, _B1, _B2 = (1, 1, 1), (2, 1, 1), (32, 1, 1), (64, 1, 1)


def _key(
    name: str = _A,
    grid: tuple[int, int, int] = _G1,
    block: tuple[int, int, int] = _B1,
    nvtx: str | None = None,
    work: int | None = None,
) -> KernelKey:
    return KernelKey(name, grid, block, nvtx, work)


@pytest.mark.parametrize(
    "keys, ids",
    [
        # Each part alone: only what tells the keys apart is said.
        ([_key(), _key(_A2)], ["zoo_a ~1", "zoo_a ~2"]),
        ([_key(), _key(grid=_G2)], ["zoo_a [grid 1x1x1]", "zoo_a [grid 2x1x1]"]),
        ([_key(), _key(block=_B2)], ["zoo_a [block 32x1x1]", "zoo_a [block 64x1x1]"]),
        ([_key(nvtx="fwd"), _key()], ["zoo_a @fwd", "zoo_a @-"]),
        ([_key(work=1), _key(work=2), _key(grid=_G2)],
         ["zoo_a [grid 1x1x1] #work1", "zoo_a [grid 1x1x1] #work2", "zoo_a [grid 2x1x1]"]),
        # In the parts' order (names, grid, block, NVTX range, work), each where still needed.
        ([_key(), _key(_A2), _key(grid=_G2)],
         ["zoo_a ~1 [grid 1x1x1]", "zoo_a ~2 [grid 1x1x1]", "zoo_a ~1 [grid 2x1x1]"]),
        ([_key(), _key(block=_B2), _key(grid=_G2)],
         ["zoo_a [grid 1x1x1] [block 32x1x1]", "zoo_a [grid 1x1x1] [block 64x1x1]",
          "zoo_a [grid 2x1x1] [block 32x1x1]"]),
        ([_key(nvtx="a"), _key(nvtx="b"), _key(block=_B2, nvtx="a")],
         ["zoo_a [block 32x1x1] @a", "zoo_a [block 32x1x1] @b", "zoo_a [block 64x1x1] @a"]),
        ([_key(nvtx="a", work=1), _key(nvtx="a", work=2), _key(nvtx="b")],
         ["zoo_a @a #work1", "zoo_a @a #work2", "zoo_a @b"]),
        # A short name of one key is the id alone.
        ([_key(), _key("other_kernel(int)")], ["zoo_a", "other_kernel"]),
    ],
)  # fmt: skip
def test_readable_ids_say_only_what_tells_kernels_apart(
    keys: list[KernelKey], ids: list[str]
) -> None:
    """perfgate.identity.grouping.readable_ids (docs/identity.md): the short name, then the
    parts that tell keys of one short name apart, in a fixed order."""
    got = readable_ids(keys)
    assert [got[k] for k in keys] == ids


def test_a_new_kernel_takes_its_id_unless_taken_then_its_shape_then_a_number() -> None:
    """new_ids: a new kernel whose id a baselined kernel holds says its grid, then its block,
    then the first free number from 2."""
    key = _key()
    assert new_ids([key], ["other"]) == {key: "zoo_a"}
    taken = ["zoo_a"]
    assert new_ids([key], taken) == {key: "zoo_a [grid 1x1x1]"}
    taken.append("zoo_a [grid 1x1x1]")
    assert new_ids([key], taken) == {key: "zoo_a [grid 1x1x1] [block 32x1x1]"}
    taken.append("zoo_a [grid 1x1x1] [block 32x1x1]")
    assert new_ids([key], taken) == {key: "zoo_a [grid 1x1x1] [block 32x1x1] #2"}
    taken.append("zoo_a [grid 1x1x1] [block 32x1x1] #2")
    assert new_ids([key], taken) == {key: "zoo_a [grid 1x1x1] [block 32x1x1] #3"}


def test_a_new_work_class_of_an_unbaselined_kernel_keeps_its_readable_id() -> None:
    """A new kernel with a work class (its name and shape ran several in the capture, one of
    them new) whose id no baselined kernel holds, with or without classes: its readable id,
    no class number added; beside a baselined kernel of that id, the next free class."""
    key = _key(work=1)
    assert new_ids([key], ["other", "other #work1"]) == {key: "zoo_a"}
    assert new_ids([key], ["zoo_a #work1", "zoo_a #work2"]) == {key: "zoo_a #work3"}
    assert new_ids([key], ["zoo_a"]) == {key: "zoo_a #work1"}


def test_work_classes_pair_by_work_with_ties_to_the_first_and_unknowns_undecided() -> None:
    """pair_work_classes: a work of 0 or below is unknown (undecidable by work, None), any
    positive work is known however small; two current classes equally far from a recorded
    class (0.5x and 2x): the first keeps it, the other is new."""
    assert pair_work_classes([0.0, 1e6], [1e6]) is None
    assert pair_work_classes([1e6], [-1.0]) is None
    assert pair_work_classes([0.5, 2.0], [0.5]) == {0: 0}
    assert pair_work_classes([1e6], [5e5, 2e6]) == {0: 0}
    assert pair_work_classes([1e6], [2e6, 5e5]) == {0: 0}


# Kernel names as ncu printed them in tests/data/field/h100/h100-a (cnn-bf16-cl, cnn-fp32).
_CUDNN = (
    "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_128x128_32x5"
    "_nhwc_align8>(T1::Params)"
)
_CUDNN_2 = _CUDNN.replace("128x128_32x5", "256x64_32x4")
_NVJET = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"
_FLASH = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Params)"


def test_a_librarys_pick_names_the_tiles_of_any_kernel_that_has_one() -> None:
    """perfgate.causes.substitution: the tile of a cuDNN engine (a CUTLASS-style name, not
    nvjet's), on both sides; where only one side has a tile, no tile is said."""
    both = substitution_cause(Side(_CUDNN, {}), [Side(_CUDNN_2, {})], "cuDNN")
    assert both.title == "cuDNN picked a different engine kernel (tile 128x128_32x5 -> 256x64_32x4)"
    untiled = _CUDNN.replace("_128x128_32x5", "")
    for before, after in ((untiled, _CUDNN_2), (_CUDNN, untiled)):
        one = substitution_cause(Side(before, {}), [Side(after, {})], "cuDNN")
        assert one.title == "cuDNN picked a different engine kernel", one.title


def test_a_replacement_by_another_library_names_it_and_lists_eight_kernels() -> None:
    """FlashAttention replaced by cuBLAS's GEMMs: the title names cuBLAS, not the math path,
    nor "user code"; the detail lists eight kernels at most, then how many in all. A name
    longer than 80 characters is cut to 77 and "..."."""
    for count in (1, 8, 9):
        cause = substitution_cause(Side(_FLASH, {}), [Side(_NVJET, {})] * count, "FlashAttention")
        kernels = f"{count} kernel{'s' if count > 1 else ''}"
        assert cause.title == f"FlashAttention was replaced by {kernels} of cuBLAS"
        assert cause.detail.count(_NVJET) == min(count, 8)
        assert cause.detail.endswith(f", ... ({count} in all)") is (count > 8)
    mixed = [Side(_NVJET, {}), Side("user_kernel(int)", {})]
    assert substitution_cause(Side(_FLASH, {}), mixed, "FlashAttention").title == (
        "FlashAttention was replaced by 2 kernels of cuBLAS/user code"
    )
    long = "void " + "k" * 100 + "(int)"
    cut = substitution_cause(Side(long, {}), [], None)
    assert cut.title == f"{('void ' + 'k' * 100)[:77]}... no longer runs"
    exact = "k" * 80
    assert substitution_cause(Side(exact, {}), [], None).title == f"{exact} no longer runs"
    over = exact + "k"
    assert substitution_cause(Side(over, {}), [], None).title == f"{over[:77]}... no longer runs"


def test_the_math_path_is_atens_inductors_and_user_kernels_together() -> None:
    """A kernel replaced by ATen, Inductor and user code at once: the math path."""
    new = [
        Side("void at::native::elementwise_kernel<128, 2>(int)", {}),
        Side("triton_per_fused_native_layer_norm_0", {}),
        Side("user_kernel(int)", {}),
    ]
    cause = substitution_cause(Side(_FLASH, {}), new, "FlashAttention")
    assert cause.title == "FlashAttention was replaced by 3 kernels of the math path"


def _notice(capture: Capture, baseline: Baseline | None = None) -> str:
    return check(baseline or _zoo(), capture).notice


@pytest.mark.parametrize("count", [8, 9, None])
def test_the_notice_of_another_program_lists_eight_of_its_kernels(count: int | None) -> None:
    """perfgate.verdicts.absent.notice: the zoo baseline against the real BERT encoder capture
    (h100-a), which holds none of its kernels: eight of the capture's kernels by short name,
    then how many more. `count`: the launches of that many short names only (None: all)."""
    capture = read_captures([ENCODER / "h100-a" / "hf-encoder-run1.csv.gz"])
    held = sorted({short_name(la.name) for la in capture.launches})
    assert len(held) > 9
    held = held[:count]
    capture = replace(
        capture, launches=tuple(la for la in capture.launches if short_name(la.name) in held)
    )
    said = _notice(capture)
    assert said.startswith("none of the 10 baselined kernels is in "), said
    assert f"It holds {len(held)} kernels: " in said
    assert sum(f"{name}," in said or said.endswith(name) or f"{name} and" in said
               for name in held) == 8  # fmt: skip
    assert said.endswith(f" and {len(held) - 8} more") is (len(held) > 8)


def test_the_notice_of_a_one_kernel_baseline_says_it() -> None:
    one = replace(_zoo(), kernels=_zoo().kernels[:1])
    capture = read_captures([ENCODER / "h100-a" / "hf-encoder-run1.csv.gz"])
    said = _notice(capture, one)
    assert said.startswith("the baselined kernel is not in "), said
    assert "leave it out?" in said


def test_change_findings_need_no_total_time() -> None:
    """A baseline whose entries gate no total_time (a hand-written one may not): the regressed
    zoo build is still checked, its regressed kernels simply bring no time to the findings
    about its kernels gone and new (SYNTHETIC, from the real zoo-bad-short-run1.csv: its
    zoo_atomics launches renamed zoo2_atomics)."""
    cut = replace(
        _zoo(),
        kernels=tuple(
            replace(k, metrics=tuple(m for m in k.metrics if m.name != "total_time"))
            for k in _zoo().kernels
        ),
    )
    capture = read_captures([data("zoo-bad-short-run1.csv")])
    renamed = tuple(
        replace(la, name=la.name.replace("zoo_atomics", "zoo2_atomics"))
        if la.name.startswith("zoo_atomics(")
        else la
        for la in capture.launches
    )
    result = check(cut, replace(capture, launches=renamed))
    states = {v.kernel: v.state for v in result.verdicts}
    assert states["zoo_atomics"] is KernelState.MISSING
    assert states["zoo2_atomics"] is KernelState.NEW
    regressed = [v for v in result.verdicts if v.state is KernelState.REGRESSED]
    assert regressed
    assert not [c for v in regressed for c in v.comparisons if c.metric == "total_time"]


def test_change_findings_are_per_run_over_several_capture_files(tmp_path: Path) -> None:
    """The real change hf-decoder-sdpa-math (h100-e) against the h100-a decoder baseline: the
    attention finding's times are a run's, the same from one capture file as from two copies
    of it."""
    baseline = record(
        read_captures([ENCODER / "h100-a" / f"hf-decoder-run{i}.csv.gz" for i in (1, 2, 3)]),
        RecordSettings(),
    ).baseline
    source = FIELD / "changes" / "h100-e" / "hf-decoder-sdpa-math-run1.csv.gz"
    copies = []
    for name in ("a.csv.gz", "b.csv.gz"):
        (tmp_path / name).write_bytes(source.read_bytes())
        copies.append(tmp_path / name)
    one = check(baseline, read_captures(copies[:1])).changes
    two = check(baseline, read_captures(copies)).changes
    assert one and [c.kind for c in one] == [c.kind for c in two]
    for a, b in zip(one, two, strict=True):
        assert b.after_ns == pytest.approx(a.after_ns) and b.before_ns == pytest.approx(a.before_ns)
