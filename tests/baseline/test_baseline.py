from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml

from perfgate.baseline.dump import dump_baseline, to_document
from perfgate.baseline.load import load_baseline
from perfgate.common.errors import BaselineError
from perfgate.ingest import read_captures
from perfgate.lifecycle.record import RecordSettings, record
from tests.conftest import ROOT, data

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"


def _write(tmp_path: Path, text: str, name: str = "b.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _minimal(
    metrics: str = "registers_per_thread: {value: 16}", match: str = "{function: k}"
) -> str:
    return f"format_version: 1\nkernels:\n- id: k\n  match: {match}\n  metrics:\n    {metrics}\n"


def test_record_dump_load_round_trip(tmp_path: Path) -> None:
    cap = read_captures([data("zoo-good-short-run1.csv")])
    baseline = record(cap, RecordSettings(reason="test")).baseline
    path = _write(tmp_path, dump_baseline(baseline))
    loaded = load_baseline(path)
    assert to_document(loaded) == to_document(baseline)
    assert loaded.provenance["reason"] == "test"
    assert "gpu" not in loaded.provenance  # the fingerprint says it now
    assert loaded.gpu.key == ("NVIDIA H100 80GB HBM3", "9.0")
    assert loaded.fingerprint is not None and loaded.fingerprint.stall_family is not None


def test_committed_baselines_are_what_record_makes_of_the_committed_captures() -> None:
    for name, captures in {
        "zoo.yaml": [f"zoo-good-short-run{i}.csv" for i in (1, 2, 3)],
        "zoo-full.yaml": [f"zoo-good-full-run{i}.csv.gz" for i in (1, 2, 3)],
        "torch.yaml": [f"torch-short-run{i}.csv" for i in (1, 2, 3)],
    }.items():
        committed = to_document(load_baseline(ROOT / "baselines" / "h100" / name))
        fresh = to_document(
            record(read_captures([data(c) for c in captures]), RecordSettings()).baseline
        )
        for doc in (committed, fresh):
            doc["provenance"].pop("recorded_at")
            doc["provenance"].pop("reason")
            doc["provenance"].pop("recorded_by")
        assert committed == fresh, (
            f"baselines/h100/{name} is stale: re-record it (docs/baselines.md)"
        )


def test_schema_errors_name_file_json_path_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _minimal("registers_per_thread: {value: [16]}"))
    with pytest.raises(BaselineError) as err:
        load_baseline(path)
    lines = err.value.lines()
    assert lines == [
        f"{path}:6:35: $.kernels[0].metrics.registers_per_thread.value: [16] is not of type 'number', 'string'"
    ]


def test_all_problems_are_reported_one_per_line(tmp_path: Path) -> None:
    text = (
        "format_version: 1\nkernels:\n- id: k\n  match: {}\n  metrics: {x: {value: 1, extra: 2}}\n"
    )
    with pytest.raises(BaselineError) as err:
        load_baseline(_write(tmp_path, text))
    lines = err.value.lines()
    assert any(
        ":4:10: $.kernels[0].match: needs one of: function, name, regex" in line for line in lines
    )
    assert any("$.kernels[0].metrics.x" in line and "extra" in line for line in lines)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _minimal("registers_per_thread: {value: many}"),
            r"\$\.kernels\[0\]\.metrics\.registers_per_thread\.value: registers_per_thread needs a number",
        ),
        (_minimal("dominant_stall: {value: 3}"), "dominant_stall is categorical"),
        (_minimal("no_such_metric: {value: 3}"), r"metrics\.no_such_metric: unknown metric"),
        (
            _minimal("duration: {value: 3, threshold: {expect: [a]}}"),
            "does not apply to duration, a numeric metric",
        ),
        (_minimal(match="{regex: '(unclosed'}"), "not a valid regular expression"),
        ("format_version: 3\nkernels: []\n", "format_version 3 is not one this perfgate reads"),
        ("format_version: 1\nkernels: []\n", r"\$\.kernels: \[\] should be non-empty"),
        ("- just\n- a list\n", r"\$: \['just', 'a list'\] is not of type 'object'"),
        (
            _minimal() + "- id: k\n  match: {function: k2}\n  metrics: {duration: {value: 1}}\n",
            "duplicate id 'k'",
        ),
    ],
)
def test_semantic_and_schema_problems(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BaselineError, match=message):
        load_baseline(_write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("kernels: [\n", r":\d+:\d+: not valid YAML"),
        (
            "a: !!python/object/apply:os.system ['touch /tmp/perfgate-pwned']\n",
            "only plain YAML data is allowed",
        ),
        ("a: !!python/name:os.system\n", "only plain YAML data is allowed"),
        ("a: &x [1]\nb: *x\n", "anchors and aliases are not allowed"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
    ],
)
def test_unusable_yaml_is_refused_and_never_executed(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(BaselineError, match=message):
        load_baseline(_write(tmp_path, text))
    assert not Path("/tmp/perfgate-pwned").exists()


def test_alias_bomb_fails_fast(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]" for i in range(1, 12)]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    start = time.perf_counter()
    with pytest.raises(BaselineError, match="anchors and aliases"):
        load_baseline(path)
    assert time.perf_counter() - start < 1.0


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="no such file"):
        load_baseline(tmp_path / "none.yaml")
    with pytest.raises(BaselineError, match="directory"):
        load_baseline(tmp_path)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(BaselineError, match="binary"):
        load_baseline(binary)
    if os.geteuid() != 0:  # root reads anything
        locked = _write(tmp_path, _minimal(), "locked.yaml")
        locked.chmod(0)
        with pytest.raises(BaselineError, match="cannot read"):
            load_baseline(locked)


