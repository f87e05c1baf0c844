from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.ingest import read_capture
from perfgate.ingest.launches import Launch
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured, Unavailable, measure
from perfgate.metrics.stalls import FAMILIES, FAMILY_BY_NAME, STALL_REASONS, stall_family_report
from tests.conftest import DATA, H200_REAL, ROOT, cli_ok, data

QUERY = ROOT.parent / "shared" / "reference" / "query_metrics_gh100.txt"
FOUR = ("long_scoreboard", "wait", "short_scoreboard", "drain")


def _kernel(path: str, function: str) -> tuple[list[Launch], frozenset[str]]:
    cap = read_capture(data(path))
    return [la for la in cap.launches if la.function == function], cap.columns


def _drop(columns: frozenset[str], keep: tuple[str, ...]) -> frozenset[str]:
    """The real capture's columns with every stall reason but `keep` (and selected) dropped."""
    fam = FAMILY_BY_NAME["per_warp_active"]
    gone = {fam.metric(r) for r in STALL_REASONS if r not in keep} | {fam.metric("not_selected")}
    return columns - gone


@pytest.mark.skipif(not QUERY.exists(), reason="GH100 metric list not available")
def test_counter_family_names_are_ncus_own() -> None:
    names = {line.split()[0] for line in QUERY.read_text().splitlines() if line.strip()}
    for fam in FAMILIES:
        if fam.group != "counters":
            continue
        for reason in (*STALL_REASONS, "selected", "not_selected"):
            if reason == "warpgroup_arrive":
                continue
            base = fam.metric(reason).rsplit(".", 1)[0]
            assert base in names, base


def test_the_most_complete_family_wins_and_a_partial_one_is_warned_about() -> None:
    _, columns = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    fam, warnings = stall_family_report(columns, "9.0")
    assert fam is not None and fam.name == "per_warp_active" and warnings == ()
    # Derived from the real capture: 4 reasons of the pct family kept, and a complete copy
    # of the count family added (values from the pct family: same numerator).
    count = FAMILY_BY_NAME["count"]
    four = _drop(columns, FOUR)
    full_count = four | {count.metric(r) for r in (*STALL_REASONS, "selected")}
    full_count -= {count.metric("warpgroup_arrive")}
    fam2, warnings2 = stall_family_report(full_count, "9.0")
    assert fam2 is not None and fam2.name == "count"
    assert any("4 of" in w and "not used" in w for w in warnings2)
    fam3, warnings3 = stall_family_report(four, "9.0")
    assert fam3 is not None and fam3.name == "per_warp_active"
    assert len(warnings3) == 1 and "missing: barrier" in warnings3[0]


def test_selected_and_not_selected_are_never_shares_or_the_dominant_stall() -> None:
    # Synthetic, derived from a real launch: not_selected made the largest value of all.
    launches, columns = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    fam = FAMILY_BY_NAME["per_warp_active"]
    boosted = [
        Launch(la.index, la.name, la.function, la.block, la.grid,
               {**la.metrics, fam.metric("not_selected"): 1e6, fam.metric("selected"): 1e6},
               la.units, la.device, la.cc)
        for la in launches
    ]  # fmt: skip
    m = measure(lookup("dominant_stall"), boosted, columns)
    assert isinstance(m, Measured) and m.value == "long_scoreboard"
    assert m.shares is not None and not {"selected", "not_selected"} & set(m.shares)
    assert sum(m.shares.values()) == pytest.approx(100.0, abs=1.0)


def test_a_baseline_reason_set_pins_the_shares() -> None:
    # Derived from the real capture by dropping columns: a baseline recorded from 4 reasons
    # compares with a capture holding all of them over the same 4.
    launches, columns = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    four = _drop(columns, FOUR)
    base = measure(lookup("stall.long_scoreboard"), launches, four)
    assert isinstance(base, Measured) and set(base.reasons) == set(FOUR)
    full = measure(lookup("stall.long_scoreboard"), launches, columns)
    pinned = measure(lookup("stall.long_scoreboard"), launches, columns, reasons=base.reasons)
    assert isinstance(full, Measured) and isinstance(pinned, Measured)
    assert pinned.value == pytest.approx(float(base.value))
    assert len(full.reasons) > 4 and float(full.value) < float(pinned.value)
    # The other way round: the baseline holds a reason this capture lacks.
    lacking = measure(lookup("dominant_stall"), launches, four, reasons=full.reasons)
    assert isinstance(lacking, Unavailable) and "barrier" in lacking.reason


