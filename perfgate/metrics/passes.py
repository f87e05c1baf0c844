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

# The set itself lives in ingest (perfgate.ingest.gateset): reading a capture tells a gate
# capture that lost its sidecar by its columns.
from perfgate.ingest.gateset import CLOCK_METRICS as CLOCK_METRICS
from perfgate.ingest.gateset import DEVICE_PREFIX as DEVICE_PREFIX
from perfgate.ingest.gateset import GATE_ONE_PASS as GATE_ONE_PASS
from perfgate.ingest.gateset import LAUNCH_PREFIX as LAUNCH_PREFIX
from perfgate.ingest.gateset import in_gate_capture as in_gate_capture
from perfgate.ingest.gateset import in_gate_set as in_gate_set

# The phases of `perfgate capture`, as its sidecar records them.
from perfgate.ingest.meta import DIAGNOSIS as DIAGNOSIS
from perfgate.ingest.meta import FULL as FULL
from perfgate.ingest.meta import GATE as GATE
from perfgate.ingest.meta import PHASES as PHASES

# Where the figures above come from (shown in docs and by tests).
MEASURED_IN = "benchmarks/capture_cost/passes/candidates-h100.txt"

# The reason a metric outside the gate set is skipped in a check of a gate capture alone.
NOT_IN_GATE = "not in a gate capture (the diagnosis capture collects it)"


def gate_part(raw: Iterable[str]) -> tuple[str, ...]:
    """Of raw metrics, those a gate capture collects, in their order."""
    return tuple(m for m in raw if in_gate_set(m))
