"""`perfgate baseline update --ratchet` only ever tightens a bound, and a kernel's history keeps
its newest HISTORY_KEPT entries, oldest first.

Real captures (tests/data/h200/real): the baseline is recorded from the build that launches an
add twice, and ratcheted with the build that launches it once, so the add's `launches` and
`total_time` improve. The recorded file is then edited the way perfgate itself writes a
calibrated bound (a threshold and the `calibration` text that states it), to put the old bound
on either side of the one the new captures calibrate.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baseline.load import load_baseline
from perfgate.lifecycle.calibrate import TIME_FLOOR_LONG
from perfgate.lifecycle.editplan import HISTORY_KEPT
from perfgate.lifecycle.ownership import calibrated_bound, threshold_is_perfgates
from perfgate.metrics.timefloors import TIME_FLOOR_POINTS
from tests.conftest import ADD_2X, cli_ok, run_args

METRIC = "total_time"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ratchet") / "b.yaml"
    cli_ok(
        "baseline",
        "record",
        *run_args("torch-redundant"),
        "-o",
        str(path),
        "--reason",
        "known good",
    )
    return path


def _edited(recorded: Path, tmp_path: Path, edit: Any) -> Path:
    doc = yaml.safe_load(recorded.read_text())
    (kernel,) = [k for k in doc["kernels"] if k["id"] == ADD_2X]
    edit(kernel)
    target = tmp_path / "b.yaml"
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def _with_bound(relative: float) -> Any:
    """The add's total_time with a bound perfgate calibrated, `relative` wide."""

    def edit(kernel: dict[str, Any]) -> None:
        metric = kernel["metrics"][METRIC]
        metric["threshold"] = {"relative": relative, "absolute": 0.0}
        metric["calibration"] = (
            f"3 runs: spread 0.10% x 2 = 0.20%, floor 3.50% (x): floor {relative:.2%}"
        )

    return edit


def _ratchet(target: Path) -> None:
    cli_ok("baseline", "update", "--ratchet", "-b", str(target), *run_args("torch-flash"))


def _metric(path: Path, name: str = METRIC) -> Any:
    (kernel,) = [k for k in load_baseline(path).kernels if k.id == ADD_2X]
    return next(m for m in kernel.metrics if m.name == name)


def test_a_ratchet_keeps_a_tighter_old_bound(recorded: Path, tmp_path: Path) -> None:
    # Tighter than any time bound perfgate calibrates: the floor for long kernels is the least.
    tight = round(TIME_FLOOR_LONG / 2, 4)
    target = _edited(recorded, tmp_path, _with_bound(tight))
    _ratchet(target)
    metric = _metric(target)
    assert metric.threshold is not None and metric.threshold.relative == tight
    assert calibrated_bound(metric.calibration) == (tight, 0.0)
    assert metric.value < _metric(recorded).value  # the improvement itself was taken


def test_a_ratchet_takes_a_tighter_new_bound(recorded: Path, tmp_path: Path) -> None:
    # Looser than what 3 runs of a 44 us kernel calibrate, and still tighter than the
    # improvement (about half the time: one launch of two), so the metric is ratcheted.
    loose = 0.3
    target = _edited(recorded, tmp_path, _with_bound(loose))
    _ratchet(target)
    metric = _metric(target)
    bound = calibrated_bound(metric.calibration)
    # The least floor of a long kernel of any kind (the recorded GPU's is at least that).
    least = min(points[-1][1] for points in TIME_FLOOR_POINTS.values())
    assert bound is not None and least <= bound[0] < loose
    assert metric.threshold is not None and metric.threshold.relative == bound[0]
    assert metric.value < _metric(recorded).value


def _history(n: int) -> Any:
    def edit(kernel: dict[str, Any]) -> None:
        start = dt.date(2026, 1, 1)
        kernel["history"] = [
            {"date": f"{start + dt.timedelta(days=i):%Y-%m-%d}T00:00:00Z", "reason": f"change {i}"}
            for i in range(n)
        ]

    return edit


