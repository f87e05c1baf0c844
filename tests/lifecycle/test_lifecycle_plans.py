"""What `baseline accept` and `update` decide, on plain data: which bounds are perfgate's to
re-record, which kernels a pattern names, and which new kernels join the baseline.

Real captures: tests/data/h200/real (the PyTorch model, torch-flash build)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline, MetricBaseline
from perfgate.cli import main
from perfgate.common.errors import UsageError
from perfgate.ingest import read_capture
from perfgate.lifecycle.editplan import Action
from perfgate.lifecycle.ownership import threshold_is_perfgates
from perfgate.lifecycle.plan import plan_accept, plan_update
from perfgate.metrics.thresholds import CategoricalOverride, Direction, ThresholdOverride
from tests.conftest import ADD_2X, ROOT, cli_ok, run_args

RUN = ROOT / "tests" / "data" / "h200" / "real" / "torch-flash-run1.csv"
CALIBRATED = "3 runs: spread 0.10% x 2 = 0.20%, floor 3.50% (x): floor 3.50%"


def _metric(threshold: ThresholdOverride | None, calibration: str | None = CALIBRATED,
            check: CategoricalOverride | None = None) -> MetricBaseline:  # fmt: skip
    return MetricBaseline("duration", 1000.0, threshold=threshold, calibration=calibration,
                          check=check)  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "perfgates"),
    [
        # No bound of its own: nothing of anybody's to keep.
        (_metric(None, None), True),
        # Exactly the bound its calibration text states.
        (_metric(ThresholdOverride(0.035, 0.0)), True),
        (_metric(ThresholdOverride(0.035, None)), True),
        # Another relative or absolute part than the text states: somebody's edit.
        (_metric(ThresholdOverride(0.05, 0.0)), False),
        (_metric(ThresholdOverride(0.035, 10.0)), False),
        # A bound with no calibration text, or one perfgate cannot read: somebody's.
        (_metric(ThresholdOverride(0.035, 0.0), None), False),
        (_metric(ThresholdOverride(0.035, 0.0), "chosen by hand"), False),
        # A direction, or a categorical check, is always somebody's decision.
        (_metric(ThresholdOverride(0.035, 0.0, Direction.LOWER_IS_WORSE)), False),
        (_metric(ThresholdOverride(0.035, 0.0), check=CategoricalOverride(stable=False)), False),
        (_metric(ThresholdOverride(0.035, 0.0), check=CategoricalOverride()), True),
        # A bound with no relative part, as the text states one of 0%.
        (_metric(ThresholdOverride(None, 0.0), CALIBRATED.replace("3.50%", "0.00%")), True),
        # Runs around 0: the text states the absolute part; the relative is the floor's (an
        # exact counter's floor is 0, so no relative part at all is the same bound).
        (
            MetricBaseline(
                "registers_per_thread",
                0.0,
                threshold=ThresholdOverride(None, 2.0),
                calibration="3 runs around 0: absolute 2 (exact)",
            ),
            True,
        ),
        (
            MetricBaseline(
                "registers_per_thread",
                0.0,
                threshold=ThresholdOverride(None, 3.0),
                calibration="3 runs around 0: absolute 2 (exact)",
            ),
            False,
        ),
    ],
)
def test_which_bounds_are_perfgates_to_re_record(metric: MetricBaseline, perfgates: bool) -> None:
    assert threshold_is_perfgates(metric) is perfgates


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """A baseline of the model's elementwise kernels only: the run's other kernels are new."""
    path = tmp_path_factory.mktemp("plans") / "b.yaml"
    result = CliRunner().invoke(
        main, ["baseline", "record", "-c", str(RUN), "-o", str(path), "-k", "elementwise"]
    )
    assert result.exit_code == 0, result.output
    return load_baseline(path)


def test_update_adds_new_kernels_and_the_ratchet_never_does(partial: Baseline) -> None:
    capture = read_capture(RUN)
    added = [e for e in plan_update(partial, capture).edits if e.action is Action.ADD]
    assert added  # the run has kernels the baseline does not gate
    assert not any(
        e.action is Action.ADD for e in plan_update(partial, capture, add_new=False).edits
    )
    ratchet = plan_update(partial, capture, ratchet=True)
    assert not any(e.action is Action.ADD for e in ratchet.edits)


def test_accept_takes_the_kernels_a_pattern_names_by_id_or_by_name(partial: Baseline) -> None:
    capture = read_capture(RUN)
    first = partial.kernels[0]
    # Nothing regressed (the same run): by default accept has nothing to take; a pattern
    # names one.
    with pytest.raises(UsageError, match="nothing to accept"):
        plan_accept(partial, capture)
    by_id = plan_accept(partial, capture, patterns=[f"^{re.escape(first.id)}$"]).edits
    assert [e.kernel for e in by_id] == [first.id]
    name = first.name or first.match.name
    assert name
    by_name = plan_accept(partial, capture, patterns=[f"^{re.escape(name)}$"]).edits
    assert first.id in [e.kernel for e in by_name]
    with pytest.raises(UsageError):
        plan_accept(partial, capture, patterns=["^no such kernel$"])


def test_a_kernel_without_fresh_values_is_left_as_it_was(partial: Baseline) -> None:
    # A kernel whose every gated metric the captures cannot give has nothing to take.
    kernel = partial.kernels[0]
    odd = replace(kernel, metrics=(MetricBaseline("dram__no_such_counter.sum", 1.0),))
    baseline = replace(partial, kernels=(odd, *partial.kernels[1:]))
    plan = plan_update(baseline, read_capture(RUN))
    assert kernel.id not in [e.kernel for e in plan.edits]
    assert any(line.startswith(f"{kernel.id}:") for line in plan.left)


# The editor (perfgate.lifecycle.edit) on a baseline recorded from 3 runs of the build that
# launches an add twice, updated or ratcheted with 3 runs of the build that launches it once.
@pytest.fixture(scope="module")
def redundant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("editor") / "b.yaml"
    cli_ok("baseline", "record", *run_args("torch-redundant"), "-o", str(path), "--reason", "good")
    return path


def _edited(source: Path, tmp_path: Path, edit: Any) -> Path:
    doc = yaml.safe_load(source.read_text())
    edit(doc, next(k for k in doc["kernels"] if k["id"] == ADD_2X))
    target = tmp_path / "b.yaml"
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def _entry(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    return next(k for k in doc["kernels"] if k["id"] == ADD_2X)


def test_update_keeps_a_hand_set_bound_on_a_metric_it_calibrates(
    redundant: Path, tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any], kernel: dict[str, Any]) -> None:
        kernel["metrics"]["total_time"]["threshold"] = {"relative": 0.2}
        kernel["metrics"]["total_time"].pop("calibration", None)

    target = _edited(redundant, tmp_path, edit)
    cli_ok("baseline", "update", "-b", str(target), *run_args("torch-flash"), "--reason", "x")
    metric = _entry(target)["metrics"]["total_time"]
    assert metric["threshold"] == {"relative": 0.2}
    assert "calibration" not in metric
    # Its neighbour without a hand-set bound took the calibration of the new runs.
    assert "calibration" in _entry(target)["metrics"]["duration"]


def test_update_keeps_an_explicit_match(redundant: Path, tmp_path: Path) -> None:
    # A regex the user wrote, at the kernel's shape: update must not swap it for the name.
    chosen = {"regex": "CUDAFunctor_add<float>", "grid": [16384, 1, 1], "block": [128, 1, 1]}

    def edit(doc: dict[str, Any], kernel: dict[str, Any]) -> None:
        kernel["match"] = dict(chosen)

    target = _edited(redundant, tmp_path, edit)
    cli_ok("baseline", "update", "-b", str(target), *run_args("torch-flash"), "--reason", "x")
    assert _entry(target)["match"] == chosen


def test_update_refreshes_info(redundant: Path, tmp_path: Path) -> None:
    def edit(doc: dict[str, Any], kernel: dict[str, Any]) -> None:
        kernel["info"] = {"registers_per_thread": -1}

    target = _edited(redundant, tmp_path, edit)
    cli_ok("baseline", "update", "-b", str(target), *run_args("torch-flash"), "--reason", "x")
    assert _entry(target)["info"] != {"registers_per_thread": -1}  # re-recorded


def test_the_ratchet_takes_improved_metrics_only(redundant: Path, tmp_path: Path) -> None:
    def edit(doc: dict[str, Any], kernel: dict[str, Any]) -> None:
        kernel["info"] = {"registers_per_thread": -1}

    target = _edited(redundant, tmp_path, edit)
    before = _entry(target)
    cli_ok("baseline", "update", "--ratchet", "-b", str(target), *run_args("torch-flash"))
    after = _entry(target)
    assert after["info"] == {"registers_per_thread": -1}  # not a gated metric: untouched
    assert after.get("launches") == before.get("launches")
    assert after["metrics"]["total_time"]["value"] < before["metrics"]["total_time"]["value"]


@pytest.mark.parametrize("with_provenance", [True, False])
def test_an_edit_stamps_the_provenance(
    redundant: Path, tmp_path: Path, with_provenance: bool
) -> None:
    def edit(doc: dict[str, Any], kernel: dict[str, Any]) -> None:
        if not with_provenance:
            doc.pop("provenance", None)

    target = _edited(redundant, tmp_path, edit)
    recorded = yaml.safe_load(target.read_text()).get("provenance")
    cli_ok("baseline", "update", "-b", str(target), *run_args("torch-flash"), "--by", "ci")
    provenance = yaml.safe_load(target.read_text())["provenance"]
    assert provenance["updated_by"] == "ci" and provenance["updated_at"]
    if with_provenance:
        assert provenance["recorded_at"] == recorded["recorded_at"]


def test_an_update_from_the_recorded_runs_changes_nothing_but_the_provenance(
    tmp_path: Path,
) -> None:
    # The same three runs: every value, bound, match and info is what the file holds, so the
    # writer must leave every line as it was (layout, quoting, key order) and only stamp the
    # update under provenance, after what record wrote there.
    path = tmp_path / "b.yaml"
    cli_ok("baseline", "record", *run_args("torch-flash"), "-o", str(path))
    before = path.read_text().splitlines()
    cli_ok("baseline", "update", "-b", str(path), *run_args("torch-flash"), "--by", "ci")
    after = path.read_text().splitlines()
    added = [line for line in after if line not in before]
    assert [line.split(":")[0] for line in added] == ["  updated_at", "  updated_by"]
    assert [line for line in after if line not in added] == before
    recorded = next(i for i, line in enumerate(after) if line.startswith("  recorded_"))
    assert after.index(added[0]) > recorded