def test_overrides_are_read(tmp_path: Path) -> None:
    text = (
        "format_version: 1\nthresholds:\n  duration: {relative: 0.5}\n"
        "kernels:\n- id: k\n  match: {function: k, block: [256, 1, 1]}\n  metrics:\n"
        "    duration: {value: 10, threshold: {absolute: 3, direction: any_change}}\n"
        "    dominant_stall: {value: wait, threshold: {forbid: [lg_throttle], margin: 2}}\n"
    )
    b = load_baseline(_write(tmp_path, text))
    assert b.thresholds["duration"].relative == 0.5
    duration, stall = b.kernels[0].metrics
    assert duration.threshold is not None and duration.threshold.absolute == 3
    assert (
        stall.check is not None
        and stall.check.forbid == ("lg_throttle",)
        and stall.check.margin == 2
    )
    assert b.kernels[0].match.block == (256, 1, 1)


def test_committed_example_is_valid_yaml_a_person_can_read() -> None:
    doc = yaml.safe_load(ZOO.read_text())
    kernel = next(k for k in doc["kernels"] if k["id"] == "zoo_registers")
    assert kernel["metrics"]["registers_per_thread"]["value"] == 32
    # An editor's schema line first (record writes it), then the file's own header.
    first, second = ZOO.read_text().splitlines()[:2]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith(
        "schemas/baseline.schema.json"
    )
    assert second.startswith("# perfgate baseline")


_DURATION = "duration: {value: 1000, min: 900, max: 1100, unit: ns, source: gpu__time_duration.sum}"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (_minimal(_DURATION[:-1] + ", threshold: {relative: .nan}}"),
         "$.kernels[0].metrics.duration.threshold.relative"),
        (_minimal(_DURATION[:-1] + ", threshold: {absolute: .Inf}}"),
         "$.kernels[0].metrics.duration.threshold.absolute"),
        (_minimal("dominant_stall: {value: wait, threshold: {margin: .INF}}"),
         "$.kernels[0].metrics.dominant_stall.threshold.margin"),
        (_minimal(_DURATION.replace("value: 1000", "value: .inf")),
         "$.kernels[0].metrics.duration.value"),
        (_minimal(_DURATION.replace("min: 900", "min: -.inf")),
         "$.kernels[0].metrics.duration.min"),
        (_minimal(_DURATION.replace("max: 1100", "max: .NaN")),
         "$.kernels[0].metrics.duration.max"),
        (_minimal(_DURATION) + "thresholds: {duration: {relative: .NaN}}\n",
         "$.thresholds.duration.relative"),
        (_minimal(_DURATION) + "program: {gpu_time: {value: .inf, threshold: {relative: 0.1}}}\n",
         "$.program.gpu_time.value"),
        (_minimal(_DURATION) + "program: {gpu_time: {value: 5, runs: [5, .NAN], threshold: {relative: 0.1}}}\n",
         "$.program.gpu_time.runs[1]"),
        (_minimal(_DURATION) + "program: {gpu_time: {value: 5, threshold: {relative: .nan}}}\n",
         "$.program.gpu_time.threshold.relative"),
        (_minimal(_DURATION).replace("  metrics:", "  configurations: [{runs: 1, duration: .inf}]\n  metrics:"),
         "$.kernels[0].configurations[0].duration"),
    ],
)  # fmt: skip
def test_non_finite_numbers_are_refused_by_both_loaders(
    tmp_path: Path, text: str, where: str
) -> None:
    """`.nan` passes every comparison (`x > nan` is false), so a threshold of it never regresses;
    `.inf` likewise. Each is one `FILE:LINE:COL: $.path: ... not a finite number` line, and the fast
    schema check never vouches for the document."""
    from perfgate.baseline.fastcheck import document_is_valid
    from perfgate.common.schemas import schema_errors

    path = _write(tmp_path, text)
    with pytest.raises(BaselineError) as err:
        load_baseline(path)
    lines = err.value.lines()
    assert len(lines) == 1, lines
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: {re.escape(where)}: ", lines[0]), lines
    assert "is not a finite number" in lines[0]
    doc = yaml.safe_load(text)
    assert not document_is_valid(doc)
    assert schema_errors(doc, "baseline.schema.json")


def test_a_negative_configuration_duration_is_refused_by_both_loaders(tmp_path: Path) -> None:
    """Found by tests/hostile/test_properties.py (configuration, -1.0): the fast document check vouched
    for a negative `configurations[0].duration` that jsonschema refuses (minimum 0), so
    `perfgate check` took a baseline that `perfgate baseline validate` refused."""
    from perfgate.baseline.fastcheck import document_is_valid
    from perfgate.common.schemas import schema_errors

    text = _minimal(_DURATION).replace(
        "  metrics:", "  configurations: [{runs: 1, duration: -1.0}]\n  metrics:"
    )
    doc = yaml.safe_load(text)
    assert schema_errors(doc, "baseline.schema.json")
    assert not document_is_valid(doc)
    with pytest.raises(BaselineError) as err:
        load_baseline(_write(tmp_path, text))
    lines = err.value.lines()
    assert len(lines) == 1, lines
    assert "$.kernels[0].configurations[0].duration: -1.0 is less than the minimum of 0" in lines[0]


def test_validate_and_check_refuse_a_nan_threshold(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from perfgate.cli import main

    path = _write(tmp_path, _minimal(_DURATION[:-1] + ", threshold: {relative: .nan}}"))
    runner = CliRunner()
    for args in (
        ["baseline", "validate", str(path)],
        ["check", "--baseline", str(path), "--capture", str(data("zoo-good-short-run1.csv"))],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert "threshold.relative: nan is not a finite number" in result.output
        assert "Traceback" not in result.output