def test_real_four_reason_capture_compares_with_a_full_one_over_its_reasons() -> None:
    cap = read_capture(DATA.parent / "h200" / "real" / "zoo-good-4stalls-run1.csv")
    fam, warnings = stall_family_report(cap.columns, "9.0")
    assert fam is not None and warnings
    launches = [la for la in cap.launches if la.function == "zoo_coalescing"]
    small = measure(lookup("dominant_stall"), launches, cap.columns)
    assert isinstance(small, Measured) and 0 < len(small.reasons) < len(STALL_REASONS)
    full, columns = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    pinned = measure(lookup("dominant_stall"), full, columns, reasons=small.reasons)
    assert isinstance(pinned, Measured) and pinned.reasons == small.reasons


def test_stall_cpi_is_the_same_in_both_counter_families_and_not_zero_sum() -> None:
    # Family 1 (explicit list) and family 2 (--set full), different runs of one build.
    for function in ("zoo_atomics", "zoo_coalescing"):
        short, cols_s = _kernel("zoo-good-short-run1.csv", function)
        full, cols_f = _kernel("zoo-good-full-run1.csv.gz", function)
        a = measure(lookup("stall_cpi.long_scoreboard"), short, cols_s)
        b = measure(lookup("stall_cpi.long_scoreboard"), full, cols_f)
        assert isinstance(a, Measured) and isinstance(b, Measured)
        assert a.family != b.family
        assert float(a.value) == pytest.approx(float(b.value), rel=0.10)
    # Not zero-sum: growing one reason leaves another's cycles per instruction as they were.
    launches, columns = _kernel("zoo-good-short-run1.csv", "zoo_atomics")
    fam = FAMILY_BY_NAME["per_warp_active"]
    grown = [
        Launch(la.index, la.name, la.function, la.block, la.grid,
               {**la.metrics, fam.metric("barrier"): 500.0}, la.units, la.device, la.cc)
        for la in launches
    ]  # fmt: skip
    for name, same in (("stall_cpi.wait", True), ("stall.wait", False)):
        before = measure(lookup(name), launches, columns)
        after = measure(lookup(name), grown, columns)
        assert isinstance(before, Measured) and isinstance(after, Measured)
        assert (before.value == after.value) is same, name


def test_latency_family_is_already_per_instruction() -> None:
    # Synthetic, derived from a real launch: the latency family's columns set to cpi values.
    launches, columns = _kernel("zoo-good-short-run1.csv", "zoo_atomics")
    lat = FAMILY_BY_NAME["latency"]
    names = {lat.metric(r) for r in STALL_REASONS if r != "warpgroup_arrive"}
    cols = frozenset(c for c in columns if "issue_stalled" not in c) | names
    launch = launches[0]
    values = {**launch.metrics, **dict.fromkeys(names, 1.0), lat.metric("drain"): 7.5}
    one = Launch(launch.index, launch.name, launch.function, launch.block, launch.grid, values,
                 launch.units, launch.device, launch.cc)  # fmt: skip
    m = measure(lookup("stall_cpi.drain"), [one], cols)
    assert isinstance(m, Measured) and m.value == 7.5 and m.family == "latency"


def test_a_stall_family_mismatch_is_one_short_warning_not_a_line_per_metric(
    tmp_path: Path,
) -> None:
    """Issue 25: a baseline of stall counters (per_warp_active) checked against a capture of
    PC sampling printed 17 lines of over 1,000 characters per kernel. It is one warning (the
    mismatch, how many metrics it leaves out, the lever) under 200 characters, and each
    kernel's stall metrics are one short line; every kernel is still incomplete (exit 1)."""
    import json
    import re

    from click.testing import CliRunner

    from perfgate.cli import main
    from tests.conftest import run_args

    baseline = tmp_path / "zoo.yaml"
    cli_ok("baseline", "record", *run_args("start2-zoo-good"), "-o", str(baseline))
    real = (H200_REAL / "start2-zoo-good-run1.csv").read_text()
    header = next(line for line in real.splitlines() if "Kernel Name" in line)
    sampled = re.sub(
        r"smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct",
        r"smsp__pcsamp_warps_issue_stalled_\1",
        header,
    )
    capture = tmp_path / "sampled.csv"
    capture.write_text(real.replace(header, sampled, 1))
    report = tmp_path / "r.json"
    args = ["check", "-b", str(baseline), "-c", str(capture), "--json", str(report)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    warned = [line for line in lines if line.startswith("warning:")]
    assert len(warned) == 1, warned
    assert len(warned[0]) < 200, warned[0]
    assert "stall" in warned[0] and "PC sampling" in warned[0] and "per_warp_active" in warned[0]
    assert "160 stall metrics of 10 kernels" in warned[0]
    assert "perfgate capture" in warned[0]  # the lever
    assert all(len(line) < 300 for line in lines), max(lines, key=len)
    assert len(lines) <= 2 + 2 * 10, result.output
    kernels = json.loads(report.read_text())["results"][0]["kernels"]
    assert all(k["state"] == "incomplete" for k in kernels)
