"""What a kernel's counters say about it, and the lever to try: the seeds' methodology
(speed-of-light quadrants, stall fingerprints, the bottleneck-to-lever tables) as rules.

Every finding cites the counters it rests on; a rule whose counters the capture does not hold
says so instead of guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.capture import Launch
from perfgate.catalog import lookup
from perfgate.measure import Measured, measure


@dataclass(frozen=True)
class Evidence:
    metric: str  # logical metric name
    value: float | str
    unit: str
    source: str  # the raw ncu metrics it came from


@dataclass(frozen=True)
class Finding:
    rule: str
    title: str
    detail: str
    lever: str
    evidence: tuple[Evidence, ...]
    weight: int  # higher first


@dataclass(frozen=True)
class Diagnosis:
    kernel: str
    name: str
    launches: int
    quadrant: str | None
    findings: tuple[Finding, ...]
    not_evaluated: tuple[str, ...]  # "rule: needs counter, counter"

    @property
    def headline(self) -> str:
        if self.findings:
            return self.findings[0].title
        return "no bottleneck rule fired"


# The dominant stall's meaning and lever (seeds 000, 001, 003; NCU_FACTS for the reasons).
STALL_LEVERS: dict[str, tuple[str, str]] = {
    "mio_throttle": (
        "the L1/MIO pipe is congested: warps issue memory requests faster than it accepts them",
        "move lookup tables to shared memory; issue fewer, wider requests",
    ),
    "short_scoreboard": (
        "too few warps to hide L1 and shared-memory latency",
        "raise occupancy: cut registers per thread with __launch_bounds__ or fewer live values",
    ),
    "long_scoreboard": (
        "warps wait for L2 or DRAM",
        "improve L2 reuse (tiling, blocking), prefetch, keep more independent loads in flight",
    ),
    "math_pipe_throttle": (
        "a compute pipe is saturated",
        "use tensor cores, or do fewer FLOPs (algorithmic change)",
    ),
    "wait": (
        "fixed-latency dependencies, such as MMA results used right after the MMA",
        "deepen the software pipeline (more stages) and interleave independent work",
    ),
    "barrier": (
        "warps wait at __syncthreads()",
        "balance work between the warps of a block; synchronise less often",
    ),
    "not_selected": (
        "warps are ready but another was picked: latency is hidden, issue slots are the limit",
        "reduce the instruction count (vectorised loads, fewer index computations)",
    ),
    "lg_throttle": (
        "the local/global load-store queue is full",
        "fewer, wider global or local accesses; see the atomics and local-memory findings",
    ),
    "drain": (
        "warps wait at exit for their memory writes (often atomics) to drain",
        "fewer global writes or atomics per thread",
    ),
    "dispatch_stall": (
        "the dispatcher could not issue the picked instruction",
        "check the instruction mix",
    ),
    "branch_resolving": (
        "warps wait for branch targets",
        "make branches uniform per warp; fewer branches",
    ),
    "no_instruction": (
        "warps wait for instructions (instruction cache misses, short kernels)",
        "smaller code or longer-running kernels",
    ),
    "imc_miss": ("immediate-constant cache misses", "fewer distinct constants in hot loops"),
    "membar": ("warps wait at memory barriers", "fewer __threadfence() calls"),
    "sleeping": (
        "warps sleep (nanosleep, cooperative waiting)",
        "check the synchronisation scheme",
    ),
    "tex_throttle": ("the texture pipe is congested", "fewer texture fetches"),
    "gmma": ("warpgroups wait for GMMA (wgmma) results", "pipeline wgmma deeper"),
    "misc": ("miscellaneous stalls", "-"),
}

# The logical metrics the rules read.
METRICS: tuple[str, ...] = (
    "sm_throughput", "memory_throughput", "dram_throughput", "dominant_stall",
    "sectors_per_request_ld", "sectors_per_request_st", "shared_bank_conflicts",
    "instructions_executed", "occupancy_limiter", "achieved_occupancy",
    "registers_per_thread", "shared_memory_per_block", "tensor_instructions",
    "tensor_pipe_utilization", "local_memory_sectors", "l2_atomic_requests",
    "global_atomic_requests", "warp_execution_efficiency", "theoretical_occupancy",
    "global_load_efficiency", "global_store_efficiency",
)  # fmt: skip


def raw_inputs() -> set[str]:
    """Every raw ncu metric a rule may read, for reading a capture's columns selectively."""
    return {raw for name in METRICS for formula in lookup(name).formulas for raw in formula.inputs}


