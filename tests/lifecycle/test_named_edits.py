"""Issue 31, item 3: a baseline edit changes only what was named.

- `accept -k ONE_KERNEL` took the whole program's time too (+17% from an unrelated new kernel),
  and the history named only that kernel;
- `update` without `--reason` re-recorded a failing program time (+3.1%);
- `update --ratchet` took the capture's launch range with an improved median (an exact 524,288
  load sectors became max 4,194,304, and an 8x uncoalesced load then passed), and took values
  from captures of another scope or capture type.

Real baselines (baselines/h100/zoo.yaml, recorded from zoo-good-short-run1..3) and real
captures (tests/data/h100, tests/data/h200/real). The captures marked SYNTHETIC are DERIVED
from the real ones: one column of some launch rows rewritten, or a sidecar added.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline, MetricBaseline
from perfgate.cli import main
from perfgate.judge.comparison import State, compare_metric, merged_bounds
from perfgate.lifecycle.editplan import PROGRAM_KEY
from perfgate.lifecycle.ratchet import passing_range
from tests.conftest import ROOT, data, run_args

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
TIME = "gpu__time_duration.sum"
COALESCING = "zoo_coalescing"
REGISTERS = "zoo_registers"

Row = dict[str, str]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _derived(
    source: Path, target: Path, edit: Callable[[int, Row], None], more: list[Row] | None = None
) -> Path:
    """SYNTHETIC: `source` with each launch row given to `edit` (its index among the rows of
    its kernel, the row by column name), and `more` rows appended."""
    lines = source.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"Kernel Name"' in line)
    rows = list(csv.reader(io.StringIO("".join(lines[at:]))))
    header = rows[0]
    seen: dict[str, int] = {}
    out_rows = [rows[0], rows[1]]
    for row in rows[2:]:
        named = dict(zip(header, row, strict=True))
        kernel = named["Kernel Name"]
        edit(seen.get(kernel, 0), named)
        seen[kernel] = seen.get(kernel, 0) + 1
        out_rows.append([named[h] for h in header])
    out_rows += [[r[h] for h in header] for r in more or []]
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(out_rows)
    target.write_text("".join(lines[:at]) + buf.getvalue())
    return target


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _copy(tmp_path: Path, source: Path = ZOO) -> Path:
    target = tmp_path / "zoo.yaml"
    shutil.copy(source, target)
    return target


def _doc(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def _kernel(doc: dict[str, Any], kid: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(k for k in doc["kernels"] if k["id"] == kid)
    return entry


def _second_grid(tmp_path: Path) -> Path:
    """SYNTHETIC: zoo-good-short-run2.csv with zoo_coalescing's launches once more at another
    grid, under new launch IDs: a kernel new to the baseline that adds its time to the
    program's (+17%)."""
    source = data("zoo-good-short-run2.csv")
    extra: list[Row] = []

    def keep(_: int, row: Row) -> None:
        if row["Kernel Name"].startswith(COALESCING):
            extra.append(dict(row))

    _derived(source, tmp_path / "probe.csv", keep)
    for n, row in enumerate(extra, start=1):
        row["ID"], row["Grid Size"] = str(1000 + n), "(8192, 1, 1)"
        row[TIME] = f"{int(_number(row[TIME]) * 6.5):,}"
    return _derived(source, tmp_path / "new-kernel.csv", lambda i, r: None, extra)


# ------------------------------------------------------------------ accept names what it takes


