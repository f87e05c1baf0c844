from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.capture import Launch
from perfgate.catalog import CATALOG, default_metrics, lookup, ncu_metrics
from perfgate.errors import UsageError
from perfgate.ingest import read_capture
from perfgate.measure import Measured, Unavailable, measure
from perfgate.stalls import FAMILIES
from tests.conftest import ROOT, data, raw_rows


def _kernel(path: str, function: str) -> tuple[list[Launch], frozenset[str]]:
    cap = read_capture(data(path))
    return [la for la in cap.launches if la.function == function], cap.columns


def test_capture_script_asks_ncu_for_exactly_what_the_catalog_needs() -> None:
    listed = [line for line in (ROOT / "tests/zoo/metrics.txt").read_text().split() if line]
    assert listed == ncu_metrics("9.0")


def test_sectors_per_request_derived_from_sums_where_the_ratio_is_absent() -> None:
    header, _, _ = raw_rows("zoo-bad-full-run1.csv.gz")
    assert not any(
        h.startswith("l1tex__average_t_sectors_per_request") for h in header
    )  # --set full
    for path in ("zoo-bad-full-run1.csv.gz", "zoo-bad-short-run1.csv"):
        launches, columns = _kernel(path, "zoo_coalescing")
        m = measure(lookup("sectors_per_request_ld"), launches, columns)
        assert isinstance(m, Measured) and m.value == 32.0  # one sector per lane: fully scattered
    # Where a capture has only ncu's own ratio, that is used instead.
    ratio = "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio"
    formula = lookup("sectors_per_request_ld").resolve(frozenset({ratio}), "9.0")
    assert formula is not None and formula.inputs == (ratio,)


def test_stall_shares_agree_between_counter_families() -> None:
    # Family 1 (explicit list) and family 2 (--set full) divide one counter by different
    # constants: the shares must agree for the same kernel and build (different runs).
    for function in ("zoo_atomics", "zoo_bank_conflicts", "zoo_registers"):
        short, cols_s = _kernel("zoo-bad-short-run1.csv", function)
        full, cols_f = _kernel("zoo-bad-full-run1.csv.gz", function)
        a = measure(lookup("dominant_stall"), short, cols_s)
        b = measure(lookup("dominant_stall"), full, cols_f, group="counters")
        assert isinstance(a, Measured) and isinstance(b, Measured)
        assert a.value == b.value and a.group == b.group == "counters"
        assert a.shares and b.shares
        for reason, share in a.shares.items():
            assert share == pytest.approx(b.shares.get(reason, 0.0), abs=2.0), reason


def test_sampled_stalls_are_a_group_of_their_own() -> None:
    full, cols = _kernel("zoo-bad-full-run1.csv.gz", "zoo_atomics")
    sampled = measure(lookup("dominant_stall"), full, cols, group="sampling")
    assert (
        isinstance(sampled, Measured) and sampled.group == "sampling" and sampled.value == "drain"
    )
    short, cols_s = _kernel("zoo-bad-short-run1.csv", "zoo_atomics")
    missing = measure(lookup("dominant_stall"), short, cols_s, group="sampling")
    assert isinstance(missing, Unavailable) and "PC sampling" in missing.reason


def test_selected_is_issuing_and_never_the_dominant_stall() -> None:
    # Synthetic, derived from a real launch: 'selected' made the largest value of all.
    launches, columns = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    selected = FAMILIES[0].metric("selected")
    boosted = [
        Launch(
            la.index,
            la.name,
            la.function,
            la.block,
            la.grid,
            {**la.metrics, selected: 1e6},
            la.units,
            la.device,
            la.cc,
        )
        for la in launches
    ]
    m = measure(lookup("dominant_stall"), boosted, columns)
    assert isinstance(m, Measured) and m.value == "long_scoreboard"
    assert m.shares is not None and "selected" not in m.shares
    assert sum(m.shares.values()) == pytest.approx(100.0, abs=1.0)  # medians of shares


def test_occupancy_limiter_is_the_smallest_limit() -> None:
    header, _, rows = raw_rows("zoo-bad-short-run1.csv")
    row = next(r for r in rows if r[header.index("Kernel Name")].startswith("zoo_shared_occupancy"))
    limits = {
        k: float(row[header.index(f"launch__occupancy_limit_{k}")])
        for k in ("registers", "shared_mem", "warps", "blocks")
    }
    assert min(limits, key=lambda k: limits[k]) == "shared_mem"
    launches, columns = _kernel("zoo-bad-short-run1.csv", "zoo_shared_occupancy")
    m = measure(lookup("occupancy_limiter"), launches, columns)
    assert isinstance(m, Measured) and m.value == "shared_mem"


def test_tensor_instructions_drop_when_the_tensor_cores_are_lost() -> None:
    good, cols = _kernel("zoo-good-short-run1.csv", "zoo_tensor_cores")
    bad, cols_b = _kernel("zoo-bad-short-run1.csv", "zoo_tensor_cores")
    g = measure(lookup("tensor_instructions"), good, cols)
    b = measure(lookup("tensor_instructions"), bad, cols_b)
    assert isinstance(g, Measured) and isinstance(b, Measured)
    # 1024^3 multiply-adds in 16x16x16 WMMA tiles: 64*64 tiles x 64 k-steps, each at least one
    # HMMA. The scalar build is not at zero: on sm_90 the hmma pipe counter also counts
    # conversions such as I2F (seen: 131,072 = one per thread in init_random, no MMA at all).
    assert float(g.value) >= 64 * 64 * 64
    assert float(b.value) < float(g.value) / 10


def test_dram_metrics_are_not_asked_for_where_ncu_has_none() -> None:
    columns = frozenset({"dram__throughput.avg.pct_of_peak_sustained_elapsed"})
    assert lookup("dram_throughput").resolve(columns, "9.0") is not None
    assert lookup("dram_throughput").resolve(columns, "12.1") is None
    assert "dram__bytes_read.sum" not in ncu_metrics("12.1")


def test_raw_metric_names_can_be_gated_and_unknown_names_cannot() -> None:
    raw = lookup("lts__t_sector_hit_rate.pct")
    assert raw.raw and raw.formulas[0].inputs == ("lts__t_sector_hit_rate.pct",)
    with pytest.raises(UsageError, match="unknown metric"):
        lookup("sectors_per_reqest_ld")
    with pytest.raises(UsageError, match="unknown stall reason"):
        lookup("stall.sleepy")


def test_default_set_covers_the_issue_list() -> None:
    cap = read_capture(data("zoo-good-short-run1.csv"))
    names = set(default_metrics(cap.columns, "9.0"))
    assert {"sectors_per_request_ld", "dram_throughput", "registers_per_thread", "dominant_stall",
            "achieved_occupancy", "occupancy_limiter", "warp_execution_efficiency",
            "shared_bank_conflicts", "duration", "stall.long_scoreboard"} <= names  # fmt: skip
    for name in CATALOG:
        assert CATALOG[name].formulas, name


def test_metrics_txt_is_committed_next_to_the_capture_script() -> None:
    assert Path(ROOT / "tests/zoo/capture.sh").read_text().count("metrics.txt") >= 1