_MATMUL_NAME = re.compile(
    r"gemm|matmul|mma|conv|attention|attn|sdpa|flash|tensor_?core|nvjet|cutlass|cublas", re.I
)


def _measure(name: str, launches: Sequence[Launch], columns: frozenset[str]) -> Measured | None:
    m = measure(lookup(name), launches, columns)
    return m if isinstance(m, Measured) else None


def _ev(m: Measured) -> Evidence:
    return Evidence(m.metric, m.value, m.unit, m.source)


def _num(m: Measured | None) -> float | None:
    return float(m.value) if m is not None and isinstance(m.value, float) else None


def _needs(name: str) -> str:
    return ", ".join(lookup(name).formulas[0].inputs[:2]) + (
        ", ..." if len(lookup(name).formulas[0].inputs) > 2 else ""
    )


def quadrant(sm: float, mem: float) -> str:
    """Seed 003's decision table on SM% and memory%."""
    if sm > 80 and mem < 60:
        return "compute-bound"
    if sm < 60 and mem > 80:
        return "memory-bound"
    if sm > 70 and mem > 70:
        return "balanced (near both limits)"
    if sm < 50 and mem < 50:
        return "under-utilised (latency or launch bound)"
    return "between quadrants"


def _warps(launches: Sequence[Launch]) -> float | None:
    counts = []
    for la in launches:
        if la.grid is None or la.block is None:
            return None
        threads = math.prod(la.block)
        counts.append(math.prod(la.grid) * math.ceil(threads / 32))
    return sum(counts) / len(counts) if counts else None


