"""The one-pass gate set of `perfgate capture --phases gate`, as raw ncu metric names: what a
gate capture holds (perfgate.metrics.passes says how it was measured: one replay pass on H100
and H200, benchmarks/capture_cost/passes). Here, below the metrics layer, because reading a
capture needs it: a gate capture whose sidecar was lost (renamed, copied alone) is told by its
columns, so its durations are never read as a full capture's."""

from __future__ import annotations

from collections.abc import Iterable

# Set S10 of benchmarks/capture_cost/passes/candidates.txt, less the launch attributes
# (LAUNCH_PREFIX): one replay pass on H100 (candidates-h100.txt). CLOCK_METRICS: the clock a
# duration ran at (SM cycles elapsed, SM and DRAM clock rates), which the capture always asks
# for beside the duration so a reader can tell a slow clock from slow code; still one pass
# (docs/noise.md "The clock behind a duration").
CLOCK_METRICS: tuple[str, ...] = (
    "sm__cycles_elapsed.max",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
)
GATE_ONE_PASS: frozenset[str] = frozenset(
    {
        "gpu__time_duration.sum",
        "smsp__inst_executed.sum",
        "smsp__inst_executed_pipe_tensor.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "lts__t_requests_srcunit_tex_op_red.sum",
        "lts__t_requests_srcunit_tex_op_atom.sum",
        "sm__maximum_warps_per_active_cycle_pct",
        *CLOCK_METRICS,
    }
)
# Launch attributes (registers, shared memory, occupancy limits) are read from the launch, not
# counted: no replay pass.
LAUNCH_PREFIX = "launch__"
DEVICE_PREFIX = "device__"


def in_gate_set(raw: str) -> bool:
    """Whether a gate capture collects the raw metric `raw`."""
    return raw in GATE_ONE_PASS or raw.startswith(LAUNCH_PREFIX)


def in_gate_capture(column: str) -> bool:
    """Whether a gate capture holds the column `column` of ncu's raw page: what is no metric
    (the kernel name, grid, block), the device's and launch attributes, and the gate set."""
    return "__" not in column or column.startswith(DEVICE_PREFIX) or in_gate_set(column)


# What ncu writes into every raw page beside the metrics asked for (the system's links and
# NUMA layout, the profiler's own replay counts), and the occupancy ratio it adds with the
# gate set's warps-per-cycle metric: seen in every gate capture of tests/data/field/gate.
_BESIDE = ("c2clink__", "numa__", "nvlink__", "profiler__")
_ADDED = frozenset(
    {"sm__maximum_warps_avg_per_active_cycle", "smsp__maximum_warps_avg_per_active_cycle"}
)
# A gate metric's own roll-ups (.min, .max, .avg of a .sum) come with it, and a rate's
# (`dram__cycles_elapsed.avg.per_second` brings .min/.max/.sum.per_second: seen in every gate
# capture with the clock).
_GATE_COUNTERS = frozenset(m.split(".", 1)[0] for m in GATE_ONE_PASS)


def _of_gate_capture(column: str) -> bool:
    return (
        in_gate_capture(column)
        or column.startswith(_BESIDE)
        or column in _ADDED
        or column.split(".", 1)[0] in _GATE_COUNTERS
    )


def looks_like_gate(columns: Iterable[str]) -> bool:
    """Whether a capture's columns are a gate capture's: no metric outside the gate set (and
    what ncu adds beside it), and the duration among them (a capture of launch attributes
    alone is no gate capture). A full capture, by hand or by perfgate, holds stall and
    throughput counters a gate capture never does."""
    columns = list(columns)
    return "gpu__time_duration.sum" in columns and all(_of_gate_capture(c) for c in columns)
