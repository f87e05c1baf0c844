from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.common.errors import UsageError
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Launch
from perfgate.metrics.catalog import CATALOG, default_metrics, lookup, ncu_metrics
from perfgate.metrics.measure import Measured, Unavailable, measure
from perfgate.metrics.stalls import FAMILIES
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
    for name in ("stall.selected", "stall.not_selected", "stall_cpi.not_selected"):
        with pytest.raises(UsageError, match="not a stall"):
            lookup(name)


def test_default_set_covers_the_issue_list() -> None:
    cap = read_capture(data("zoo-good-short-run1.csv"))
    names = set(default_metrics(cap.columns, "9.0"))
    assert {"global_load_sectors", "global_load_efficiency", "dram_throughput",
            "registers_per_thread", "dominant_stall", "achieved_occupancy", "occupancy_limiter",
            "warp_execution_efficiency", "shared_bank_conflicts", "duration", "launches",
            "total_time", "stall_cpi.long_scoreboard"} <= names  # fmt: skip
    # Zero-sum shares and the width-dependent sectors per request are opt-in.
    assert not any(n.startswith("stall.") for n in names)
    assert "sectors_per_request_ld" not in names and "stall_cpi.not_selected" not in names
    for name in CATALOG:
        assert CATALOG[name].formulas, name


def test_metrics_txt_is_committed_next_to_the_capture_script() -> None:
    assert Path(ROOT / "tests/zoo/capture.sh").read_text().count("metrics.txt") >= 1


def test_tensor_instructions_fall_back_to_the_pipe_total_and_never_mix_it_with_op_sums() -> None:
    # Session 1 asked for smsp__inst_executed_pipe_tensor.sum, the top folder for the op_*
    # counters. For GMMA kernels the op counters sum to twice the pipe total (op_hmma and
    # op_gmma both count them), so the two are formulas of different groups.
    total, cols_t = _kernel(
        "session1/torch-short-run1.csv.gz", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    )
    ops, cols_o = _kernel("torch-short-run1.csv", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
    a = measure(lookup("tensor_instructions"), total, cols_t)
    b = measure(lookup("tensor_instructions"), ops, cols_o)
    assert isinstance(a, Measured) and isinstance(b, Measured)
    assert a.group != b.group
    # One class missing does not make the op sum unavailable (columns dropped here).
    drop = frozenset(c for c in cols_o if "op_dmma" not in c)
    c = measure(lookup("tensor_instructions"), ops, drop)
    assert isinstance(c, Measured) and c.value == b.value  # no DMMA in a GEMM


def test_dram_bytes_with_one_direction_is_its_own_group() -> None:
    # Derived from a real capture: the write column dropped.
    launches, cols = _kernel("zoo-good-short-run1.csv", "zoo_coalescing")
    both = measure(lookup("dram_bytes"), launches, cols)
    read_only = frozenset(c for c in cols if not c.startswith("dram__bytes_write"))
    one = measure(lookup("dram_bytes"), launches, read_only)
    assert isinstance(both, Measured) and isinstance(one, Measured)
    assert one.group == "dram_read" and both.group == "counters"
    assert isinstance(measure(lookup("dram_bytes"), launches, read_only, "counters"), Unavailable)


def test_vector_loads_keep_sectors_so_sectors_per_request_is_diagnostic_only() -> None:
    assert not lookup("sectors_per_request_ld").default
    assert not lookup("sectors_per_request_st").default
    for name in ("global_load_sectors", "global_store_sectors", "global_load_efficiency"):
        assert lookup(name).default, name


def test_rates_name_the_work_they_divide() -> None:
    for name in ("sm_throughput", "memory_throughput", "l1tex_throughput", "l2_throughput",
                 "dram_throughput", "tensor_pipe_utilization"):  # fmt: skip
        rate = lookup(name)
        assert rate.rate_of, name
        for work in rate.rate_of:
            assert (
                lookup(work).direction.value == "higher_is_worse" or work == "tensor_instructions"
            )