def diagnose(kernel: str, launches: Sequence[Launch], columns: frozenset[str]) -> Diagnosis:
    m = {name: _measure(name, launches, columns) for name in METRICS}
    findings: list[Finding] = []
    missing: list[str] = []

    def need(rule: str, *names: str) -> bool:
        absent = [n for n in names if m[n] is None]
        if absent:
            missing.append(f"{rule}: needs {'; '.join(_needs(n) for n in absent)}")
        return not absent

    quad = None
    sm, mem = _num(m["sm_throughput"]), _num(m["memory_throughput"])
    if need("speed-of-light quadrant", "sm_throughput", "memory_throughput"):
        assert sm is not None and mem is not None
        quad = quadrant(sm, mem)

    stall = m["dominant_stall"]
    if need("dominant stall", "dominant_stall"):
        assert stall is not None and isinstance(stall.value, str)
        reason = stall.value
        share = (stall.shares or {}).get(reason, 0.0)
        meaning, lever = STALL_LEVERS.get(reason, ("", "-"))
        atomics = _atomic_evidence(m, launches)
        if reason in ("lg_throttle", "drain") and atomics is not None and atomics[0] >= 1.0:
            per_warp, cites = atomics
            findings.append(Finding(
                "atomic-contention", "Atomic contention",
                f"{reason} is the dominant stall ({share:.0f}% of stalls) with "
                f"{per_warp:.1f} global atomic/reduction requests per warp",
                "reduce hierarchically: warp shuffle (__shfl_down_sync), then one atomic per "
                "warp or block",
                (_ev(stall), *cites), 90,
            ))  # fmt: skip
        else:
            findings.append(Finding(
                f"stall-{reason}", f"Dominant stall: {reason}",
                f"{share:.0f}% of stalls: {meaning}" if meaning else f"{share:.0f}% of stalls",
                # not_selected means latency is hidden: rarely the thing to fix first.
            lever, (_ev(stall),), 25 if reason == "not_selected" else (50 if share >= 20 else 20),
            ))  # fmt: skip

    for op, label in (("ld", "loads"), ("st", "stores")):
        finding = _coalescing(op, label, m)
        if finding is not None:
            findings.append(finding)
    if m["sectors_per_request_ld"] is None and m["global_load_efficiency"] is None:
        need("coalescing", "sectors_per_request_ld")

    conflicts, instructions = _num(m["shared_bank_conflicts"]), _num(m["instructions_executed"])
    if need("bank conflicts", "shared_bank_conflicts", "instructions_executed"):
        assert conflicts is not None and instructions is not None
        if instructions > 0 and conflicts / instructions > 0.01:
            findings.append(Finding(
                "bank-conflicts", "Shared-memory bank conflicts",
                f"{conflicts:,.0f} conflicts, {conflicts / instructions:.2f} per warp instruction",
                "pad each shared-memory row by one element (tile[32][33]) or swizzle the layout",
                (_ev(m["shared_bank_conflicts"]), _ev(m["instructions_executed"])), 80,  # type: ignore[arg-type]
            ))  # fmt: skip

    limiter = m["occupancy_limiter"]
    if need("occupancy limiter", "occupancy_limiter") and limiter is not None:
        findings.extend(_occupancy(limiter, m))

    efficiency = _num(m["warp_execution_efficiency"])
    if efficiency is not None and efficiency < 80:
        findings.append(Finding(
            "divergence", "Warp divergence",
            f"{efficiency:.0f}% of a warp's threads are active per instruction",
            "make branch conditions uniform per warp (branch on warp index, not lane)",
            (_ev(m["warp_execution_efficiency"]),), 65,  # type: ignore[arg-type]
        ))  # fmt: skip

    local = _num(m["local_memory_sectors"])
    if local is not None and local > 0:
        findings.append(Finding(
            "local-memory", "Local-memory traffic",
            f"{local:,.0f} local-memory sectors: registers spill, or an array is indexed at "
            "run time",
            "index register arrays only with compile-time constants (unrolled loops); give the "
            "kernel more registers if it spills",
            (_ev(m["local_memory_sectors"]),), 75,  # type: ignore[arg-type]
        ))  # fmt: skip

    name = launches[0].name if launches else kernel
    if _MATMUL_NAME.search(name):
        tensor = m["tensor_instructions"]
        util = m["tensor_pipe_utilization"]
        tensor_share: float | None = None
        if tensor is not None and instructions:
            tensor_share = float(tensor.value) / instructions
        if tensor_share is not None and tensor_share < 0.005:
            findings.append(Finding(
                "no-tensor-cores", "Matrix kernel without tensor-core work",
                f"tensor-pipe instructions are {tensor_share * 100:.2f}% of all instructions",
                "use tensor cores: WMMA/wgmma, cuBLAS or CUTLASS with a tensor-core data type",
                (_ev(tensor), _ev(m["instructions_executed"])), 80,  # type: ignore[arg-type]
            ))  # fmt: skip
        elif tensor_share is None and util is not None and (_num(util) or 0.0) < 1:
            findings.append(Finding(
                "no-tensor-cores", "Matrix kernel without tensor-core work",
                f"the tensor pipe is busy {_num(util):.2f}% of active cycles",
                "use tensor cores: WMMA/wgmma, cuBLAS or CUTLASS with a tensor-core data type",
                (_ev(util),), 80,
            ))  # fmt: skip
        elif tensor_share is None and util is None:
            missing.append(
                "tensor cores: needs smsp__inst_executed_pipe_tensor_op_hmma.sum, ... or "
                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
            )

    dram = _num(m["dram_throughput"])
    if stall is not None and stall.value == "long_scoreboard" and dram is not None and dram > 80:
        findings.append(Finding(
            "dram-bound", "Bound by DRAM bandwidth",
            f"DRAM throughput {dram:.0f}% of peak while long_scoreboard dominates",
            "move fewer bytes: fuse kernels, use smaller data types, reuse data from L2",
            (_ev(m["dram_throughput"]), _ev(stall)), 55,  # type: ignore[arg-type]
        ))  # fmt: skip

    findings.sort(key=lambda f: -f.weight)
    return Diagnosis(kernel, name, len(launches), quad, tuple(findings), tuple(missing))


