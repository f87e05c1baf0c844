"""Issue 23: `perfgate baseline diff` and `baseline show` see every edit the check would see.

`diff --all --exit-code` said "the same values" for an edit that widened `min`/`max`, dropped
a metric's `calibration:` notes (which decide whether the bound is judged from the median or
from the launch range) or changed a categorical rule, and `show` printed none of them: the
reviewer's view missed edits that switch the gate off. Each field of the schema is edited
alone here; the tables are checked against the schema, so a field added to it fails this test
until its edit is listed (and, through perfgate.lifecycle.views.metric_rules, reported).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from perfgate import cli
from tests.conftest import ROOT

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
SCHEMA = json.loads((ROOT / "schemas" / "baseline.schema.json").read_text())
DEFS = SCHEMA["$defs"]

Doc = dict[str, Any]
Edit = Callable[[Doc], None]


def _metric(doc: Doc, name: str, kernel: int = 0) -> Doc:
    metric: Doc = doc["kernels"][kernel]["metrics"][name]
    return metric


def _set(name: str, key: str, value: object, kernel: int = 0) -> Edit:
    def edit(doc: Doc) -> None:
        _metric(doc, name, kernel)[key] = value

    return edit


def _drop(name: str, key: str) -> Edit:
    def edit(doc: Doc) -> None:
        del _metric(doc, name)[key]

    return edit


def _threshold(name: str, key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        _metric(doc, name).setdefault("threshold", {})[key] = value

    return edit


# One edit per property of a metric entry: each changes what the check reads.
METRIC_EDITS: dict[str, Edit] = {
    "value": _set("achieved_occupancy", "value", 22.25),  # within its bound: --all lists it
    "min": _set("achieved_occupancy", "min", 5.0),
    "max": _set("achieved_occupancy", "max", 90.0),
    "unit": _set("duration", "unit", "us"),
    "source": _set("tensor_instructions", "source", "smsp__inst_executed_pipe_tensor_op_hmma.sum"),
    "group": _set("tensor_instructions", "group", "hmma_only"),
    "shares": _set("dominant_stall", "shares", {"short_scoreboard": 90.0, "wait": 10.0}),
    "threshold": _set("achieved_occupancy", "threshold", {"relative": 0.5, "absolute": 2.0}),
    "reasons": _set("dominant_stall", "reasons", ["short_scoreboard", "wait"]),
    "family": _set("dominant_stall", "family", "per_issue_active"),
    "calibration": _drop("achieved_occupancy", "calibration"),
}

# One edit per property of a threshold override (numeric and categorical rules).
OVERRIDE_EDITS: dict[str, Edit] = {
    "relative": _threshold("achieved_occupancy", "relative", 0.9),
    "absolute": _threshold("achieved_occupancy", "absolute", 50.0),
    "direction": _threshold("achieved_occupancy", "direction", "higher_is_worse"),
    "stable": _threshold("occupancy_limiter", "stable", False),
    "expect": _threshold("occupancy_limiter", "expect", ["warps", "registers"]),
    "forbid": _threshold("occupancy_limiter", "forbid", ["shared_mem"]),
    "margin": _threshold("dominant_stall", "margin", 50.0),
}


def _kernel_set(key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        doc["kernels"][0][key] = value

    return edit


def _match_set(key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        doc["kernels"][0]["match"][key] = value

    return edit


KERNEL_EDITS: dict[str, Edit] = {
    "id": _kernel_set("id", "init_random_renamed"),
    "match": _match_set("block", [128, 1, 1]),
    "name": _kernel_set("name", "init_random(float *, int, unsigned int) [as shown]"),
    "launches": _kernel_set("launches", 2),
    "metrics": lambda doc: doc["kernels"][0]["metrics"].pop("launches"),
    "family": _kernel_set("family", "cuRAND"),
    "configurations": _kernel_set(
        "configurations", [{"grid": [16384, 1, 1], "block": [256, 1, 1], "runs": 3}]
    ),
    "history": _kernel_set("history", [{"date": "2026-11-23", "reason": "hand edit"}]),
    "seen_in": _kernel_set("seen_in", {"runs": 1, "of": 3}),
}
# Kernel properties the gate does not read (the differential diagnosis does): not compared.
KERNEL_NOT_GATED = {"info"}

MATCH_EDITS: dict[str, Edit] = {
    "function": _match_set("function", "init_random"),
    "name": _match_set("name", "init_random(float *, int, int)"),
    "regex": _match_set("regex", "^init_random"),
    "block": _match_set("block", [128, 1, 1]),
    "grid": _match_set("grid", [8192, 1, 1]),
    "nvtx": _match_set("nvtx", "zoo/init"),
    "work": _match_set("work", 2),
}


def _file_threshold(metric: str, key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        doc.setdefault("thresholds", {}).setdefault(metric, {})[key] = value

    return edit


def _program(key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        doc["program"]["gpu_time"][key] = value

    return edit


FILE_EDITS: dict[str, Edit] = {
    "thresholds (numeric)": _file_threshold("registers_per_thread", "relative", 0.5),
    "thresholds (categorical)": _file_threshold("occupancy_limiter", "expect", ["warps"]),
    "program threshold": _program("threshold", {"relative": 0.5}),
    "program value": _program("value", 3000000),
    "program calibration": _program("calibration", "hand-widened"),
    "program removed": lambda doc: doc.pop("program"),
    "identity": lambda doc: doc.__setitem__("identity", {"nvtx": True}),
}


def _fingerprint(key: str, value: object) -> Edit:
    def edit(doc: Doc) -> None:
        doc["fingerprint"][key] = value

    return edit


def _fewer(key: str) -> Edit:
    def edit(doc: Doc) -> None:
        doc["fingerprint"][key] = doc["fingerprint"][key][1:]

    return edit


# One edit per property of the fingerprint (issue 31: a hand-added `scope:` line switched off
# launch counts and the program time, and neither `diff` nor `show` said so).
FINGERPRINT_EDITS: dict[str, Edit] = {
    "gpu": _fingerprint("gpu", "NVIDIA H100 PCIe"),
    "cc": _fingerprint("cc", "9.1"),
    "ncu": _fingerprint("ncu", "2025.1.1.0"),
    "driver": _fingerprint("driver", "570.86.15"),
    "clock_control": _fingerprint("clock_control", "none"),
    "cache_control": _fingerprint("cache_control", "none"),
    "stall_family": _fingerprint("stall_family", "per_issue_active"),
    "stall_reasons": _fewer("stall_reasons"),
    "metrics": _fewer("metrics"),
    "scope": _fingerprint("scope", "--launch-count 1000"),
    "time_basis": _fingerprint("time_basis", "gate"),
}


def _base() -> Doc:
    doc: Doc = yaml.safe_load(ZOO.read_text())
    return doc


def _write(doc: Doc, path: Path) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_every_schema_property_has_an_edit_here() -> None:
    assert set(METRIC_EDITS) == set(DEFS["metric"]["properties"])
    assert set(OVERRIDE_EDITS) == set(DEFS["override"]["properties"])
    assert set(KERNEL_EDITS) | KERNEL_NOT_GATED == set(DEFS["kernel"]["properties"])
    assert set(MATCH_EDITS) == set(DEFS["match"]["properties"])
    assert set(FINGERPRINT_EDITS) == set(SCHEMA["properties"]["fingerprint"]["properties"])
    program = SCHEMA["properties"]["program"]["properties"]["gpu_time"]["properties"]
    assert {"value", "threshold", "calibration"} <= set(program)


ALL_EDITS = {
    **{f"metric.{k}": v for k, v in METRIC_EDITS.items()},
    **{f"threshold.{k}": v for k, v in OVERRIDE_EDITS.items()},
    **{f"kernel.{k}": v for k, v in KERNEL_EDITS.items()},
    **{f"match.{k}": v for k, v in MATCH_EDITS.items()},
    **{f"file.{k}": v for k, v in FILE_EDITS.items()},
    **{f"fingerprint.{k}": v for k, v in FINGERPRINT_EDITS.items()},
}


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(_base(), tmp_path_factory.mktemp("review") / "before.yaml")


@pytest.fixture(scope="module")
def shown_before(before: Path) -> str:
    return _cli("baseline", "show", str(before))[1].replace(str(before), "X")


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("field", sorted(ALL_EDITS))
def test_an_edit_of_one_field_is_reported_by_diff_and_printed_by_show(
    field: str, before: Path, shown_before: str, tmp_path: Path
) -> None:
    doc = _base()
    ALL_EDITS[field](doc)
    after = _write(doc, tmp_path / "after.yaml")
    # Exit 1, not 2: the edited file is valid (the diff loads and checks it).
    code, out = _cli("baseline", "diff", "--all", "--exit-code", str(before), str(after))
    assert code == 1, out
    assert "the same values" not in out
    code, out = _cli("baseline", "diff", "--all", "--format", "markdown", str(before), str(after))
    assert code == 0 and "the same values" not in out, out
    shown = _cli("baseline", "show", str(after))[1].replace(str(after), "X")
    assert shown != shown_before, field


def test_diff_names_the_widened_range_and_the_dropped_calibration(
    before: Path, tmp_path: Path
) -> None:
    doc = _base()
    METRIC_EDITS["min"](doc)
    METRIC_EDITS["calibration"](doc)
    OVERRIDE_EDITS["expect"](doc)
    after = _write(doc, tmp_path / "after.yaml")
    code, out = _cli("baseline", "diff", "--exit-code", str(before), str(after))
    assert code == 1
    assert "min 21.97 -> 5" in out
    assert "calibration" in out and "-> -" in out
    assert "expect" in out and "warps, registers" in out
    code, out = _cli("baseline", "show", str(after), "-k", "init_random")
    assert "min 5" in out and "expect [warps, registers]" in out


def test_the_same_file_still_gates_the_same_values(before: Path) -> None:
    code, out = _cli("baseline", "diff", "--all", "--exit-code", str(ZOO), str(before))
    assert code == 0, out
    assert out.strip().endswith("gate the same values")


def test_a_reworded_calibration_is_listed_with_all_and_still_differs(
    before: Path, tmp_path: Path
) -> None:
    # A re-record rewrites the wording of a calibration while the bound stays: not a change of
    # the gate (listed with --all, like a value that moved within its bound), but a difference.
    doc = _base()
    _set("achieved_occupancy", "calibration", "3 runs: reworded")(doc)
    after = _write(doc, tmp_path / "after.yaml")
    code, out = _cli("baseline", "diff", "--exit-code", str(before), str(after))
    assert code == 1 and "1 more changed within their bounds" in out, out
    code, out = _cli("baseline", "diff", "--all", str(before), str(after))
    assert code == 0 and "calibration 3 runs: spread" in out and "-> 3 runs: reworded" in out


def test_a_hand_added_scope_is_named_by_diff_and_show(before: Path, tmp_path: Path) -> None:
    """The hostile round's edit: one `scope: --launch-count 1000` line in the fingerprint.
    `validate` accepts it (a scope is free text), and from then on launch counts and the program
    time are not compared for a capture of another scope: diff and show must both say it."""
    doc = _base()
    FINGERPRINT_EDITS["scope"](doc)
    after = _write(doc, tmp_path / "after.yaml")
    code, out = _cli("baseline", "diff", "--exit-code", str(before), str(after))
    assert code == 1, out
    assert "fingerprint changed" in out and "gate the same values" not in out
    assert "fingerprint scope: - -> --launch-count 1000" in out
    code, out = _cli("baseline", "show", str(after), "-k", "init_random")
    assert code == 0 and "scope --launch-count 1000" in out.splitlines()[0], out
    code, out = _cli("baseline", "diff", "--format", "markdown", str(before), str(after))
    assert "fingerprint scope" in out and "--launch-count 1000" in out, out


def test_diff_prints_a_fingerprint_list_as_written(before: Path, tmp_path: Path) -> None:
    doc = _base()
    FINGERPRINT_EDITS["stall_reasons"](doc)
    after = _write(doc, tmp_path / "after.yaml")
    _, out = _cli("baseline", "diff", str(before), str(after))
    assert "fingerprint stall_reasons: [barrier, branch_resolving," in out, out
    assert "-> [branch_resolving," in out and "('" not in out
