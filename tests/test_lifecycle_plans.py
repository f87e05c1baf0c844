"""What `baseline accept` and `update` decide, on plain data: which bounds are perfgate's to
re-record, which kernels a pattern names, and which new kernels join the baseline.

Real captures: tests/data/h200/real (the PyTorch model, torch-flash build)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline, MetricBaseline
from perfgate.cli import main
from perfgate.common.errors import UsageError
from perfgate.ingest import read_capture
from perfgate.lifecycle.plan import Action, plan_accept, plan_update, threshold_is_perfgates
from perfgate.metrics.thresholds import CategoricalOverride, Direction, ThresholdOverride
from tests.conftest import ROOT

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
    by_id = plan_accept(partial, capture, patterns=[f"^{_escape(first.id)}$"]).edits
    assert [e.kernel for e in by_id] == [first.id]
    name = first.name or first.match.name
    assert name
    by_name = plan_accept(partial, capture, patterns=[f"^{_escape(name)}$"]).edits
    assert first.id in [e.kernel for e in by_name]
    with pytest.raises(UsageError):
        plan_accept(partial, capture, patterns=["^no such kernel$"])


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_kernel_without_fresh_values_is_left_as_it_was(partial: Baseline) -> None:
    # A kernel whose every gated metric the captures cannot give has nothing to take.
    kernel = partial.kernels[0]
    odd = replace(kernel, metrics=(MetricBaseline("dram__no_such_counter.sum", 1.0),))
    baseline = replace(partial, kernels=(odd, *partial.kernels[1:]))
    plan = plan_update(baseline, read_capture(RUN))
    assert kernel.id not in [e.kernel for e in plan.edits]
    assert any(line.startswith(f"{kernel.id}:") for line in plan.left)
