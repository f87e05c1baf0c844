"""The gate on the real corpus: unchanged re-captures pass, regressed builds fail on the
metric that describes their regression (tests/zoo/expectations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import load_baseline, parse_baseline
from perfgate.common.errors import ExitCode
from perfgate.ingest import read_capture
from perfgate.ingest.launches import merge
from perfgate.judge.comparison import State
from perfgate.judge.outcome import Outcome, numeric_outcome
from perfgate.judge.policy import kernel_exit_code, worst_exit_code
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import Direction
from perfgate.verdicts.check import check
from tests.conftest import ROOT, data
from tests.zoo.expectations import unmet

BASELINES = ROOT / "baselines" / "h100"
SETS = {
    "zoo-short": [f"zoo-good-short-run{i}.csv" for i in (1, 2, 3)],
    "zoo-full": [f"zoo-good-full-run{i}.csv.gz" for i in (1, 2, 3)],
    "torch": [f"torch-short-run{i}.csv" for i in (1, 2, 3)],
}


def _comparisons(result):  # type: ignore[no-untyped-def]
    return [c for v in result.verdicts for c in v.comparisons]


def _regressed(result) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    out: dict[str, set[str]] = {}
    for c in _comparisons(result):
        if c.state is State.REGRESSED:
            out.setdefault(c.kernel, set()).add(c.metric)
    return out


def _states(result) -> dict[str, KernelState]:  # type: ignore[no-untyped-def]
    return {v.kernel: v.state for v in result.verdicts}


def _problems(result) -> list[str]:  # type: ignore[no-untyped-def]
    lines = [
        f"{v.kernel}: {v.state.value} {v.message}"
        for v in result.verdicts
        if v.state in (KernelState.MISSING, KernelState.ERROR)
    ]
    return lines + [f"{c.kernel} {c.metric}: {c.state.value} {c.baseline} -> {c.current} ({c.bound}) {c.message}"
            for c in _comparisons(result) if c.state not in (State.PASS, State.IMPROVED)]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(SETS))
@pytest.mark.parametrize("held_out", [0, 1, 2])
def test_unchanged_build_passes_in_a_separate_ncu_run(kind: str, held_out: int) -> None:
    """Baseline from two runs, check the third: nothing the default thresholds call a change."""
    caps = [read_capture(data(p)) for p in SETS[kind]]
    baseline = record(
        merge([c for i, c in enumerate(caps) if i != held_out]), RecordSettings()
    ).baseline
    result = check(baseline, caps[held_out])
    assert result.exit_code is ExitCode.OK, "\n".join(_problems(result))
    assert sum(1 for c in _comparisons(result) if c.state is State.PASS) > 250
    assert not [v for v in result.verdicts if v.state is KernelState.NEW]


@pytest.mark.parametrize(
    ("baseline", "capture"),
    [("zoo.yaml", f"zoo-bad-short-run{i}.csv") for i in (1, 2, 3)]
    + [("zoo-full.yaml", f"zoo-bad-full-run{i}.csv.gz") for i in (1, 2, 3)],
)
def test_regressed_build_fails_naming_the_metric(baseline: str, capture: str) -> None:
    result = check(load_baseline(BASELINES / baseline), read_capture(data(capture)))
    assert result.exit_code is ExitCode.GATE_FAILED
    assert unmet(_regressed(result)) == []
    # The kernels the regressed build did not touch stay quiet.
    assert not {"init_random", "init_half"} & set(_regressed(result))


def test_report_file_and_its_csv_export_give_the_same_verdicts() -> None:
    pytest.importorskip("ncu_report")
    baseline = load_baseline(BASELINES / "zoo.yaml")
    a = check(baseline, read_capture(data("zoo-good-short.ncu-rep")))
    b = check(baseline, read_capture(data("zoo-good-short-import.csv")))
    assert a.exit_code is b.exit_code is ExitCode.OK
    assert [(c.kernel, c.metric, c.state) for c in _comparisons(a)] == [
        (c.kernel, c.metric, c.state) for c in _comparisons(b)
    ]


def test_counter_baseline_checks_a_set_full_capture() -> None:
    # Stall shares recorded from the explicit list compare with --set full's family.
    baseline = load_baseline(BASELINES / "zoo.yaml")
    result = check(baseline, read_capture(data("zoo-good-full-run2.csv.gz")))
    states = {(c.kernel, c.metric): c.state for c in _comparisons(result)}
    assert states[("zoo_atomics", "dominant_stall")] is State.PASS
    # Stall cycles per instruction are the same quantity in both families (reason / selected).
    assert states[("zoo_atomics", "stall_cpi.long_scoreboard")] is State.PASS
    assert states[("zoo_coalescing", "global_load_sectors")] is State.PASS
    assert (
        states[("zoo_coalescing", "tensor_instructions")] is State.MISSING_METRIC
    )  # not in the set
    assert _states(result)["init_random"] is KernelState.MISSING  # filtered by -k
    assert result.exit_code is ExitCode.GATE_FAILED


def test_a_check_that_finds_no_baselined_kernel_fails(tmp_path: Path) -> None:
    torch_baseline = load_baseline(BASELINES / "torch.yaml")
    result = check(torch_baseline, read_capture(data("zoo-good-short-run1.csv")))
    assert set(_states(result).values()) == {KernelState.MISSING, KernelState.NEW}
    assert result.exit_code is ExitCode.GATE_FAILED
    # Said once, with what the capture holds instead.
    assert result.notice.startswith(f"none of the {len(torch_baseline.kernels)} baselined kernels")
    assert "zoo_coalescing" in result.notice


def test_a_capture_without_the_metrics_fails_as_missing_metric() -> None:
    # ncu --set default on 2025.3 collects no metrics at all (NCU_FACTS): only launch__ columns.
    baseline = load_baseline(BASELINES / "zoo.yaml")
    result = check(baseline, read_capture(data("set-default.csv")))
    states = {
        (c.kernel, c.metric): c.state for c in _comparisons(result) if c.kernel == "zoo_coalescing"
    }
    assert states[("zoo_coalescing", "registers_per_thread")] is State.PASS
    assert states[("zoo_coalescing", "duration")] is State.MISSING_METRIC
    assert result.exit_code is ExitCode.GATE_FAILED


def test_kernels_outside_the_baseline_are_reported_as_new(tmp_path: Path) -> None:
    cap = read_capture(data("zoo-good-short-run1.csv"))
    baseline = record(cap, RecordSettings(kernel_patterns=("^zoo_coalescing",))).baseline
    assert [k.id for k in baseline.kernels] == ["zoo_coalescing"]
    result = check(baseline, read_capture(data("zoo-good-short-run2.csv")))
    new = {v.kernel for v in result.verdicts if v.state is KernelState.NEW}
    assert new == {"init_random", "init_half", "zoo_atomics", "zoo_registers", "zoo_bank_conflicts",
                   "zoo_divergence", "zoo_local_memory", "zoo_tensor_cores", "zoo_shared_occupancy"}  # fmt: skip
    assert result.exit_code is ExitCode.OK


def _edited(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    doc = yaml.safe_load((BASELINES / "zoo.yaml").read_text())
    edit(doc)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_thresholds_in_the_baseline_file_override_the_catalog(tmp_path: Path) -> None:
    def loosen(doc: dict) -> None:  # type: ignore[type-arg]
        k = next(k for k in doc["kernels"] if k["id"] == "zoo_registers")
        k["metrics"]["registers_per_thread"]["threshold"] = {"absolute": 16}
        doc["thresholds"] = {"occupancy_limiter": {"stable": False}}

    result = check(
        load_baseline(_edited(tmp_path, loosen)), read_capture(data("zoo-bad-short-run1.csv"))
    )
    regressed = _regressed(result)
    assert "registers_per_thread" not in regressed["zoo_registers"]
    assert "occupancy_limiter" not in regressed["zoo_registers"]
    assert "achieved_occupancy" in regressed["zoo_registers"]  # not overridden


def test_forbidden_dominant_stall(tmp_path: Path) -> None:
    def forbid(doc: dict) -> None:  # type: ignore[type-arg]
        k = next(k for k in doc["kernels"] if k["id"] == "zoo_atomics")
        k["metrics"]["dominant_stall"]["threshold"] = {
            "stable": False,
            "forbid": ["drain", "lg_throttle"],
        }

    baseline = load_baseline(_edited(tmp_path, forbid))
    good = check(baseline, read_capture(data("zoo-good-short-run1.csv")))
    bad = check(baseline, read_capture(data("zoo-bad-short-run1.csv")))
    assert good.exit_code is ExitCode.OK
    c = next(
        c for c in _comparisons(bad) if c.kernel == "zoo_atomics" and c.metric == "dominant_stall"
    )
    assert c.state is State.REGRESSED and c.message == "drain is forbidden"


def test_state_to_exit_code_mapping_is_total() -> None:
    assert {s: kernel_exit_code(s) for s in KernelState} == {
        KernelState.PASS: ExitCode.OK, KernelState.IMPROVED: ExitCode.OK,
        KernelState.NEW: ExitCode.OK, KernelState.SKIPPED: ExitCode.OK,
        KernelState.REGRESSED: ExitCode.GATE_FAILED, KernelState.MISSING: ExitCode.GATE_FAILED,
        KernelState.INCOMPLETE: ExitCode.GATE_FAILED, KernelState.ERROR: ExitCode.INPUT_ERROR,
        KernelState.UNJUDGED: ExitCode.INPUT_ERROR,
    }  # fmt: skip
    assert (
        worst_exit_code([ExitCode.OK, ExitCode.GATE_FAILED, ExitCode.INPUT_ERROR])
        is ExitCode.INPUT_ERROR
    )
    assert worst_exit_code([ExitCode.OK, ExitCode.GATE_FAILED]) is ExitCode.GATE_FAILED
    assert worst_exit_code([]) is ExitCode.OK


def test_baseline_round_trip_keeps_the_verdicts(tmp_path: Path) -> None:
    baseline = load_baseline(BASELINES / "zoo.yaml")
    path = tmp_path / "again.yaml"
    path.write_text(dump_baseline(baseline))
    a = check(baseline, read_capture(data("zoo-bad-short-run3.csv")))
    b = check(load_baseline(path), read_capture(data("zoo-bad-short-run3.csv")))
    assert [c.state for c in _comparisons(a)] == [c.state for c in _comparisons(b)]


@pytest.mark.parametrize("session", ["session1", "session2"])
@pytest.mark.parametrize(
    ("baseline", "kind"), [("zoo.yaml", "zoo-good-short"), ("torch.yaml", "torch-short")]
)
def test_committed_baselines_pass_the_other_sessions_captures(
    baseline: str, kind: str, session: str
) -> None:
    """session1/ and session2/ were captured earlier, on other starts of the machine, with older
    metric lists (their metrics.txt): nothing may regress; metrics a list lacks are missing,
    not failed silently."""
    base = load_baseline(BASELINES / baseline)
    for run in (1, 2, 3):
        result = check(base, read_capture(data(f"{session}/{kind}-run{run}.csv.gz")))
        assert not [c for c in _comparisons(result) if c.state is State.REGRESSED], "\n".join(
            _problems(result)
        )
        missing = {c.metric for c in _comparisons(result) if c.state is State.MISSING_METRIC}
        assert missing <= {
            "tensor_instructions",
            "tensor_pipe_utilization",
            "global_load_efficiency",
            "global_store_efficiency",
        }


def test_regressions_are_caught_in_the_other_sessions_too() -> None:
    base = load_baseline(BASELINES / "zoo.yaml")
    for run in (1, 2, 3):
        regressed = _regressed(
            check(base, read_capture(data(f"session2/zoo-bad-short-run{run}.csv.gz")))
        )
        assert unmet(regressed) == []
        regressed = _regressed(
            check(base, read_capture(data(f"session1/zoo-bad-short-run{run}.csv.gz")))
        )
        # Session 1's list had no tensor-pipe counters; the lost tensor cores show as x30 instructions.
        assert "instructions_executed" in regressed["zoo_tensor_cores"]
        regressed["zoo_tensor_cores"].add("tensor_instructions")
        assert unmet(regressed) == []


def test_regex_matches_go_through_every_launch(tmp_path: Path) -> None:
    # A regular expression has no index entry: every launch is a candidate.
    def regex(doc: dict) -> None:  # type: ignore[type-arg]
        doc["kernels"] = [k for k in doc["kernels"] if k["id"] == "zoo_atomics"]
        doc["kernels"][0]["match"] = {"regex": r"^zoo_at\w+\(const float \*"}

    result = check(
        load_baseline(_edited(tmp_path, regex)), read_capture(data("zoo-good-short-run1.csv"))
    )
    verdict = next(v for v in result.verdicts if v.kernel == "zoo_atomics")
    assert verdict.launches is not None and verdict.launches.current == (3,)
    assert verdict.matched_by == "regex"
    assert result.exit_code is ExitCode.OK


def test_a_flipped_dominant_stall_needs_a_stall_that_really_grew() -> None:
    from perfgate.baseline.model import Baseline, KernelBaseline, KernelMatch
    from perfgate.judge.comparison import Comparison
    from perfgate.judge.rules import KernelFacts, corroborate_stall_mix

    flip = Comparison("k", "dominant_stall", State.REGRESSED, "barrier", "long_scoreboard",
                      message="changed from barrier")  # fmt: skip
    steady = Comparison("k", "stall_cpi.long_scoreboard", State.PASS, 10.0, 10.4)
    grown = Comparison("k", "stall_cpi.long_scoreboard", State.REGRESSED, 10.0, 30.0)
    forbidden = Comparison("k", "dominant_stall", State.REGRESSED, "barrier", "drain",
                           message="drain is forbidden")  # fmt: skip
    facts = KernelFacts(KernelBaseline("k", KernelMatch(name="k"), ()), Baseline(()))

    def corroborated(*comparisons: Comparison) -> State:
        return corroborate_stall_mix(comparisons, facts)[0].state

    assert corroborated(flip, steady) is State.PASS
    assert corroborated(flip, grown) is State.REGRESSED
    assert corroborated(flip) is State.REGRESSED  # no stall_cpi gated
    assert corroborated(forbidden, steady) is State.REGRESSED


def test_a_direction_override_on_duration_does_not_make_a_slower_kernel_faster(
    tmp_path: Path,
) -> None:
    # `direction: lower_is_worse` on duration makes a 31x slower kernel IMPROVED by the gate's
    # judgement; the diagnosis must still read the numbers, not the state, for "faster".
    def flip(doc: dict) -> None:  # type: ignore[type-arg]
        k = next(k for k in doc["kernels"] if k["id"] == "zoo_atomics")
        k["metrics"]["duration"]["threshold"]["direction"] = "lower_is_worse"

    result = check(
        load_baseline(_edited(tmp_path, flip)), read_capture(data("zoo-bad-short-run1.csv"))
    )
    atomics = next(v for v in result.verdicts if v.kernel == "zoo_atomics")
    duration = next(c for c in atomics.comparisons if c.metric == "duration")
    assert duration.state is State.IMPROVED and duration.change is not None
    assert duration.change > 0  # the override is honoured: slower counts as better here
    texts = [f"{c.title} {c.detail}" for c in atomics.causes]
    assert not [t for t in texts if "faster" in t], texts
    # No rate is explained away by a speed-up that did not happen.
    assert not [c for c in atomics.comparisons if "got faster" in c.explained]


_OUTCOME_STATE = {Outcome.WITHIN: State.PASS, Outcome.WORSE: State.REGRESSED,
                  Outcome.BETTER: State.IMPROVED}  # fmt: skip


@pytest.mark.parametrize("where", ["file", "own"])
@pytest.mark.parametrize("direction", list(Direction))
def test_a_direction_override_is_judged_on_every_route(where: str, direction: Direction) -> None:
    """Every numeric metric given `direction:` (file-wide or its own threshold), checked on a
    capture whose kernels all pass (the passing-kernel route) and one where they moved (the
    metric-by-metric route): each comparison is the state numeric_outcome gives that
    direction, worked out here from the baseline entry itself."""
    doc = yaml.safe_load((BASELINES / "zoo.yaml").read_text())
    numeric = {m for k in doc["kernels"] for m in k["metrics"] if not lookup(m).categorical}
    if where == "file":
        doc["thresholds"] = {m: {"direction": direction.value} for m in numeric}
    else:
        for k in doc["kernels"]:
            for m, entry in k["metrics"].items():
                if m in numeric:
                    entry.setdefault("threshold", {})["direction"] = direction.value
    baseline = parse_baseline(yaml.safe_dump(doc, sort_keys=False), "zoo.yaml")
    judged = 0
    for capture in ("zoo-good-short-run1.csv", "zoo-bad-short-run1.csv"):
        for v in check(baseline, read_capture(data(capture))).verdicts:
            entries = {k.id: k for k in baseline.kernels}[v.kernel].metrics
            for c in v.comparisons:
                if c.metric not in numeric or c.explained or not isinstance(c.current, float):
                    continue
                m = next(m for m in entries if m.name == c.metric)
                t = lookup(m.name).threshold.merged(baseline.thresholds.get(m.name))
                t = t.merged(m.threshold)
                assert t.direction is direction
                ranged = m.calibration is None or m.threshold is None
                want = numeric_outcome(float(m.value), c.current, t, direction,
                                       m.low if ranged else None, m.high if ranged else None)  # fmt: skip
                assert c.state is _OUTCOME_STATE[want], (capture, v.kernel, c)
                judged += 1
    assert judged > 300