def test_accept_of_one_kernel_leaves_the_program_time(tmp_path: Path) -> None:
    baseline = _copy(tmp_path)
    capture = _second_grid(tmp_path)
    code, out = _cli("check", "-b", str(baseline), "-c", str(capture))
    assert code == 1 and "(+17.2%, bound 2.0%: regressed" in out, out
    before = _doc(baseline)
    code, out = _cli(
        "baseline", "accept", "-b", str(baseline), "-c", str(capture), "-k", f"^{REGISTERS}$",
        "--reason", "registers retuned",
    )  # fmt: skip
    assert code == 0, out
    after = _doc(baseline)
    assert after["program"] == before["program"]  # not named: as it was
    assert "program GPU time: regressed" in out and "--program takes it" in out, out
    # Only the named kernel's entry changed, and its history says so.
    for old, new in zip(before["kernels"], after["kernels"], strict=True):
        if old["id"] != REGISTERS:
            assert new == old, old["id"]
    assert [h["reason"] for h in _kernel(after, REGISTERS)["history"]] == ["registers retuned"]


def test_accept_program_takes_it_and_its_history_names_it(tmp_path: Path) -> None:
    baseline = _copy(tmp_path)
    capture = _second_grid(tmp_path)
    old_value = _doc(baseline)["program"]["gpu_time"]["value"]
    code, out = _cli(
        "baseline", "accept", "-b", str(baseline), "-c", str(capture), "-k", f"^{REGISTERS}$",
        "--program", "--reason", "a second grid of the coalescing kernel", "--by", "ci",
    )  # fmt: skip
    assert code == 0, out
    assert "accepted 1 kernel and the program GPU time" in out, out
    program = _doc(baseline)["program"]["gpu_time"]
    assert program["value"] == pytest.approx(old_value * 1.172, rel=0.002)
    (entry,) = program["history"]
    assert entry["action"] == "accept" and entry["by"] == "ci"
    assert entry["reason"] == "a second grid of the coalescing kernel"
    assert entry["previous"] == {PROGRAM_KEY: old_value}
    # The reviewer's tools name it too.
    code, out = _cli("baseline", "diff", "--exit-code", str(ZOO), str(baseline))
    assert code == 1 and "program GPU time taken" in out, out
    assert "program history: accept" in out and "program.gpu_time.value" in out, out
    code, out = _cli("baseline", "show", str(baseline), "-k", "none")
    assert "program history: accept" in out, out
    # The build the program time was taken from now passes it.
    code, out = _cli("check", "-b", str(baseline), "-c", str(capture))
    assert code == 0 and "bound 2.0%: pass" in out, out


def test_accept_without_kernels_takes_a_program_time_that_regressed(tmp_path: Path) -> None:
    baseline = _copy(tmp_path)
    capture = data("zoo-bad-short-run1.csv")
    code, out = _cli(
        "baseline", "accept", "-b", str(baseline), "-c", str(capture), "--reason", "bad build"
    )
    assert code == 0, out
    program = _doc(baseline)["program"]["gpu_time"]
    assert program["value"] > 10 * 1541408
    assert [h["action"] for h in program["history"]] == ["accept"]


def test_accept_program_from_captures_of_another_scope_is_refused(tmp_path: Path) -> None:
    # --program with captures that cannot give it (another scope): refused, nothing written.
    baseline = _copy(tmp_path)
    capture = _with_sidecar(
        _second_grid(tmp_path), {"command": ["ncu", "--launch-count", "10", "./zoo"]}
    )
    text = baseline.read_text()
    result = CliRunner().invoke(
        main,
        ["baseline", "accept", "-b", str(baseline), "-c", str(capture), "--program",
         "--reason", "x"],
    )  # fmt: skip
    assert result.exit_code == 2 and "cannot take the program GPU time" in result.output
    assert baseline.read_text() == text


# --------------------------------------------------------------- update takes no regression


def _slower(tmp_path: Path, factor: float) -> Path:
    """SYNTHETIC: zoo-good-short-run2.csv with every launch `factor` slower."""

    def edit(_: int, row: Row) -> None:
        row[TIME] = f"{round(_number(row[TIME]) * factor):,}"

    return _derived(data("zoo-good-short-run2.csv"), tmp_path / "slower.csv", edit)