def _atomic_evidence(
    m: dict[str, Measured | None], launches: Sequence[Launch]
) -> tuple[float, tuple[Evidence, ...]] | None:
    """Global atomic/reduction requests per warp, from L2 or L1 counters."""
    warps = _warps(launches)
    for name in ("l2_atomic_requests", "global_atomic_requests"):
        got = m[name]
        value = _num(got)
        if got is not None and value is not None and warps:
            return value / warps, (_ev(got),)
    return None


def _coalescing(op: str, label: str, m: dict[str, Measured | None]) -> Finding | None:
    """Bytes used per fetched sector say whether an access is coalesced whatever its width;
    sectors per request alone cannot tell 16-byte vector loads (16 sectors, ideal) from a
    scattered 4-byte gather (also 16)."""
    efficiency = m[f"global_{'load' if op == 'ld' else 'store'}_efficiency"]
    spr = m[f"sectors_per_request_{op}"]
    spr_value = _num(spr)
    cites = tuple(_ev(x) for x in (efficiency, spr) if x is not None)
    lever = (
        "coalesce: consecutive threads should touch consecutive addresses; check the "
        "alignment of the base address"
    )
    used = _num(efficiency)
    if used is not None:
        if 0 < used < 80:
            return Finding(
                f"uncoalesced-{label}", f"Uncoalesced global {label}",
                f"{used:.0f}% of the bytes in the fetched sectors are used"
                + (f" ({spr_value:.1f} sectors per request)" if spr_value is not None else ""),
                lever, cites, 85 if used < 50 else 60,
            )  # fmt: skip
        return None
    if spr_value is not None and spr_value > 4.5:
        return Finding(
            f"uncoalesced-{label}", f"Possibly uncoalesced global {label}",
            f"{spr_value:.1f} sectors per request: 4 is ideal for 4-byte accesses, 8 and 16 for "
            "8- and 16-byte vectors, 32 is one sector per lane (the capture has no "
            "bytes-per-sector counter to tell which)",
            lever, cites, 85 if spr_value > 16 else 30,
        )  # fmt: skip
    return None


def _occupancy(limiter: Measured, m: dict[str, Measured | None]) -> list[Finding]:
    """A limiter matters when it keeps theoretical occupancy under 100% (seed 000: the
    binding constraint), and more so when achieved occupancy is low (< 60%)."""
    theoretical, achieved = _num(m["theoretical_occupancy"]), _num(m["achieved_occupancy"])
    if theoretical is not None and theoretical >= 100:
        return []
    low = achieved is not None and achieved < 60
    cites = [_ev(limiter)] + [
        _ev(x) for x in (m["theoretical_occupancy"], m["achieved_occupancy"]) if x
    ]
    occupancy = "".join((
        f"; theoretical occupancy {theoretical:.0f}%" if theoretical is not None else "",
        f", achieved {achieved:.0f}%" if achieved is not None else "",
    ))  # fmt: skip
    out = []
    parts = str(limiter.value).split("+")
    regs = m["registers_per_thread"]
    if "registers" in parts and regs is not None:
        out.append(Finding(
            "occupancy-registers", "Occupancy limited by registers",
            f"{_num(regs):.0f} registers per thread bound the blocks per SM{occupancy}",
            "__launch_bounds__(threads, min_blocks) or fewer live values; check for spills",
            (*cites, _ev(regs)), 70 if low else 55,
        ))  # fmt: skip
    smem = m["shared_memory_per_block"]
    if "shared_mem" in parts:
        amount = f"{_num(smem):,.0f} bytes of shared memory per block" if smem else "shared memory"
        out.append(Finding(
            "occupancy-shared-memory", "Occupancy limited by shared memory",
            f"{amount} bound the blocks per SM{occupancy}",
            "smaller tiles, or stream through shared memory instead of keeping whole blocks",
            (*cites, *((_ev(smem),) if smem else ())), 70 if low else 55,
        ))  # fmt: skip
    return out
