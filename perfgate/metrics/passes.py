"""What one ncu replay pass holds: the gate set of `perfgate capture --phases gate`.

Measured, not guessed (issue 24): on an H100 80GB HBM3 with ncu 2025.3.1, every raw metric
alone costs 1 pass except the "% of peak" throughput breakdowns (`sm__throughput` 9,
`gpu__compute_memory_throughput` 6, `l1tex__throughput` and `lts__throughput` 5,
`lts__t_sector_hit_rate.pct` 3), and together the metrics below still fit in ONE pass (set
S10 of benchmarks/capture_cost/passes/candidates.txt, measured in
benchmarks/capture_cost/passes/candidates-h100.txt: "S10 passes=1 metrics=18"). Adding global
load/store requests, local-memory sectors, `smsp__thread_inst_executed` beside the tensor
counter, or the SASS bytes-per-sector ratios pushes a set to 3 passes or more
(benchmarks/capture_cost/passes/README.md). On an H200 every count came out the same
(candidates-h200.txt, per-metric-h200.txt), and every capture of the gate corpus
(tests/data/field/gate, H100 and H200) took one pass per kernel.

A gate capture asks for the raw sources of a baseline's gated metrics that are in this set
(plus the launch attributes, which cost no pass); what is outside it (warp execution
efficiency, global load/store efficiency, local-memory sectors, stalls, throughputs) is left
to the diagnosis capture, which profiles only the kernels that failed the gate.
"""

from __future__ import annotations

from collections.abc import Iterable

# The phases of `perfgate capture`, as its sidecar records them.
from perfgate.ingest.meta import DIAGNOSIS as DIAGNOSIS
from perfgate.ingest.meta import FULL as FULL
from perfgate.ingest.meta import GATE as GATE
from perfgate.ingest.meta import PHASES as PHASES

# Set S10 of benchmarks/capture_cost/passes/candidates.txt, less the launch attributes
# (LAUNCH_PREFIX): one replay pass on H100 (candidates-h100.txt).
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
    }
)
# Launch attributes (registers, shared memory, occupancy limits) are read from the launch, not
# counted: no replay pass.
LAUNCH_PREFIX = "launch__"
DEVICE_PREFIX = "device__"
# Where the figures above come from (shown in docs and by tests).
MEASURED_IN = "benchmarks/capture_cost/passes/candidates-h100.txt"

# The reason a metric outside the gate set is skipped in a check of a gate capture alone.
NOT_IN_GATE = "not in a gate capture (the diagnosis capture collects it)"


def in_gate_set(raw: str) -> bool:
    """Whether a gate capture collects the raw metric `raw`."""
    return raw in GATE_ONE_PASS or raw.startswith(LAUNCH_PREFIX)


def in_gate_capture(column: str) -> bool:
    """Whether a gate capture holds the column `column` of ncu's raw page: what is no metric
    (the kernel name, grid, block), the device's and launch attributes, and the gate set."""
    return "__" not in column or column.startswith(DEVICE_PREFIX) or in_gate_set(column)


def gate_part(raw: Iterable[str]) -> tuple[str, ...]:
    """Of raw metrics, those a gate capture collects, in their order."""
    return tuple(m for m in raw if in_gate_set(m))