def test_update_without_a_reason_keeps_a_regressed_program_time(tmp_path: Path) -> None:
    baseline = _copy(tmp_path)
    capture = _slower(tmp_path, 1.0305)
    code, out = _cli("check", "-b", str(baseline), "-c", str(capture))
    assert code == 1 and "program GPU time" in out and "+3.1%" in out, out
    before = _doc(baseline)["program"]
    code, out = _cli("baseline", "update", "-b", str(baseline), "-c", str(capture))
    assert code == 0, out
    assert _doc(baseline)["program"] == before
    assert "program GPU time: regressed (+3.1%); left as it was" in out, out
    code, _ = _cli("check", "-b", str(baseline), "-c", str(capture))
    assert code == 1  # still failing: nothing was taken silently
    # With a reason it is taken, and its history says why.
    code, out = _cli(
        "baseline", "update", "-b", str(baseline), "-c", str(capture), "--reason", "slower"
    )
    assert code == 0, out
    program = _doc(baseline)["program"]["gpu_time"]
    assert program["value"] > before["gpu_time"]["value"] * 1.02
    assert [(h["action"], h["reason"]) for h in program["history"]] == [("accept", "slower")]


def test_update_within_the_bound_re_records_the_program_time_without_history(
    tmp_path: Path,
) -> None:
    baseline = _copy(tmp_path)
    code, out = _cli("baseline", "update", "-b", str(baseline), "-c",
                     str(data("zoo-good-short-run2.csv")))  # fmt: skip
    assert code == 0, out
    program = _doc(baseline)["program"]["gpu_time"]
    assert "history" not in program and program["runs"] == [1542336]


# ------------------------------------------------------------- the ratchet only ever tightens


def _mixed_sectors(tmp_path: Path) -> list[Path]:
    """SYNTHETIC: the three good runs, with zoo_coalescing's first launch of each run reading
    8x the sectors (uncoalesced, as the bad build) and the other two half: a better median
    (262,144) over a launch range up to 4,194,304."""

    def edit(i: int, row: Row) -> None:
        if row["Kernel Name"].startswith(COALESCING):
            row[SECTORS] = "4,194,304" if i == 0 else "262,144"

    return [
        _derived(data(f"zoo-good-short-run{n}.csv"), tmp_path / f"mixed{n}.csv", edit)
        for n in (1, 2, 3)
    ]


def _captures(paths: list[Path]) -> list[str]:
    return [a for p in paths for a in ("-c", str(p))]


def assert_nothing_widened(before: Baseline, after: Baseline) -> None:
    """Every value the old baseline failed, the new one fails: each metric's passing range
    (plan.passing_range) inside the old one, and the judge itself (compare_metric) failing a
    value just outside the old range on each worse side."""
    olds = {(k.id, m.name): m for k in before.kernels for m in k.metrics}
    for kernel in after.kernels:
        for metric in kernel.metrics:
            old = olds.get((kernel.id, metric.name))
            if old is None or isinstance(old.value, str):
                continue
            low, high = passing_range(old, before)
            new_low, new_high = passing_range(metric, after)
            where = f"{kernel.id} {metric.name}"
            assert new_low >= low - 1e-9 * abs(low) and new_high <= high + 1e-9 * abs(high), where
            for edge, step in ((high, 1.0), (low, -1.0)):
                if math.isfinite(edge):
                    probe = edge + step * max(1e-6 * abs(edge), 1e-6)
                    assert _judged(after, metric, probe) is State.REGRESSED, (where, probe)


def _judged(baseline: Baseline, metric: MetricBaseline, value: float) -> State:
    defn = metric.definition
    bounds = merged_bounds(defn, metric, baseline)
    return compare_metric("k", metric, defn, value, metric.unit or defn.unit, bounds).state


