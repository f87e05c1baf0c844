"""The diagnosis rules at their edges, for the mutants of perfgate/causes/rules_*.py that
survived tests/causes/test_causes.py and the families' tests (docs/mutation.md, "The causes'
rules"). Each delta is a real zoo kernel's side (tests/data/zoo-*-short-run1.csv) with, where
a rule's edge needs it, the counter the rule reads set to the value its docstring or condition
names; the expectations come from those stated facts, never from the rule's output."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from perfgate.causes import diagnose
from perfgate.causes.levers import IMPROVED_LEVERS
from perfgate.causes.model import CauseKind, KernelDelta, RootCause, Side
from perfgate.causes.rules_execution import (
    bank_conflicts,
    divergence,
    lost_pipelining,
    tensor_cores_lost,
)
from perfgate.causes.rules_memory import (
    atomic_contention,
    uncoalesced_loads,
    uncoalesced_stores,
    vectorized_access,
    wider_stores,
)
from perfgate.causes.rules_ncu import ncu_rules
from perfgate.causes.rules_occupancy import (
    local_memory,
    occupancy_limiter,
    occupancy_registers,
    occupancy_shared_memory,
    spills_removed,
)
from perfgate.causes.rules_stalls import dram_bound, stall_shift
from perfgate.causes.rules_work import launch_count, launch_shape, less_work, more_work
from perfgate.judge.comparison import Comparison, State
from tests.causes.test_causes import sides, with_values

GOOD = "zoo-good-short-run1.csv"
BAD = "zoo-bad-short-run1.csv"


def _alone(side: Side) -> KernelDelta:
    """One capture judged alone (`perfgate explain`): an empty baseline side."""
    return KernelDelta(side.name, Side(side.name, {}), side, ())


def _pair(before: Side, after: Side) -> KernelDelta:
    return KernelDelta(after.name, before, after, ())


# -- rules_stalls: the fallback symptoms -------------------------------------------------------


def test_explain_names_the_dominant_stall_with_its_own_share() -> None:
    # zoo-bad's zoo_bank_conflicts: mio_throttle leads its stalls (43.7% in the capture).
    side = sides(BAD)["zoo_bank_conflicts"]
    share = side.shares["mio_throttle"] if side.shares else None
    assert side.values["dominant_stall"] == "mio_throttle" and share is not None
    cause = stall_shift(_alone(side))
    assert cause is not None and cause.mechanism == "stall-mio_throttle"
    assert cause.title == "Dominant stall: mio_throttle"
    assert cause.detail.startswith(f"{share:.0f}% of stalls")
    assert {e.metric for e in cause.evidence} >= {"dominant_stall"}


def test_explain_names_no_dominant_stall_where_none_or_no_stall_leads() -> None:
    side = sides(BAD)["zoo_bank_conflicts"]
    without = replace(side, values={k: v for k, v in side.values.items() if k != "dominant_stall"})
    assert stall_shift(_alone(without)) is None
    # 'selected' (issuing) and 'not_selected' (an eligible warp passed over) are no stalls.
    for reason in ("selected", "not_selected"):
        assert stall_shift(_alone(with_values(side, dominant_stall=reason))) is None


def test_explain_ranks_a_dominant_stall_by_its_share_from_20_percent() -> None:
    # "50 if pct >= 20 else 20": a stall that holds a fifth of the stalls or more ranks high.
    side = sides(BAD)["zoo_bank_conflicts"]
    at = stall_shift(_alone(with_values(side, **{"stall.mio_throttle": 20.0})))
    below = stall_shift(_alone(with_values(side, **{"stall.mio_throttle": 19.5})))
    assert at is not None and below is not None
    assert at.score > below.score
    assert at.detail.startswith("20% of stalls") and below.detail.startswith("20% of stalls")


def test_a_dominant_stall_outranks_ncus_own_rules_the_second_opinion() -> None:
    # NCU's rules are a second opinion beside the counters (rules_ncu): with a dominant stall
    # of either rank (above and below 20% of the stalls), the stall heads the diagnosis.
    # zoo-good's init_random: short_scoreboard leads (39.5%), no other rule fires alone.
    side = sides(GOOD)["init_random"]
    for pct in (39.0, 12.0):
        alone = with_values(side, **{"stall.short_scoreboard": pct, "ncu_rule.SOLBottleneck": 30.0})
        got = [c.mechanism for c in diagnose(_alone(alone)).causes]
        assert got == ["stall-short_scoreboard", "ncu-rules"], got


def _shifted(rise: float, slower: bool = True) -> KernelDelta:
    """zoo-good's zoo_bank_conflicts against itself, mio_throttle's share up by `rise` points
    (from 4, exact in binary), and its duration x1.5 or unchanged."""
    good = sides(GOOD)["zoo_bank_conflicts"]
    duration = float(good.values["duration"])
    after = with_values(
        good,
        **{"stall.mio_throttle": 4.0 + rise},
        duration=duration * (1.5 if slower else 1.0),
    )
    return _pair(with_values(good, **{"stall.mio_throttle": 4.0}), after)


def test_a_stall_share_that_gained_10_points_of_a_slower_kernel_is_named() -> None:
    # "if rises[top] < 10: return None": 10 points exactly are named, 9.5 are not.
    cause = stall_shift(_shifted(10.0))
    assert cause is not None and cause.mechanism == "stall-mio_throttle"
    assert cause.title == "More mio_throttle stalls"
    assert cause.detail.startswith("mio_throttle gained 10 points")
    assert cause.kind is CauseKind.REGRESSION
    assert stall_shift(_shifted(10.5)) is not None
    assert stall_shift(_shifted(9.5)) is None


def test_a_stall_share_that_rose_is_no_cause_of_a_kernel_that_is_not_slower() -> None:
    assert stall_shift(_shifted(40.0, slower=False)) is None
    # Nor a rise of a real capture pair whose duration held.
    good, bad = sides(GOOD)["zoo_bank_conflicts"], sides(BAD)["zoo_bank_conflicts"]
    held = with_values(bad, duration=float(good.values["duration"]))
    assert stall_shift(_pair(good, held)) is None
    assert stall_shift(_pair(good, bad)) is not None  # the same pair, slower: named


def test_a_stall_shift_outranks_ncus_rules_that_newly_fire() -> None:
    d = _shifted(12.0)
    d = replace(d, current=with_values(d.current, **{"ncu_rule.SOLBottleneck": 30.0}))
    got = [c.mechanism for c in diagnose(d).causes]
    assert got[:2] == ["stall-mio_throttle", "ncu-rules"], got


def test_stall_reasons_come_from_the_share_vector_or_the_stall_metrics() -> None:
    # The reasons are the share vector's and the stall.<reason> metrics': a side with either
    # alone still names the reason that rose.
    d = _shifted(15.0)
    no_shares = replace(d, baseline=replace(d.baseline, shares=None),
                        current=replace(d.current, shares=None))  # fmt: skip
    cause = stall_shift(no_shares)
    assert cause is not None and cause.mechanism == "stall-mio_throttle"


def _dram(dram: float, dominant: str = "long_scoreboard") -> Side:
    # zoo-bad's zoo_local_memory: long_scoreboard leads, DRAM at 62% in the capture.
    side = sides(BAD)["zoo_local_memory"]
    return with_values(side, dram_throughput=dram, dominant_stall=dominant)


def test_explain_calls_a_kernel_dram_bound_above_80_percent_under_long_scoreboard() -> None:
    # Seed 003's memory-bound quadrant: long_scoreboard leads and DRAM above 80% of peak.
    cause = dram_bound(_alone(_dram(80.5)))
    assert cause is not None and cause.mechanism == "dram-bound"
    assert cause.detail.startswith("DRAM throughput 80% of peak")  # 80.5 printed to 0 places
    assert dram_bound(_alone(_dram(80.0))) is None
    assert dram_bound(_alone(_dram(62.0))) is None
    assert dram_bound(_alone(_dram(95.0, dominant="wait"))) is None
    no_dram = _dram(95.0)
    no_dram = replace(
        no_dram, values={k: v for k, v in no_dram.values.items() if k != "dram_throughput"}
    )
    assert dram_bound(_alone(no_dram)) is None


def test_dram_bound_judges_one_capture_only() -> None:
    # Two sides: the differential rules say what moved; the quadrant is the explain view's.
    assert dram_bound(_pair(sides(GOOD)["zoo_local_memory"], _dram(95.0))) is None


def test_dram_bound_heads_explains_diagnosis_over_ncus_rules() -> None:
    side = with_values(_dram(95.0), **{"ncu_rule.SOLBottleneck": 30.0})
    got = [c.mechanism for c in diagnose(_alone(side)).causes]
    assert "dram-bound" in got and "ncu-rules" in got, got
    assert got.index("dram-bound") < got.index("ncu-rules"), got


# -- rules_memory: coalescing, vector accesses, atomics, wider stores ---------------------------


def _without(side: Side, *names: str) -> Side:
    return replace(side, values={k: v for k, v in side.values.items() if k not in names})


def _loads(**values: float) -> Side:
    # zoo-good's zoo_coalescing: coalesced float loads, 100% of the bytes used, 4 sectors per
    # request; the counters the loads rules read set as each test says.
    return with_values(sides(GOOD)["zoo_coalescing"], **values)


def test_explain_names_uncoalesced_loads_by_the_bytes_used_per_sector() -> None:
    bad = sides(BAD)["zoo_coalescing"]  # 12.5% of the bytes used, 32 sectors per request
    cause = uncoalesced_loads(_alone(bad))
    assert cause is not None and cause.title == "Uncoalesced global loads"
    assert cause.detail.startswith("12% of the bytes in the fetched sectors are used")
    # Below half the bytes used ranks higher than below 80%; 80% and more, or 0, is no cause,
    # whatever the sectors per request say (the bytes per sector decide where known).
    low = uncoalesced_loads(_alone(_loads(global_load_efficiency=49.5)))
    half = uncoalesced_loads(_alone(_loads(global_load_efficiency=50.0)))
    assert low is not None and half is not None and low.score > half.score
    for eff in (80.0, 0.0):
        spread = _loads(global_load_efficiency=eff, sectors_per_request_ld=32.0)
        assert uncoalesced_loads(_alone(spread)) is None


def test_explain_without_bytes_per_sector_reads_sectors_per_request() -> None:
    def alone(spr: float) -> RootCause | None:
        side = _without(_loads(sectors_per_request_ld=spr), "global_load_efficiency")
        return uncoalesced_loads(_alone(side))

    assert alone(4.5) is None  # 4 is ideal for 4-byte accesses: from above 4.5 only
    wide, scattered, at16 = alone(4.6), alone(16.5), alone(16.0)
    assert wide is not None and wide.title == "Possibly uncoalesced global loads"
    assert wide.detail.startswith("4.6 sectors per request")
    assert scattered is not None and at16 is not None
    assert scattered.score > at16.score == wide.score  # beyond 16 (one sector per lane: 32)
    neither = _without(sides(GOOD)["zoo_coalescing"], "global_load_efficiency",
                       "sectors_per_request_ld")  # fmt: skip
    assert uncoalesced_loads(_alone(neither)) is None


def _spr_only(before: Side, after: Side) -> KernelDelta:
    """Both sides without the bytes-per-sector counters: sectors per request decide."""
    effs = ("global_load_efficiency", "global_store_efficiency")
    return _pair(_without(before, *effs), _without(after, *effs))


def test_sectors_per_request_up_at_the_same_instructions_are_uncoalesced_loads() -> None:
    good = sides(GOOD)["zoo_coalescing"]
    sectors = float(good.values["global_load_sectors"])
    scattered = _loads(sectors_per_request_ld=32.0, global_load_sectors=sectors * 8)
    cause = uncoalesced_loads(_spr_only(good, scattered))
    assert cause is not None and cause.title == "Global loads became uncoalesced"
    assert cause.detail.startswith("sectors per request 4.0 -> 32.0, sectors x8.00")
    # The bytes per sector known on one side only: sectors per request still decide.
    one_side = _pair(good, _without(scattered, "global_load_efficiency"))
    got = uncoalesced_loads(one_side)
    assert got is not None and got.detail.startswith("sectors per request 4.0 -> 32.0")
    # The same sectors in wider requests (x1.1), or fewer instructions without a sector
    # count: vectorised access, not scattered.
    wider = _loads(sectors_per_request_ld=32.0, global_load_sectors=sectors * 1.1)
    assert uncoalesced_loads(_spr_only(good, wider)) is None
    instructions = float(good.values["instructions_executed"])
    for ratio, named in ((0.8, False), (1.0, True)):
        fewer = _without(
            _loads(sectors_per_request_ld=32.0, instructions_executed=instructions * ratio),
            "global_load_sectors",
        )
        before = _without(good, "global_load_sectors")
        assert (uncoalesced_loads(_spr_only(before, fewer)) is not None) is named, ratio
    # No sectors per request recorded: nothing to compare.
    base = _without(good, "sectors_per_request_ld")
    assert uncoalesced_loads(_spr_only(base, scattered)) is None


def test_stores_that_became_uncoalesced_are_named_as_stores() -> None:
    good = sides(GOOD)["zoo_coalescing"]
    sectors = float(good.values["global_store_sectors"])
    after = with_values(good, global_store_efficiency=25.0, sectors_per_request_st=16.0,
                        global_store_sectors=sectors * 4)  # fmt: skip
    cause = uncoalesced_stores(_pair(good, after))
    assert cause is not None and cause.mechanism == "uncoalesced-stores"
    assert cause.title == "Global stores became uncoalesced"
    assert cause.detail.startswith("bytes used per fetched sector fell from 100% to 25%")


def test_a_mechanism_with_its_counter_outranks_ncus_rules() -> None:
    # rootcause.py: a mechanism its own counter proves comes first; NCU's rules are a second
    # opinion. Uncoalesced loads by sectors per request, and the output written wider.
    good = sides(GOOD)["zoo_coalescing"]
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    sectors = float(good.values["global_load_sectors"])
    scattered = _loads(sectors_per_request_ld=32.0, global_load_sectors=sectors * 8, **rule)
    got = [c.mechanism for c in diagnose(_spr_only(good, scattered)).causes]
    assert got.index("uncoalesced-loads") < got.index("ncu-rules"), got
    wider = _wider_stores(2.0, 1.0)
    wider = replace(wider, current=with_values(wider.current, **rule))
    got = [c.mechanism for c in diagnose(wider).causes]
    assert got.index("wider-stores") < got.index("ncu-rules"), got


def test_wider_vector_loads_and_stores_are_told_by_the_bytes_per_sector_or_the_sectors() -> None:
    good = sides(GOOD)["zoo_coalescing"]
    # Loads: sectors per request x2, the bytes per sector known now only, the sectors held.
    loads = _without(_loads(sectors_per_request_ld=8.0), "global_load_efficiency")
    cause = vectorized_access(_pair(_without(good, "global_load_efficiency"), loads))
    assert cause is not None and cause.title == "Wider vector loads"
    one_side = vectorized_access(_pair(_without(good, "global_load_efficiency"),
                                       _loads(sectors_per_request_ld=8.0)))  # fmt: skip
    assert one_side is not None and one_side.title == "Wider vector loads"
    # Stores: sectors per request x2 at the same bytes per sector and sectors.
    stores = with_values(good, sectors_per_request_st=8.0)
    cause = vectorized_access(_pair(good, stores))
    assert cause is not None and cause.title == "Wider vector stores"


def _atomics(**values: float | str) -> Side:
    # zoo-bad's zoo_atomics: drain leads (52.5%), 4,194,304 L2 atomic requests from
    # 16384 blocks of 256 threads (8 warps each).
    return with_values(sides(BAD)["zoo_atomics"], **values)


def test_explain_calls_atomics_contended_from_one_request_per_warp() -> None:
    side = sides(BAD)["zoo_atomics"]
    assert side.grid is not None and side.block is not None
    threads = side.block[0] * side.block[1] * side.block[2]
    warps = side.grid[0] * side.grid[1] * side.grid[2] * math.ceil(threads / 32)
    requests = float(side.values["l2_atomic_requests"])
    cause = atomic_contention(_alone(side))
    assert cause is not None and cause.mechanism == "atomic-contention"
    assert f"with {requests / warps:.1f} atomic requests per warp" in cause.detail
    assert cause.detail.startswith("drain is the dominant stall")
    assert atomic_contention(_alone(_atomics(l2_atomic_requests=float(warps)))) is not None
    assert atomic_contention(_alone(_atomics(l2_atomic_requests=warps - 1.0))) is None
    # Not without drain or lg_throttle leading, nor without a grid and block to count warps.
    assert atomic_contention(_alone(_atomics(dominant_stall="long_scoreboard"))) is None
    assert atomic_contention(_alone(replace(side, grid=None))) is None
    assert atomic_contention(_alone(replace(side, block=None))) is None


def _contended(**after: float) -> KernelDelta:
    """zoo-good's zoo_registers (no atomics, 0 requests) against itself with the atomic
    requests and stall counters of `after`; the duration held."""
    good = sides(GOOD)["zoo_registers"]
    before = with_values(good, **{"stall.drain": 2.0, "stall.lg_throttle": 2.0})
    return _pair(before, with_values(before, **after))


def test_atomics_from_none_with_writes_waiting_are_contention() -> None:
    cause = atomic_contention(_contended(l2_atomic_requests=131072.0, **{"stall.drain": 8.0}))
    assert cause is not None and cause.detail.startswith("atomic requests 0 -> 131,072")


def _atomics_doubled() -> tuple[KernelDelta, float]:
    """zoo_registers with 65,536 atomic requests recorded, and its drain cycles per instruction."""
    good = sides(GOOD)["zoo_registers"]
    base = _contended(l2_atomic_requests=65536.0)
    base = replace(base, baseline=with_values(base.baseline, l2_atomic_requests=65536.0))
    return base, float(good.values["stall_cpi.drain"])


def test_atomic_contention_takes_the_larger_wait_of_drain_and_lg_throttle() -> None:
    # Atomics x2 (from 65,536), not slower: the stalls must say it. drain +6 points alone,
    # or drain's cycles per instruction x2 alone.
    base, cpi = _atomics_doubled()
    more = {"l2_atomic_requests": 131072.0}
    share = replace(base, current=with_values(base.current, **more, **{"stall.drain": 8.0}))
    assert atomic_contention(share) is not None
    cycles = replace(base, current=with_values(base.current, **more,
                                               **{"stall_cpi.drain": cpi * 2}))  # fmt: skip
    assert atomic_contention(cycles) is not None
    assert atomic_contention(replace(base, current=with_values(base.current, **more))) is None


def _wider_stores(stored: float, used: float, per_request: float | None = None) -> KernelDelta:
    """zoo-good's zoo_registers with its store sectors x`stored`, the bytes used per store
    sector x`used` (from 50%) and sectors per store request x`per_request` (default: as the
    sectors, the same requests); loads unchanged. 524,288 store sectors: 2^19, so x1.3 is
    exactly the double 1.3."""
    good = sides(GOOD)["zoo_registers"]
    sectors = float(good.values["global_store_sectors"])
    spr = float(good.values["sectors_per_request_st"])
    before = with_values(good, global_store_efficiency=50.0)
    after = with_values(
        good,
        global_store_sectors=sectors * stored,
        global_store_efficiency=50.0 * used,
        sectors_per_request_st=spr * (stored if per_request is None else per_request),
    )
    return _pair(before, after)


def test_output_written_wider_from_stores_x1_3_at_fuller_sectors() -> None:
    # stored_wider: stores x1.3 and more, the same requests, bytes (sectors x bytes used)
    # x2 or x4 within 10%.
    assert wider_stores(_wider_stores(1.3, 2.0 / 1.3)) is not None
    assert wider_stores(_wider_stores(1.29, 2.0 / 1.29)) is None
    no_requests = _wider_stores(2.0, 1.0)
    no_requests = replace(
        no_requests, current=_without(no_requests.current, "sectors_per_request_st")
    )
    assert wider_stores(no_requests) is None


def test_explain_counts_any_bytes_used_below_80_percent_as_uncoalesced() -> None:
    # "0 < eff_a < 80": half a percent of the bytes used is uncoalesced; none at all is no
    # reading of the loads (nothing loaded).
    assert uncoalesced_loads(_alone(_loads(global_load_efficiency=0.5))) is not None


def test_fewer_sectors_per_request_with_the_bytes_per_sector_down_are_narrower_loads() -> None:
    good = sides(GOOD)["zoo_coalescing"]  # 100% of the bytes used, 4 sectors per request
    narrower = _loads(global_load_efficiency=40.0, sectors_per_request_ld=2.0)
    assert uncoalesced_loads(_pair(good, narrower)) is None
    same = uncoalesced_loads(_pair(good, _loads(global_load_efficiency=40.0)))
    assert same is not None
    assert same.detail == (
        "bytes used per fetched sector fell from 100% to 40%; sectors per request 4.0 -> 4.0"
    )
    # Sectors per request known on one side only: the bytes per sector alone are said.
    one = uncoalesced_loads(
        _pair(_without(good, "sectors_per_request_ld"), _loads(global_load_efficiency=40.0))
    )
    assert one is not None and one.detail == "bytes used per fetched sector fell from 100% to 40%"


def _by_requests(
    before: float, after: float, sectors: float = 8.0, **more: float
) -> RootCause | None:
    """Loads by sectors per request alone (no bytes-per-sector counter), from `before` to
    `after`, the load sectors x`sectors`."""
    good = sides(GOOD)["zoo_coalescing"]
    n = float(good.values["global_load_sectors"])
    b = with_values(good, sectors_per_request_ld=before)
    a = with_values(good, sectors_per_request_ld=after, global_load_sectors=n * sectors, **more)
    return uncoalesced_loads(_spr_only(b, a))


def test_sectors_per_request_must_pass_4_5_and_rise_by_half() -> None:
    # "spr_a > 4.5 and spr_a >= spr_b * 1.5"
    assert _by_requests(4.0, 6.0) is not None  # x1.5 exactly
    assert _by_requests(4.0, 8.0) is not None  # x2
    assert _by_requests(4.0, 5.0) is None  # above 4.5, x1.25
    assert _by_requests(2.0, 4.5) is None  # x2.25, not above 4.5
    assert _by_requests(2.0, 5.0) is not None
    assert _by_requests(1.0, 3.0) is None  # x3, under 4.5


def test_the_same_sectors_in_wider_requests_is_read_to_the_edge() -> None:
    # "sectors < 1.2" (x1.2 exactly is scattered, more sectors), and without a sector count
    # "instructions < 0.9" (x0.9 exactly is the same instructions).
    assert _by_requests(4.0, 32.0, sectors=1.2) is not None
    assert _by_requests(4.0, 32.0, sectors=1.5) is not None
    # Instructions 1000 -> 900: the double 900 / 1000 is the double 0.9.
    good = with_values(sides(GOOD)["zoo_coalescing"], instructions_executed=1000.0)
    before = _without(good, "global_load_sectors")
    after = _without(
        with_values(good, sectors_per_request_ld=32.0, instructions_executed=900.0),
        "global_load_sectors",
    )
    assert uncoalesced_loads(_spr_only(before, after)) is not None


def _vector(spr: float, base_instructions: float | None = None, **after: float) -> RootCause | None:
    """Loads' sectors per request x`spr` (from 4), with the counters of `after` on the
    current side; counters set to None are left out of both sides."""
    good = sides(GOOD)["zoo_coalescing"]
    if base_instructions is not None:
        good = with_values(good, instructions_executed=base_instructions)
    gone = [k for k, v in after.items() if v is None]
    values = {k: v for k, v in after.items() if v is not None}
    before = _without(good, *gone)
    current = _without(with_values(good, sectors_per_request_ld=4.0 * spr, **values), *gone)
    return vectorized_access(_pair(before, current))


def test_vector_loads_start_at_sectors_per_request_x1_5() -> None:
    assert _vector(1.5) is not None
    assert _vector(1.45) is None


def test_vector_loads_keep_the_bytes_per_sector_within_5_percent() -> None:
    # Both sides' bytes per sector known: they decide, whatever the sectors say.
    assert _vector(2.0, global_load_efficiency=95.0) is not None  # x0.95 exactly
    assert _vector(2.0, global_load_efficiency=50.0) is None
    n = float(sides(GOOD)["zoo_coalescing"].values["global_load_sectors"])
    assert _vector(2.0, global_load_efficiency=50.0, global_load_sectors=n) is None
    # Held, with no sector or instruction counts: still vector accesses.
    assert (
        _vector(2.0, global_load_sectors=None, instructions_executed=None) is not None  # type: ignore[arg-type]
    )


def test_vector_loads_without_bytes_per_sector_read_the_sectors_then_instructions() -> None:
    eff = {"global_load_efficiency": None}
    n = float(sides(GOOD)["zoo_coalescing"].values["global_load_sectors"])
    assert _vector(2.0, **eff, global_load_sectors=n * 1.19) is not None  # type: ignore[arg-type]
    assert _vector(2.0, **eff, global_load_sectors=n * 1.2) is None  # type: ignore[arg-type]
    # Instructions from 1000 (set on both sides): x0.9 is the double 0.9.
    no_sectors = {**eff, "global_load_sectors": None}
    for after, named in ((800.0, True), (900.0, False), (1000.0, False)):
        got = _vector(2.0, **no_sectors, instructions_executed=after, base_instructions=1000.0)  # type: ignore[arg-type]
        assert (got is not None) is named, after
    assert _vector(2.0, **no_sectors, instructions_executed=None) is None  # type: ignore[arg-type]


def test_vector_accesses_outrank_ncus_rules() -> None:
    got = diagnose(
        _pair(sides(GOOD)["zoo_coalescing"],
              _loads(sectors_per_request_ld=8.0, **{"ncu_rule.SOLBottleneck": 30.0}))
    )  # fmt: skip
    names = [c.mechanism for c in got.causes]
    assert names.index("vectorized-access") < names.index("ncu-rules"), names


def test_a_partial_warp_counts_as_a_warp_for_atomics_per_warp() -> None:
    # Blocks of 33 threads are 2 warps each (32 and 1): 2 requests a block are 1 a warp.
    side = sides(BAD)["zoo_atomics"]
    assert side.grid is not None
    blocks = side.grid[0] * side.grid[1] * side.grid[2]
    odd = _atomics(l2_atomic_requests=2.0 * blocks)
    cause = atomic_contention(_alone(replace(odd, block=(33, 1, 1))))
    assert cause is not None and "with 1.0 atomic requests per warp" in cause.detail


def test_explain_ranks_atomic_contention_over_ncus_rules() -> None:
    side = _atomics(**{"ncu_rule.SOLBottleneck": 30.0})
    names = [c.mechanism for c in diagnose(_alone(side)).causes]
    assert names.index("atomic-contention") < names.index("ncu-rules"), names


def test_atomics_from_none_need_one_request() -> None:
    assert atomic_contention(_contended(l2_atomic_requests=1.0, **{"stall.drain": 8.0}))


def test_atomic_contention_waits_from_5_points_or_x1_5_cycles() -> None:
    base, cpi = _atomics_doubled()
    more = {"l2_atomic_requests": 131072.0}
    at5 = replace(base, current=with_values(base.current, **more, **{"stall.drain": 7.0}))
    assert atomic_contention(at5) is not None
    at15 = replace(base, current=with_values(base.current, **more,
                                             **{"stall_cpi.drain": cpi * 1.5}))  # fmt: skip
    assert atomic_contention(at15) is not None


# -- rules_execution: bank conflicts, divergence, pipelining, tensor cores ---------------------


def _conflicts(conflicts: float, **values: float) -> Side:
    # zoo-good's zoo_bank_conflicts: 7,985 conflicts in 1,605,632 warp instructions.
    return with_values(sides(GOOD)["zoo_bank_conflicts"], shared_bank_conflicts=conflicts, **values)


def test_explain_names_bank_conflicts_from_one_per_hundred_instructions() -> None:
    instructions = float(sides(GOOD)["zoo_bank_conflicts"].values["instructions_executed"])
    at = bank_conflicts(_alone(_conflicts(instructions * 0.01)))
    above = bank_conflicts(_alone(_conflicts(instructions * 0.02)))
    assert at is None
    assert above is not None and above.detail.endswith("0.02 per warp instruction")
    # Per shared-memory wavefront where the instruction count is not known.
    wave = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    side = _without(_conflicts(5000.0, **{wave: 10000.0}), "instructions_executed")
    got = bank_conflicts(_alone(side))
    assert got is not None and got.detail == "5,000 conflicts, 0.50 per wavefront"
    # Neither: no rate, no finding.
    assert bank_conflicts(_alone(_without(_conflicts(5000.0), "instructions_executed"))) is None


def test_bank_conflicts_per_instruction_must_double_and_pass_one_in_a_hundred() -> None:
    good = sides(GOOD)["zoo_bank_conflicts"]
    n = float(good.values["instructions_executed"])
    base = _conflicts(n * 0.004)
    assert bank_conflicts(_pair(base, _conflicts(n * 0.008))) is None  # doubled, under 0.01
    assert bank_conflicts(_pair(base, _conflicts(n * 0.011))) is not None
    base = _conflicts(n * 0.02)
    assert bank_conflicts(_pair(base, _conflicts(n * 0.04))) is None  # x2 exactly: not beyond
    got = bank_conflicts(_pair(base, _conflicts(n * 0.041)))
    assert got is not None and "per instructions_executed" in got.detail
    # A conflict rate from one in ten ranks as the lever; below it, as a symptom.
    low = bank_conflicts(_pair(_conflicts(n * 0.001), _conflicts(n * 0.05)))
    high = bank_conflicts(_pair(_conflicts(n * 0.001), _conflicts(n * 0.1)))
    assert low is not None and high is not None and high.score > low.score + 20


def test_bank_conflicts_without_a_rate_are_counted_beyond_65536_and_double() -> None:
    def count(before: float, after: float) -> RootCause | None:
        b = _without(_conflicts(before), "instructions_executed")
        a = _without(_conflicts(after), "instructions_executed")
        return bank_conflicts(_pair(b, a))

    assert count(100000.0, 200000.0) is None  # x2, not beyond
    assert count(100000.0, 200001.0) is not None
    assert count(10000.0, 75536.0) is None  # 65,536 more: not beyond
    got = count(10000.0, 75537.0)
    assert got is not None and got.detail.endswith("(count only)")
    # No conflicts recorded: nothing to compare.
    assert bank_conflicts(_pair(_without(_conflicts(0.0), "shared_bank_conflicts"),
                                _conflicts(1e6)))  is None  # fmt: skip


def _warps_active(before: float | None, after: float) -> KernelDelta:
    # zoo-good's zoo_divergence: 100% of a warp's threads active.
    good = sides(GOOD)["zoo_divergence"]
    base = good if before is not None else _without(good, "warp_execution_efficiency")
    if before is not None:
        base = with_values(good, warp_execution_efficiency=before)
    return _pair(base, with_values(good, warp_execution_efficiency=after))


def test_explain_names_divergence_below_80_percent_active() -> None:
    good = sides(GOOD)["zoo_divergence"]
    assert divergence(_alone(with_values(good, warp_execution_efficiency=80.0))) is None
    got = divergence(_alone(with_values(good, warp_execution_efficiency=79.0)))
    assert got is not None and got.detail.startswith("79% of a warp's threads")


def test_divergence_needs_5_points_fewer_and_under_90_percent() -> None:
    assert divergence(_warps_active(100.0, 90.0)) is None
    assert divergence(_warps_active(100.0, 89.5)) is not None
    assert divergence(_warps_active(90.0, 85.0)) is None  # 5 points exactly
    assert divergence(_warps_active(90.0, 84.5)) is not None
    assert divergence(_warps_active(None, 50.0)) is None
    # The instructions' ratio is said when known.
    got = divergence(_warps_active(100.0, 50.0))
    assert (
        got is not None
        and got.detail == "active threads per warp instruction 100% -> 50%; instructions x1.00"
    )
    further = divergence(_warps_active(100.0, 40.0))
    assert further is not None and further.score > got.score


def _tensor(**after: float) -> KernelDelta:
    # zoo-good's zoo_tensor_cores: 524,288 tensor instructions, the tensor pipe 4.26% busy.
    good = sides(GOOD)["zoo_tensor_cores"]
    return _pair(good, with_values(good, **after))


def test_tensor_cores_lost_at_a_fifth_of_the_tensor_instructions() -> None:
    ti = float(sides(GOOD)["zoo_tensor_cores"].values["tensor_instructions"])
    assert tensor_cores_lost(_tensor(tensor_instructions=ti * 0.2)) is not None
    assert tensor_cores_lost(_tensor(tensor_instructions=ti * 0.21)) is None
    none_before = _pair(with_values(sides(GOOD)["zoo_tensor_cores"], tensor_instructions=0.0),
                        with_values(sides(GOOD)["zoo_tensor_cores"], tensor_instructions=0.0))  # fmt: skip
    assert tensor_cores_lost(none_before) is None


def test_tensor_cores_lost_by_the_pipes_use_without_instruction_counts() -> None:
    good = _without(sides(GOOD)["zoo_tensor_cores"], "tensor_instructions")

    def util(before: float, after: float) -> RootCause | None:
        return tensor_cores_lost(_pair(with_values(good, tensor_pipe_utilization=before),
                                       with_values(good, tensor_pipe_utilization=after)))  # fmt: skip

    got = util(4.0, 0.4)  # a tenth
    assert got is not None and got.detail.startswith("tensor pipe busy 4.00% -> 0.40%")
    assert util(4.0, 0.41) is None
    assert util(3.0, 0.1) is not None  # from 3% of active cycles
    assert util(2.9, 0.1) is None
    assert tensor_cores_lost(_pair(_without(good, "tensor_pipe_utilization"),
                                   with_values(good, tensor_pipe_utilization=0.0))) is None  # fmt: skip


def test_tensor_cores_lost_says_the_math_moved_when_instructions_grew_by_half() -> None:
    n = float(sides(GOOD)["zoo_tensor_cores"].values["instructions_executed"])
    grew = tensor_cores_lost(_tensor(tensor_instructions=0.0, instructions_executed=n * 1.6))
    held = tensor_cores_lost(_tensor(tensor_instructions=0.0, instructions_executed=n * 1.5))
    assert grew is not None and "(the math moved to the FMA pipe)" in grew.detail
    assert held is not None and "FMA" not in held.detail


def test_explain_finds_no_tensor_core_work_in_a_matrix_kernel_only() -> None:
    # Under half a percent of the instructions, or the pipe under 1% busy where no count.
    side = sides(GOOD)["zoo_tensor_cores"]
    n = float(side.values["instructions_executed"])
    assert tensor_cores_lost(_alone(with_values(side, tensor_instructions=n * 0.004)))
    assert tensor_cores_lost(_alone(with_values(side, tensor_instructions=n * 0.005))) is None
    no_count = _without(side, "tensor_instructions")
    got = tensor_cores_lost(_alone(with_values(no_count, tensor_pipe_utilization=0.5)))
    assert got is not None and got.detail.endswith("busy 0.50% of active cycles")
    assert tensor_cores_lost(_alone(with_values(no_count, tensor_pipe_utilization=1.0))) is None
    neither = _without(no_count, "tensor_pipe_utilization")
    assert tensor_cores_lost(_alone(neither)) is None
    # A kernel whose name says no matrix math is never asked.
    other = replace(with_values(side, tensor_instructions=0.0), name="zoo_copy(float *)")
    assert tensor_cores_lost(_alone(other)) is None


# -- rules_occupancy: registers, shared memory, the limiter, local memory ----------------------


def test_explain_names_the_resource_that_limits_occupancy() -> None:
    # zoo-bad's zoo_registers: 40 registers a thread, limiter 'registers', 75% theoretical,
    # 67% achieved; zoo_shared_occupancy: 98,304 bytes a block, limiter 'shared_mem'.
    regs = sides(BAD)["zoo_registers"]
    got = occupancy_registers(_alone(regs))
    assert got is not None and got.title == "Occupancy limited by registers"
    assert got.detail == (
        "40 registers per thread bound the blocks per SM; theoretical occupancy 75%, achieved 67%"
    )
    shared = occupancy_shared_memory(_alone(sides(BAD)["zoo_shared_occupancy"]))
    assert shared is not None and shared.title == "Occupancy limited by shared memory"
    assert shared.detail.startswith("98,304 bytes of shared memory per block bound")
    # Full occupancy, or another limiter: no finding; unknown theoretical: still one.
    assert occupancy_registers(_alone(with_values(regs, theoretical_occupancy=100.0))) is None
    assert occupancy_registers(_alone(with_values(regs, occupancy_limiter="warps"))) is None
    unknown = _without(regs, "theoretical_occupancy", "achieved_occupancy")
    got = occupancy_registers(_alone(unknown))
    assert got is not None and got.detail == "40 registers per thread bound the blocks per SM"
    # Achieved under 60% ranks higher.
    low = occupancy_registers(_alone(with_values(regs, achieved_occupancy=59.0)))
    at = occupancy_registers(_alone(with_values(regs, achieved_occupancy=60.0)))
    assert low is not None and at is not None and low.score > at.score


def _registers(before: Side | None = None, **after: float | str) -> KernelDelta:
    # zoo-good's zoo_registers (32 registers, 100% theoretical) against zoo-bad's (40, 75%,
    # limiter 'registers') with `after` set on it.
    return _pair(
        before or sides(GOOD)["zoo_registers"], with_values(sides(BAD)["zoo_registers"], **after)
    )


def test_register_pressure_needs_more_registers_and_occupancy_down_half_a_point() -> None:
    got = occupancy_registers(_registers())
    assert got is not None and got.detail == (
        "registers per thread 32 -> 40; theoretical occupancy 100% -> 75% (registers now the limiter)"
    )
    assert occupancy_registers(_registers(theoretical_occupancy=99.5)) is None
    assert occupancy_registers(_registers(theoretical_occupancy=99.4)) is not None
    assert occupancy_registers(_registers(registers_per_thread=32.0)) is None
    assert occupancy_registers(_registers(occupancy_limiter="warps")) is None
    # A fall of 50 points ranks above one of 25, both capped at 10 points over 80.
    deep = occupancy_registers(_registers(theoretical_occupancy=50.0))
    deeper = occupancy_registers(_registers(theoretical_occupancy=25.0))
    assert deep is not None and deeper is not None and deep.score == deeper.score > got.score


def test_register_pressure_without_theoretical_occupancy_reads_the_limiter() -> None:
    theo = ("theoretical_occupancy",)
    before = _without(sides(GOOD)["zoo_registers"], *theo)  # limiter 'registers+warps'
    after = _without(sides(BAD)["zoo_registers"], *theo)  # limiter 'registers'
    got = occupancy_registers(_pair(before, after))
    assert got is not None and got.detail.endswith("; registers now limit occupancy")
    same = with_values(after, occupancy_limiter="registers+warps")
    assert occupancy_registers(_pair(before, same)) is None


def test_register_pressure_is_not_named_where_spills_went_away() -> None:
    # Local memory halved (or less) with the registers up: spills-removed's case.
    before = with_values(sides(GOOD)["zoo_registers"], local_memory_sectors=10000.0)
    assert occupancy_registers(_registers(before, local_memory_sectors=5000.0)) is None
    assert occupancy_registers(_registers(before, local_memory_sectors=5001.0)) is not None


def test_shared_memory_pressure_needs_more_bytes_and_occupancy_down() -> None:
    good, bad = sides(GOOD)["zoo_shared_occupancy"], sides(BAD)["zoo_shared_occupancy"]
    got = occupancy_shared_memory(_pair(good, bad))
    assert got is not None and got.detail == (
        "shared memory per block 8,192 -> 98,304 bytes; theoretical occupancy 100% -> 25% "
        "(shared memory now the limiter)"
    )
    assert (
        occupancy_shared_memory(_pair(good, with_values(bad, shared_memory_per_block=8192.0)))
        is None
    )
    assert (
        occupancy_shared_memory(_pair(good, with_values(bad, theoretical_occupancy=99.5))) is None
    )
    assert occupancy_shared_memory(_pair(good, with_values(bad, occupancy_limiter="warps"))) is None
    theo = ("theoretical_occupancy",)
    got = occupancy_shared_memory(_pair(_without(good, *theo), _without(bad, *theo)))
    assert got is not None and got.detail.endswith("; shared memory now limits occupancy")


def test_another_limiter_is_a_regression_only_where_occupancy_fell() -> None:
    good = sides(GOOD)["zoo_registers"]  # limiter 'registers+warps', 100%
    fell = with_values(good, occupancy_limiter="blocks", theoretical_occupancy=50.0)
    got = occupancy_limiter(_pair(good, fell))
    assert got is not None and got.kind is CauseKind.REGRESSION
    assert got.title == "Occupancy now limited by blocks"
    # Registers or shared memory as the new limiter: their own rules say it.
    regs = with_values(good, occupancy_limiter="registers", theoretical_occupancy=50.0)
    assert occupancy_limiter(_pair(good, regs)) is None
    held = occupancy_limiter(_pair(good, with_values(good, occupancy_limiter="blocks")))
    assert held is not None and held.kind is CauseKind.CHANGE
    assert occupancy_limiter(_pair(good, good)) is None
    unknown = _without(fell, "theoretical_occupancy")
    got = occupancy_limiter(_pair(_without(good, "theoretical_occupancy"), unknown))
    assert got is not None and got.kind is CauseKind.CHANGE


def _local(before: float | None, after: float, registers: float | None = None) -> KernelDelta:
    # zoo-good's zoo_local_memory: no local memory, 32 registers a thread.
    good = sides(GOOD)["zoo_local_memory"]
    base = _without(good, "local_memory_sectors")
    if before is not None:
        base = with_values(good, local_memory_sectors=before)
    now = with_values(good, local_memory_sectors=after)
    if registers is not None:
        now = with_values(now, registers_per_thread=registers)
    return _pair(base, now)


def test_local_memory_appears_beyond_1024_sectors_and_half_again() -> None:
    assert local_memory(_local(0.0, 1024.0)) is None
    got = local_memory(_local(0.0, 1025.0))
    assert got is not None and got.title == "Local-memory traffic appeared"
    assert local_memory(_local(10000.0, 15000.0)) is None  # x1.5 exactly
    assert local_memory(_local(10000.0, 15001.0)) is not None
    assert local_memory(_local(None, 1e6)) is None
    spills = local_memory(_local(0.0, 1e6, registers=24.0))
    assert spills is not None and spills.title == "Registers now spill to local memory"
    assert "registers per thread 32 -> 24: the compiler spills" in spills.detail
    side = sides(GOOD)["zoo_local_memory"]
    assert local_memory(_alone(side)) is None  # 0 sectors
    got = local_memory(_alone(with_values(side, local_memory_sectors=1.0)))
    assert got is not None and got.detail.startswith("1 local-memory sectors")


def test_spills_removed_at_half_the_local_memory_with_more_registers() -> None:
    good = sides(GOOD)["zoo_local_memory"]

    def removed(after: float, registers: float = 40.0, faster: bool = False,
                gated: bool = False) -> RootCause | None:  # fmt: skip
        before = with_values(good, local_memory_sectors=10000.0)
        duration = float(good.values["duration"])
        now = with_values(good, local_memory_sectors=after, registers_per_thread=registers,
                          duration=duration * (0.5 if faster else 1.0))  # fmt: skip
        worse = (
            (Comparison("k", "registers_per_thread", State.REGRESSED, 32.0, 40.0),) if gated else ()
        )
        return spills_removed(replace(_pair(before, now), comparisons=worse))

    assert removed(5001.0) is None
    assert removed(5000.0, registers=32.0) is None
    slow, quick, gated = (
        removed(5000.0),
        removed(0.0, faster=True),
        removed(0.0, faster=True, gated=True),
    )
    assert slow is not None and slow.kind is CauseKind.TRADE_OFF
    assert quick is not None and quick.kind is CauseKind.IMPROVEMENT
    assert quick.detail.endswith("; the kernel got faster")
    assert gated is not None and gated.kind is CauseKind.TRADE_OFF


# -- rules_ncu: NCU's own rules, a second opinion -----------------------------------------------


def _rules(side: Side, rules: dict[str, float], texts: dict[str, str] | None = None) -> Side:
    values = {f"ncu_rule.{r}": v for r, v in rules.items()}
    return replace(with_values(side, **values), rules=texts or {})


def test_explain_lists_ncus_rules_from_20_percent_highest_first() -> None:
    side = sides(GOOD)["zoo_coalescing"]
    got = ncu_rules(_alone(_rules(side, {"A": 20.0, "B": 19.9, "C": 45.0}, {"C": "see C"})))
    assert got is not None and got.title == "NCU's rules fire: C, A"
    assert got.detail == "C (est. speedup 45%; see C); A (est. speedup 20%)"
    assert [(e.metric, e.before, e.after) for e in got.evidence] == [
        ("ncu_rule.C", None, 45.0),
        ("ncu_rule.A", None, 20.0),
    ]
    assert ncu_rules(_alone(_rules(side, {"B": 19.9}))) is None
    assert ncu_rules(_alone(side)) is None


def test_ncus_rules_that_newly_fire_from_5_points_or_grew_10() -> None:
    side = sides(GOOD)["zoo_coalescing"]
    before = _rules(side, {"Old": 10.0, "Same": 30.0})
    after = _rules(side, {"Old": 20.0, "Same": 39.9, "New": 5.0, "Small": 4.9})
    got = ncu_rules(_pair(before, after))
    assert got is not None and got.title == "NCU's rules newly fire or grew: Old, New"
    assert got.detail == "Old (est. speedup 10% -> 20%); New (est. speedup 5%)"
    assert [(e.before, e.after) for e in got.evidence] == [(10.0, 20.0), (None, 5.0)]
    assert ncu_rules(_pair(before, _rules(side, {"Old": 19.9, "Small": 4.9}))) is None
    # A text value where a speedup is expected is not a rule that fired.
    text = replace(with_values(side, **{"ncu_rule.T": "n/a"}), rules={})
    assert ncu_rules(_pair(before, text)) is None
    assert ncu_rules(_pair(with_values(side, **{"ncu_rule.New": "n/a"}),
                           _rules(side, {"New": 5.0}))) is not None  # fmt: skip


# -- rules_work: more or less work, launch count and shape -------------------------------------


def _work(before: dict[str, float], after: dict[str, float], judged: str = "") -> KernelDelta:
    """zoo-good's zoo_registers against itself with `before` and `after` set on each side;
    `judged`: a metric the gate judged regressed."""
    good = sides(GOOD)["zoo_registers"]
    comparisons = (Comparison("k", judged, State.REGRESSED, 1.0, 2.0),) if judged else ()
    return KernelDelta(
        good.name, with_values(good, **before), with_values(good, **after), comparisons
    )


def test_more_work_from_a_fifth_more_or_a_judged_move() -> None:
    n = {"instructions_executed": 100.0}
    assert more_work(_work(n, {"instructions_executed": 120.0})) is not None
    assert more_work(_work(n, {"instructions_executed": 119.0})) is None
    grew = more_work(_work(n, {"instructions_executed": 101.0}, judged="instructions_executed"))
    assert grew is not None and grew.detail.startswith("instructions_executed x1.01")
    assert more_work(_work(n, n, judged="instructions_executed")) is None


@pytest.mark.parametrize(
    ("metric", "held", "lost"),
    [
        ("warp_execution_efficiency", 97.0, 96.0),
        ("global_load_efficiency", 95.0, 94.0),
        ("global_store_efficiency", 95.0, 94.0),
        ("sectors_per_request_ld", 110.0, 111.0),
        ("l2_atomic_requests", 150.0, 151.0),
        ("tensor_instructions", 50.0, 49.0),
    ],
)
def test_more_work_is_at_the_same_efficiency_to_each_bound(
    metric: str, held: float, lost: float
) -> None:
    # _efficiency_held: each ratio within its bounds, inclusive (from 100 on the baseline).
    more = {"instructions_executed": 200.0}
    base = {"instructions_executed": 100.0, metric: 100.0}
    assert more_work(_work(base, {**more, metric: held})) is not None
    assert more_work(_work(base, {**more, metric: lost})) is None


def test_more_work_allows_local_memory_up_to_half_again_and_1024_sectors() -> None:
    more = {"instructions_executed": 200.0}
    base = {"instructions_executed": 100.0, "local_memory_sectors": 1000.0}
    assert more_work(_work(base, {**more, "local_memory_sectors": 2524.0})) is not None
    assert more_work(_work(base, {**more, "local_memory_sectors": 2525.0})) is None
    none = _work({"instructions_executed": 100.0}, {**more, "local_memory_sectors": 1024.0})
    none = replace(none, baseline=_without(none.baseline, "local_memory_sectors"))
    assert more_work(none) is not None
    assert (
        more_work(replace(none, current=with_values(none.current, local_memory_sectors=1025.0)))
        is None
    )


def test_less_work_needs_a_fifth_less_and_a_faster_kernel() -> None:
    good = sides(GOOD)["zoo_registers"]
    duration = float(good.values["duration"])
    fast = {"duration": duration * 0.5}
    got = less_work(
        _work({"instructions_executed": 100.0}, {"instructions_executed": 80.0, **fast})
    )
    assert got is not None and got.kind is CauseKind.IMPROVEMENT
    assert (
        less_work(_work({"instructions_executed": 100.0}, {"instructions_executed": 81.0, **fast}))
        is None
    )
    assert (
        less_work(_work({"instructions_executed": 100.0}, {"instructions_executed": 50.0})) is None
    )


def test_launch_count_more_is_a_regression_fewer_an_improvement() -> None:
    good = sides(GOOD)["zoo_registers"]  # 3 launches a run
    more = launch_count(_pair(good, replace(good, launches=4.0)))
    assert more is not None and more.kind is CauseKind.REGRESSION
    assert (
        more.detail
        == "3 -> 4 launches per captured run: a redundant launch, total time grows with it"
    )
    fewer = launch_count(_pair(good, replace(good, launches=2.0)))
    assert fewer is not None and fewer.kind is CauseKind.IMPROVEMENT
    assert fewer.detail == "3 -> 2 launches per captured run"
    assert fewer.lever == IMPROVED_LEVERS["launch-count"]
    assert more.score > fewer.score
    assert launch_count(_pair(good, good)) is None
    unknown = replace(_without(good, "launches"), launches=None)
    assert launch_count(_pair(unknown, good)) is None
    assert launch_count(_pair(good, unknown)) is None


def test_launch_shape_names_what_changed_and_ranks_higher_when_slower() -> None:
    good = sides(GOOD)["zoo_registers"]  # grid 16384x1x1, block 256x1x1
    half = replace(good, grid=(8192, 1, 1))
    got = launch_shape(_pair(good, half))
    assert got is not None and got.detail == "grid 16384x1x1 -> 8192x1x1"
    both = launch_shape(_pair(good, replace(half, block=(128, 1, 1))))
    assert (
        both is not None and both.detail == "grid 16384x1x1 -> 8192x1x1; block 256x1x1 -> 128x1x1"
    )
    duration = float(good.values["duration"])
    slow = launch_shape(_pair(good, with_values(half, duration=duration * 2)))
    assert slow is not None and slow.score > got.score
    assert launch_shape(_pair(good, good)) is None
    for field in ("grid", "block"):
        assert launch_shape(_pair(good, replace(half, **{field: None}))) is None
        assert launch_shape(_pair(replace(good, **{field: None}), half)) is None


def test_a_cause_the_counters_name_outranks_ncus_rules_in_execution() -> None:
    # rootcause.py: NCU's rules are a second opinion; bank conflicts at a low rate (a symptom)
    # or a high one, divergence alone, tensor cores lost: each heads NCU's rules.
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    good = sides(GOOD)["zoo_bank_conflicts"]
    n = float(good.values["instructions_executed"])
    for rate in (0.05, 0.2):
        d = _pair(_conflicts(n * 0.001), _conflicts(n * rate, **rule))
        names = [c.mechanism for c in diagnose(d).causes]
        assert names.index("bank-conflicts") < names.index("ncu-rules"), (rate, names)
    alone = [c.mechanism for c in diagnose(_alone(_conflicts(n * 0.05, **rule))).causes]
    assert alone.index("bank-conflicts") < alone.index("ncu-rules"), alone
    diverged = with_values(sides(GOOD)["zoo_divergence"], warp_execution_efficiency=50.0, **rule)
    names = [c.mechanism for c in diagnose(_alone(diverged)).causes]
    assert names.index("divergence") < names.index("ncu-rules"), names
    names = [c.mechanism for c in diagnose(_tensor(tensor_instructions=0.0, **rule)).causes]
    assert names.index("no-tensor-cores") < names.index("ncu-rules"), names


def test_bank_conflicts_lead_from_one_per_ten_instructions() -> None:
    n = float(sides(GOOD)["zoo_bank_conflicts"].values["instructions_executed"])
    at = bank_conflicts(_pair(_conflicts(n * 0.001), _conflicts(n * 0.1)))
    under = bank_conflicts(_pair(_conflicts(n * 0.001), _conflicts(n * 0.099)))
    assert at is not None and under is not None and at.score > under.score + 20


def _pipelined(
    before: dict[str, float], after: dict[str, float], slower: bool = True
) -> KernelDelta:
    """zoo-good's zoo_registers against itself at the same work, its duration x1.5 (or
    held), with `before` and `after` set on each side."""
    good = sides(GOOD)["zoo_registers"]
    duration = float(good.values["duration"])
    now = with_values(good, duration=duration * (1.5 if slower else 1.0), **after)
    return _pair(with_values(good, **before), now)


def test_lost_pipelining_from_one_latency_signal_at_its_edge() -> None:
    share = "stall.long_scoreboard"
    got = lost_pipelining(_pipelined({share: 10.0}, {share: 15.0}))  # +5 points
    assert got is not None and got.detail.startswith(
        "at the same work, long_scoreboard share moved"
    )
    assert lost_pipelining(_pipelined({share: 10.0}, {share: 14.5})) is None
    cpi = "stall_cpi.long_scoreboard"
    assert lost_pipelining(_pipelined({cpi: 4.0}, {cpi: 5.0})) is not None  # x1.25
    assert lost_pipelining(_pipelined({cpi: 4.0}, {cpi: 4.9})) is None
    assert lost_pipelining(_pipelined({"stall.wait": 10.0}, {"stall.wait": 15.0})) is not None
    assert lost_pipelining(_pipelined({"stall_cpi.wait": 4.0}, {"stall_cpi.wait": 5.0})) is not None
    # Not slower: nothing lost.
    assert lost_pipelining(_pipelined({share: 10.0}, {share: 30.0}, slower=False)) is None


def test_lost_pipelining_from_two_other_signals() -> None:
    # Shared memory per block x0.75 and the tensor pipe x0.8 (from 5% at least): both needed.
    smem = {"shared_memory_per_block": 1000.0}
    tensor = {"tensor_pipe_utilization": 5.0}
    both = lost_pipelining(
        _pipelined(
            {**smem, **tensor}, {"shared_memory_per_block": 750.0, "tensor_pipe_utilization": 4.0}
        )
    )
    assert both is not None
    assert "; shared memory per block x0.75; tensor pipe x0.80" in both.detail
    assert lost_pipelining(_pipelined(smem, {"shared_memory_per_block": 750.0})) is None
    assert lost_pipelining(_pipelined({**smem, **tensor},
                                      {"shared_memory_per_block": 760.0, "tensor_pipe_utilization": 4.0})) is None  # fmt: skip
    assert lost_pipelining(_pipelined({**smem, "tensor_pipe_utilization": 4.9},
                                      {"shared_memory_per_block": 750.0, "tensor_pipe_utilization": 3.0})) is None  # fmt: skip


def test_lost_pipelining_leaves_a_fall_in_occupancy_to_the_occupancy_rules() -> None:
    share = "stall.long_scoreboard"
    theo = "theoretical_occupancy"
    assert (
        lost_pipelining(_pipelined({share: 10.0, theo: 100.0}, {share: 20.0, theo: 99.5}))
        is not None
    )
    assert (
        lost_pipelining(_pipelined({share: 10.0, theo: 100.0}, {share: 20.0, theo: 99.4})) is None
    )
    one_side = _pipelined({share: 10.0}, {share: 20.0, theo: 50.0})
    one_side = replace(one_side, baseline=_without(one_side.baseline, theo))
    assert lost_pipelining(one_side) is not None


@pytest.mark.parametrize(
    ("metric", "inside", "outside"),
    [
        ("instructions_executed", (50.0, 125.0), (49.0, 126.0)),
        ("global_load_sectors", (85.0, 120.0), (84.0, 121.0)),
        ("dram_bytes", (80.0, 125.0), (79.0, 126.0)),
        ("global_load_efficiency", (95.0, 1000.0), (94.0, 1001.0)),
        ("sectors_per_request_ld", (1.0, 120.0), (None, 121.0)),
    ],
)
def test_lost_pipelining_is_at_the_same_work_to_each_bound(
    metric: str, inside: tuple[float, float], outside: tuple[float | None, float]
) -> None:
    # _same_work: each ratio from 100 on the baseline within its bounds, inclusive.
    share = "stall.long_scoreboard"
    for value in inside:
        assert lost_pipelining(
            _pipelined({share: 10.0, metric: 100.0}, {share: 20.0, metric: value})
        )
    for value in outside:
        if value is not None:
            got = lost_pipelining(
                _pipelined({share: 10.0, metric: 100.0}, {share: 20.0, metric: value})
            )
            assert got is None, value


def test_bank_conflicts_with_a_rate_on_one_side_only_are_counted() -> None:
    n = float(sides(GOOD)["zoo_bank_conflicts"].values["instructions_executed"])
    before = _without(_conflicts(10000.0), "instructions_executed")
    got = bank_conflicts(_pair(before, _conflicts(n * 0.05)))
    assert got is not None and got.detail.endswith("(count only)")


def test_tensor_cores_lost_from_one_tensor_instruction() -> None:
    # "ti_b <= 0": a kernel that issued none has none to lose; one is some.
    one = _pair(with_values(sides(GOOD)["zoo_tensor_cores"], tensor_instructions=1.0),
                with_values(sides(GOOD)["zoo_tensor_cores"], tensor_instructions=0.0))  # fmt: skip
    assert tensor_cores_lost(one) is not None


def test_occupancy_rules_read_what_each_side_knows() -> None:
    good, bad = sides(GOOD)["zoo_registers"], sides(BAD)["zoo_registers"]
    theo, lim = "theoretical_occupancy", "occupancy_limiter"
    # The limiter unknown now: register pressure is still named from the occupancy's fall.
    got = occupancy_registers(_pair(good, _without(bad, lim)))
    assert got is not None and got.mechanism == "occupancy-registers"
    # Theoretical occupancy on one side only: the limiter that changed decides.
    got = occupancy_registers(_pair(_without(good, theo), bad))
    assert got is not None and got.detail.endswith("; registers now limit occupancy")
    # No theoretical occupancy, a limiter known on one side only: no sign of a fall.
    assert occupancy_registers(_pair(_without(good, theo), _without(bad, theo, lim))) is None
    assert occupancy_registers(_pair(_without(good, theo, lim), _without(bad, theo))) is None
    # The limiter rule needs both sides' limiters.
    assert occupancy_limiter(_pair(_without(good, lim), bad)) is None
    assert occupancy_limiter(_pair(good, _without(bad, lim))) is None
    shared = occupancy_shared_memory(_alone(sides(BAD)["zoo_shared_occupancy"]))
    assert shared is not None and shared.mechanism == "occupancy-shared-memory"


def test_local_memory_and_spills_with_registers_unknown() -> None:
    good = sides(GOOD)["zoo_local_memory"]
    before = _without(with_values(good, local_memory_sectors=0.0), "registers_per_thread")
    got = local_memory(_pair(before, with_values(good, local_memory_sectors=1e6)))
    assert got is not None and got.title == "Local-memory traffic appeared"
    had = _without(with_values(good, local_memory_sectors=1e6), "registers_per_thread")
    assert spills_removed(_pair(had, with_values(good, local_memory_sectors=0.0))) is None


def test_occupancy_causes_outrank_ncus_rules() -> None:
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    for kernel, mechanism in (("zoo_registers", "occupancy-registers"),
                              ("zoo_shared_occupancy", "occupancy-shared-memory")):  # fmt: skip
        d = _pair(sides(GOOD)[kernel], with_values(sides(BAD)[kernel], **rule))
        names = [c.mechanism for c in diagnose(d).causes]
        assert names.index(mechanism) < names.index("ncu-rules"), names


def test_limiter_local_memory_and_spills_outrank_ncus_rules() -> None:
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    good = sides(GOOD)["zoo_registers"]
    fell = with_values(good, occupancy_limiter="blocks", theoretical_occupancy=50.0, **rule)
    local = _local(0.0, 1e6)
    spills = _pair(with_values(good, local_memory_sectors=1e4),
                   with_values(good, local_memory_sectors=0.0, registers_per_thread=40.0, **rule))  # fmt: skip
    deltas = {
        "occupancy-limiter": _pair(good, fell),
        "local-memory": replace(local, current=with_values(local.current, **rule)),
        "spills-removed": spills,
    }
    for mechanism, d in deltas.items():
        names = [c.mechanism for c in diagnose(d).causes]
        assert names.index(mechanism) < names.index("ncu-rules"), names
    alone = with_values(sides(GOOD)["zoo_local_memory"], local_memory_sectors=1e6, **rule)
    names = [c.mechanism for c in diagnose(_alone(alone)).causes]
    assert names.index("local-memory") < names.index("ncu-rules"), names


def test_more_work_efficiency_upper_bounds_and_ratios_that_fell() -> None:
    more = {"instructions_executed": 200.0}
    base = {"instructions_executed": 100.0}
    # Efficiencies up to x10, tensor instructions up to x100; sectors per request and atomics
    # down to any ratio.
    for metric, before, held, lost in (
        ("warp_execution_efficiency", 5.0, 50.0, 52.5),
        ("global_load_efficiency", 5.0, 50.0, 52.5),
        ("global_store_efficiency", 5.0, 50.0, 52.5),
        ("tensor_instructions", 1.0, 100.0, 100.5),
    ):
        assert more_work(_work({**base, metric: before}, {**more, metric: held})) is not None
        assert more_work(_work({**base, metric: before}, {**more, metric: lost})) is None, metric
    for metric in ("sectors_per_request_ld", "l2_atomic_requests"):
        assert more_work(_work({**base, metric: 100.0}, {**more, metric: 50.0})) is not None


def test_only_the_work_counter_the_gate_judged_moves_by_less_than_a_fifth() -> None:
    n = {"instructions_executed": 100.0}
    assert more_work(_work(n, {"instructions_executed": 101.0}, judged="duration")) is None


def test_launch_shape_of_the_block_alone() -> None:
    good = sides(GOOD)["zoo_registers"]
    got = launch_shape(_pair(good, replace(good, block=(128, 1, 1))))
    assert got is not None and got.detail == "block 256x1x1 -> 128x1x1"


def test_work_and_launch_causes_outrank_ncus_rules() -> None:
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    good = sides(GOOD)["zoo_registers"]
    duration = float(good.values["duration"])
    half = float(good.values["instructions_executed"]) * 0.5
    fast = with_values(good, instructions_executed=half, duration=duration * 0.5, **rule)
    deltas = {
        "less-work": _pair(good, fast),
        "launch-count": _pair(good, replace(with_values(good, **rule), launches=4.0)),
        "launch-shape": _pair(good, replace(with_values(good, **rule), grid=(8192, 1, 1))),
    }
    for mechanism, d in deltas.items():
        names = [c.mechanism for c in diagnose(d).causes]
        assert names.index(mechanism) < names.index("ncu-rules"), names
    fewer = _pair(good, replace(with_values(good, **rule), launches=2.0))
    names = [c.mechanism for c in diagnose(fewer).causes]
    assert names.index("launch-count") < names.index("ncu-rules"), names
    slower = with_values(good, duration=duration * 2, **rule)
    names = [c.mechanism for c in diagnose(_pair(good, replace(slower, grid=(8192, 1, 1)))).causes]
    assert names.index("launch-shape") < names.index("ncu-rules"), names


def test_loads_that_use_none_of_their_bytes_became_uncoalesced() -> None:
    # Bytes used per sector 100% -> 0%: the score's ratio is taken over at least 1%.
    got = uncoalesced_loads(
        _pair(sides(GOOD)["zoo_coalescing"], _loads(global_load_efficiency=0.0))
    )
    assert got is not None and got.detail.startswith(
        "bytes used per fetched sector fell from 100% to 0%"
    )


def test_explain_ranks_uncoalesced_loads_over_ncus_rules() -> None:
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    spread = _without(_loads(sectors_per_request_ld=8.0, **rule), "global_load_efficiency")
    for side in (_loads(global_load_efficiency=60.0, **rule), spread):
        names = [c.mechanism for c in diagnose(_alone(side)).causes]
        assert names.index("uncoalesced-loads") < names.index("ncu-rules"), names


def _rate(before: float, after: float) -> RootCause | None:
    """Bank conflicts from `before` to `after` in 100,000 warp instructions on both sides:
    the rates are the doubles of conflicts / 100,000."""
    n = {"instructions_executed": 100000.0}
    return bank_conflicts(_pair(_conflicts(before, **n), _conflicts(after, **n)))


def test_bank_conflict_rates_at_their_exact_edges() -> None:
    assert _rate(100.0, 1000.0) is None  # 0.01 a warp instruction: not above
    assert _rate(100.0, 800.0) is None  # x8, under 0.01
    assert _rate(2000.0, 4000.0) is None  # x2 exactly
    assert _rate(2000.0, 4001.0) is not None
    got = _rate(0.0, 5000.0)  # from none
    assert got is not None and got.detail.startswith("bank conflicts 0 -> 5,000")


def test_lost_pipelining_by_the_tensor_pipe_below_x0_8_only() -> None:
    smem = {"shared_memory_per_block": 1000.0, "tensor_pipe_utilization": 5.0}
    for tensor, named in ((3.0, True), (4.5, False)):
        after = {"shared_memory_per_block": 750.0, "tensor_pipe_utilization": tensor}
        assert (lost_pipelining(_pipelined(smem, after)) is not None) is named, tensor


def test_tensor_instructions_on_one_side_only_fall_back_to_the_pipes_use() -> None:
    good = sides(GOOD)["zoo_tensor_cores"]  # the tensor pipe 4.26% busy
    now = with_values(good, tensor_pipe_utilization=0.01, tensor_instructions=0.0)
    got = tensor_cores_lost(_pair(_without(good, "tensor_instructions"), now))
    assert got is not None and got.detail.startswith("tensor pipe busy 4.26% -> 0.01%")
    back = tensor_cores_lost(_pair(good, _without(now, "tensor_instructions")))
    assert back is not None and back.detail.startswith("tensor pipe busy")


def test_explain_ranks_a_matrix_kernel_without_tensor_work_over_ncus_rules() -> None:
    side = with_values(sides(GOOD)["zoo_tensor_cores"], tensor_instructions=0.0,
                       **{"ncu_rule.SOLBottleneck": 30.0})  # fmt: skip
    names = [c.mechanism for c in diagnose(_alone(side)).causes]
    assert names.index("no-tensor-cores") < names.index("ncu-rules"), names


def test_occupancy_changes_and_explain_rank_over_ncus_rules() -> None:
    rule = {"ncu_rule.SOLBottleneck": 30.0}
    good = sides(GOOD)["zoo_registers"]
    held = with_values(good, occupancy_limiter="blocks", **rule)
    names = [c.mechanism for c in diagnose(_pair(good, held)).causes]
    assert names.index("occupancy-limiter") < names.index("ncu-rules"), names
    regs = with_values(sides(BAD)["zoo_registers"], achieved_occupancy=67.0, **rule)
    names = [c.mechanism for c in diagnose(_alone(regs)).causes]
    assert names.index("occupancy-registers") < names.index("ncu-rules"), names


def test_spills_removed_from_a_single_local_memory_sector() -> None:
    good = sides(GOOD)["zoo_local_memory"]
    had = with_values(good, local_memory_sectors=1.0)
    now = with_values(good, local_memory_sectors=0.0, registers_per_thread=40.0)
    assert spills_removed(_pair(had, now)) is not None


def test_shared_memory_pressure_ranks_by_how_far_occupancy_fell() -> None:
    good, bad = sides(GOOD)["zoo_shared_occupancy"], sides(BAD)["zoo_shared_occupancy"]
    far = occupancy_shared_memory(_pair(good, bad))  # 100% -> 25%
    near = occupancy_shared_memory(_pair(good, with_values(bad, theoretical_occupancy=90.0)))
    assert far is not None and near is not None and far.score > near.score


def test_less_work_by_a_move_the_gate_judged_improved() -> None:
    good = sides(GOOD)["zoo_registers"]
    fast = {"duration": float(good.values["duration"]) * 0.5}

    def less(after: float) -> RootCause | None:
        d = _work({"instructions_executed": 100.0}, {"instructions_executed": after, **fast})
        judged = Comparison("k", "instructions_executed", State.IMPROVED, 100.0, after)
        return less_work(replace(d, comparisons=(judged,)))

    got = less(99.0)
    assert got is not None and got.detail.startswith("instructions_executed x0.99")
    assert less(100.0) is None