@pytest.mark.parametrize("before", [3, HISTORY_KEPT, HISTORY_KEPT + 2])
def test_the_history_keeps_the_newest_entries_in_order(
    recorded: Path, tmp_path: Path, before: int
) -> None:
    assert HISTORY_KEPT == 10  # docs/baselines.md: "The last 10 entries are kept per kernel."
    target = _edited(recorded, tmp_path, _history(before))
    _ratchet(target)
    (kernel,) = [k for k in load_baseline(target).kernels if k.id == ADD_2X]
    reasons = [h.reason for h in kernel.history]
    kept_old = [f"change {i}" for i in range(before)][-(HISTORY_KEPT - 1) :] if before else []
    assert reasons[:-1] == kept_old
    assert len(reasons) == min(before + 1, HISTORY_KEPT)
    assert reasons[-1] == "improved beyond its bound (perfgate baseline update --ratchet)"
    assert kernel.history[-1].action == "ratchet"


def _default_bound(relative: float) -> Any:
    """The add's total_time with no bound of its own: the file-wide `thresholds:` one stands,
    `relative` wide (absolute 0), as a user who wants time gated tighter than the catalog sets."""

    def edit(kernel: dict[str, Any]) -> None:
        metric = kernel["metrics"][METRIC]
        metric.pop("threshold", None)
        metric.pop("calibration", None)

    def edit_file(doc: dict[str, Any]) -> None:
        doc["thresholds"] = {METRIC: {"relative": relative, "absolute": 0.0}}

    edit.file = edit_file  # type: ignore[attr-defined]
    return edit


def test_a_ratchet_never_loosens_a_bound_it_did_not_calibrate(
    recorded: Path, tmp_path: Path
) -> None:
    # Tighter than any time bound perfgate calibrates, set for the whole file: the bound the
    # three new runs calibrate is looser, so the file's bound must stay the one in force.
    tight = round(TIME_FLOOR_LONG / 2, 4)
    edit = _default_bound(tight)
    target = _edited(recorded, tmp_path, edit)
    doc = yaml.safe_load(target.read_text())
    edit.file(doc)
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    _ratchet(target)
    metric = _metric(target)
    assert metric.threshold is None and metric.calibration is None
    assert metric.value < _metric(recorded).value  # the improvement itself was taken


def test_a_bound_calibrated_around_zero_is_perfgates_to_replace(recorded: Path) -> None:
    # Runs whose median is 0 get an absolute bound ("3 runs around 0: absolute 0.5 ..."); the
    # file holds the catalog floor's relative part beside it. `update` must re-record such a
    # bound as it does every bound perfgate calibrated, not keep it as a hand edit.
    around = [
        m
        for k in load_baseline(recorded).kernels
        for m in k.metrics
        if m.calibration and "around 0" in m.calibration
    ]
    assert around
    for metric in around:
        assert threshold_is_perfgates(metric), metric.calibration
        edited = replace(metric, threshold=replace(metric.threshold, absolute=0.25))
        assert not threshold_is_perfgates(edited)  # a hand edit of it still stays


# ------------------------------------------------------------ the capture's scope (issue 25)


def _first_launches(source: Path, target: Path) -> None:
    """`source` as a capture scoped to one launch per kernel (ncu --launch-count): the
    pre-amble and header rows, then each kernel's first launch."""
    import csv

    lines = source.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    name = rows[0].index("Kernel Name")
    seen: set[str] = set()
    kept = lines[: start + 2]  # the names and units rows
    for line, row in zip(lines[start + 2 :], rows[2:], strict=True):
        if row[name] not in seen:
            seen.add(row[name])
            kept.append(line)
    target.write_text("".join(kept))


def _scoped_capture(tmp_path: Path, *filters: str) -> Path:
    import json

    from tests.conftest import data

    capture = tmp_path / "scoped.csv"
    _first_launches(data("zoo-good-short-run1.csv"), capture)
    command = ["ncu", "--clock-control", "none", *filters, "--export", "r", "./zoo_good", "-c"]
    meta = {"perfgate_capture": 1, "command": command}
    (tmp_path / "scoped.csv.meta.json").write_text(json.dumps(meta))
    return capture