def test_the_ratchet_never_widens_a_launch_range(tmp_path: Path) -> None:
    baseline = _copy(tmp_path)
    before = load_baseline(str(baseline))
    code, out = _cli("baseline", "update", "--ratchet", "-b", str(baseline),
                     *_captures(_mixed_sectors(tmp_path)))  # fmt: skip
    assert code == 0, out
    entry = _kernel(_doc(baseline), COALESCING)["metrics"]["global_load_sectors"]
    assert entry["value"] == 262144  # the better median was taken
    assert entry.get("max", entry["value"]) <= 524288  # its range did not grow
    assert_nothing_widened(before, load_baseline(str(baseline)))
    # The 8x uncoalesced build still fails on its load sectors.
    result = CliRunner().invoke(
        main, ["check", "-b", str(baseline), "-c", str(data("zoo-bad-short-run1.csv")),
               "--format", "json"],
    )  # fmt: skip
    doc = json.loads(result.output)
    (verdict,) = [v for v in doc["results"][0]["kernels"] if v["kernel"] == COALESCING]
    sectors = next(c for c in verdict["comparisons"] if c["metric"] == "global_load_sectors")
    assert sectors["state"] == "regressed", sectors


def test_the_ratchet_of_real_runs_narrows_every_range(tmp_path: Path) -> None:
    # Real captures: the build that launches an add twice, ratcheted with the build that
    # launches it once (tests/lifecycle/test_ratchet.py): whatever it takes, nothing widens.
    baseline = tmp_path / "b.yaml"
    code, out = _cli("baseline", "record", *run_args("torch-redundant"), "-o", str(baseline))
    assert code == 0, out
    before = load_baseline(str(baseline))
    code, out = _cli("baseline", "update", "--ratchet", "-b", str(baseline),
                     *run_args("torch-flash"))  # fmt: skip
    assert code == 0 and "ratcheted" in out, out
    after = load_baseline(str(baseline))
    assert after != before
    assert_nothing_widened(before, after)
    assert after.program is not None and before.program is not None
    assert after.program.value * (1 + after.program.relative) <= before.program.value * (
        1 + before.program.relative
    )


def _with_sidecar(capture: Path, meta: dict[str, Any]) -> Path:
    Path(f"{capture}.meta.json").write_text(json.dumps({"perfgate_capture": 1, **meta}))
    return capture


def _better_sectors(tmp_path: Path, name: str) -> Path:
    """SYNTHETIC: zoo-good-short-run2.csv with zoo_coalescing reading half the sectors."""

    def edit(_: int, row: Row) -> None:
        if row["Kernel Name"].startswith(COALESCING):
            row[SECTORS] = "262,144"

    return _derived(data("zoo-good-short-run2.csv"), tmp_path / name, edit)


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        # Another scope: ncu kept 10 launches.
        ({"command": ["ncu", "--launch-count", "10", "./zoo_good"]}, "scope"),
        # Another capture type: a gate capture against a baseline of full captures.
        ({"phase": "gate", "command": ["ncu", "./zoo_good"]}, "gate capture"),
    ],
    ids=["scope", "time-basis"],
)
def test_the_ratchet_takes_nothing_from_captures_of_another_kind(
    tmp_path: Path, meta: dict[str, Any], why: str
) -> None:
    baseline = _copy(tmp_path)
    text = baseline.read_text()
    plain = _better_sectors(tmp_path, "plain.csv")
    # The same capture without a sidecar is of the baseline's kind: its improvement is taken.
    (tmp_path / "probe").mkdir()
    probe = _copy(tmp_path / "probe")
    code, out = _cli("baseline", "update", "--ratchet", "-b", str(probe), "-c", str(plain))
    assert (
        code == 0
        and _kernel(_doc(probe), COALESCING)["metrics"]["global_load_sectors"]["value"] == 262144
    ), out
    other = _with_sidecar(_better_sectors(tmp_path, "other.csv"), meta)
    code, out = _cli("baseline", "update", "--ratchet", "-b", str(baseline), "-c", str(other))
    assert code == 0, out
    assert baseline.read_text() == text
    assert "nothing ratcheted" in out and why in out, out