def test_a_ratchet_never_tightens_launches_from_a_capture_of_another_scope(
    tmp_path: Path,
) -> None:
    from perfgate.ingest.meta import read_meta
    from tests.conftest import ROOT, data

    capture = _scoped_capture(tmp_path, "--launch-count", "10")
    assert read_meta(str(capture)).scope == "--launch-count 10"
    baseline = tmp_path / "zoo.yaml"
    baseline.write_text((ROOT / "baselines" / "h100" / "zoo.yaml").read_text())
    before = yaml.safe_load(baseline.read_text())
    cli_ok("baseline", "update", "--ratchet", "-b", str(baseline), "-c", str(capture))
    after = yaml.safe_load(baseline.read_text())
    for old, new in zip(before["kernels"], after["kernels"], strict=True):
        assert new.get("launches") == old.get("launches"), new["id"]
        assert new["metrics"]["launches"] == old["metrics"]["launches"], new["id"]
    assert after["program"] == before["program"]  # a sum over the launches: not taken either
    # The unchanged build, captured whole, still passes against the ratcheted baseline.
    from click.testing import CliRunner

    from perfgate.cli import main

    good = data("zoo-good-short-run2.csv")
    result = CliRunner().invoke(main, ["check", "-b", str(baseline), "-c", str(good)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("waived", [False, True])
def test_launches_of_another_scope_are_not_judged_with_the_reason(
    tmp_path: Path, waived: bool
) -> None:
    """Not judged fails the check (exit 2) unless waived by name; either way the counts are
    never judged, nor diagnosed ("launched less often")."""
    import json

    from click.testing import CliRunner

    from perfgate.cli import main
    from tests.conftest import ROOT

    capture = _scoped_capture(tmp_path, "--launch-count", "10", "--nvtx-include", "step/")
    result = CliRunner().invoke(
        main,
        ["check", "-b", str(ROOT / "baselines/h100/zoo.yaml"), "-c", str(capture),
         "--format", "json", *(["--waive", "scope"] if waived else [])],
    )  # fmt: skip
    assert result.exit_code == (0 if waived else 2), result.output
    doc = json.loads(result.stdout)
    kernels = doc["results"][0]["kernels"]
    skipped = [c for k in kernels for c in k["comparisons"] if c["metric"] == "launches"]
    state = "skipped" if waived else "unjudged"
    assert len(skipped) == 10 and {c["state"] for c in skipped} == {state}
    assert {c["skip"] for c in skipped} == {"scope"}
    assert "--launch-count 10 --nvtx-include step/" in skipped[0]["message"]
    assert not any(c["mechanism"] == "launch-count" for k in kernels for c in k["causes"])
    (said,) = doc["not_judged"]
    assert said["reason"] == "scope" and said["fails"] is not waived and said["program"]
    program = doc["results"][0]["program"]
    assert program["state"] == state and "--launch-count 10" in program["reason"]


def test_launched_less_often_gives_the_lever_for_fewer_launches(tmp_path: Path) -> None:
    # Without a sidecar the scope is unknown on both sides: the counts are compared.
    import json

    from click.testing import CliRunner

    from perfgate.cli import main
    from tests.conftest import ROOT, data

    capture = tmp_path / "fewer.csv"
    _first_launches(data("zoo-good-short-run1.csv"), capture)
    result = CliRunner().invoke(
        main,
        ["check", "-b", str(ROOT / "baselines/h100/zoo.yaml"), "-c", str(capture),
         "--format", "json"],
    )  # fmt: skip
    causes = [
        c
        for k in json.loads(result.stdout)["results"][0]["kernels"]
        for c in k["causes"]
        if c["title"] == "Launched less often"
    ]
    assert causes
    for cause in causes:
        assert "redundant launch" not in cause["lever"]
        assert "--launch-count" in cause["lever"] and "accept" in cause["lever"]


def test_an_update_records_the_scope_of_a_baseline_that_had_none(tmp_path: Path) -> None:
    from tests.conftest import ROOT

    capture = _scoped_capture(tmp_path, "--launch-count", "10")
    baseline = tmp_path / "zoo.yaml"
    baseline.write_text((ROOT / "baselines" / "h100" / "zoo.yaml").read_text())
    cli_ok("baseline", "update", "-b", str(baseline), "-c", str(capture), "--reason", "scoped")
    after = load_baseline(str(baseline))
    assert after.gpu.scope == "--launch-count 10"
    assert {k.launches for k in after.kernels} == {1}
    # Updated once more from the same scope: nothing of another scope is left to skip.
    cli_ok("baseline", "update", "--ratchet", "-b", str(baseline), "-c", str(capture))
    assert load_baseline(str(baseline)).gpu.scope == "--launch-count 10"
