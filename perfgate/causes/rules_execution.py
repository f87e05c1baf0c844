"""Diagnosis rules of how the SM executes: shared-memory bank conflicts, warp divergence,
latency hiding lost (software pipelining) and tensor cores no longer used. Each rule is a
pure function from a KernelDelta to a RootCause or None."""

from __future__ import annotations

import math
import re

from perfgate.causes.facts import fmt, num, share_rise, single, slower, times, within
from perfgate.causes.model import CauseKind, KernelDelta, RootCause
from perfgate.causes.rootcause import root_cause

_MATMUL_NAME = re.compile(
    r"gemm|matmul|mma|conv|attention|attn|sdpa|flash|tensor_?core|nvjet|cutlass|cublas", re.I
)
_SHARED_PER = ("instructions_executed", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")


def bank_conflicts(delta: KernelDelta) -> RootCause | None:
    """Conflicts per warp instruction (else per shared-memory wavefront): an n-way conflict
    replays the access n times."""
    per = next((m for m in _SHARED_PER if num(delta.current, m)), None)
    cites = (
        "shared_bank_conflicts",
        "stall.mio_throttle",
        "stall.short_scoreboard",
        "l1tex_throughput",
        *((per,) if per else ()),
    )
    ca = num(delta.current, "shared_bank_conflicts")
    if ca is None:
        return None
    rate_a = ca / (num(delta.current, per) or 1.0) if per else None
    if single(delta):
        if rate_a is None or rate_a <= 0.01:
            return None
        unit_name = "warp instruction" if per == _SHARED_PER[0] else "wavefront"
        return root_cause(
            "bank-conflicts",
            CauseKind.REGRESSION,
            "Shared-memory bank conflicts",
            f"{fmt(ca)} conflicts, {rate_a:.2f} per {unit_name}",
            delta,
            cites,
            80,
        )
    cb = num(delta.baseline, "shared_bank_conflicts")
    if cb is None:
        return None
    pb = num(delta.baseline, per) if per else None
    rate_b = cb / pb if per and pb else None
    if rate_a is not None and rate_b is not None:
        fired = rate_a > 0.01 and rate_a > 2 * rate_b
        how = f"{rate_b:.3f} -> {rate_a:.3f} per {per}"
    else:  # no normaliser on both sides: a count far beyond the catalog's noise floor
        fired = ca > 2 * cb and ca - cb > 65536
        how = "count only"
    if not fired:
        return None
    # A few conflicts per hundred instructions replay little: below one per ten instructions
    # the conflicts are a symptom to list, not the lever to lead with (seen: a Triton matmul
    # that lost pipelining went 0.001 -> 0.022 per instruction while long_scoreboard x11).
    weight = 88.0 if rate_a is None or rate_a >= 0.1 else 60.0
    return root_cause(
        "bank-conflicts",
        CauseKind.REGRESSION,
        "Shared-memory bank conflicts",
        f"bank conflicts {fmt(cb)} -> {fmt(ca)} ({how})",
        delta,
        cites,
        weight + min(8.0, math.log2(max(ca, 1) / max(cb, 1))),
    )


def divergence(delta: KernelDelta) -> RootCause | None:
    """Fewer active threads per warp instruction: branches split warps, and both paths
    execute (instructions rise with it)."""
    a = num(delta.current, "warp_execution_efficiency")
    cites = ("warp_execution_efficiency", "instructions_executed", "stall.branch_resolving")
    if a is None:
        return None
    if single(delta):
        if a >= 80:
            return None
        return root_cause(
            "divergence",
            CauseKind.REGRESSION,
            "Warp divergence",
            f"{a:.0f}% of a warp's threads are active per instruction",
            delta,
            cites,
            65,
        )
    b = num(delta.baseline, "warp_execution_efficiency")
    if b is None or not (a < b - 5 and a < 90):
        return None
    return root_cause(
        "divergence",
        CauseKind.REGRESSION,
        "Warps diverge",
        f"active threads per warp instruction {b:.0f}% -> {a:.0f}%"
        + (
            f"; instructions {times(delta.ratio('instructions_executed'))}"
            if delta.ratio("instructions_executed")
            else ""
        ),
        delta,
        cites,
        85 + (b - a) / 10,
    )


def _same_work(delta: KernelDelta) -> bool:
    # Fewer instructions are allowed: a shallower pipeline drops its prologue and
    # multi-buffer bookkeeping (seen: a Triton matmul at num_stages 1 ran 26% fewer).
    return (
        within(delta.ratio("instructions_executed"), 0.5, 1.25)
        and within(delta.ratio("global_load_sectors"), 0.85, 1.2)
        and within(delta.ratio("dram_bytes"), 0.8, 1.25)
        and within(delta.ratio("global_load_efficiency"), 0.95, 10.0)
        and within(delta.ratio("sectors_per_request_ld"), 0.0, 1.2)
    )


def lost_pipelining(delta: KernelDelta) -> RootCause | None:
    """The same work, the same (or more) theoretical occupancy, and warps now wait longer
    for memory: fewer loads in flight. Stage buffers shrink shared memory per block and the
    tensor pipe idles between tiles (fewer stages leave fewer loads in flight; occupancy is
    not the fix when every warp waits on memory)."""
    if single(delta) or not slower(delta) or not _same_work(delta):
        return None
    tb, ta = (
        num(delta.baseline, "theoretical_occupancy"),
        num(delta.current, "theoretical_occupancy"),
    )
    if tb is not None and ta is not None and ta < tb - 0.5:
        return None  # an occupancy rule's case
    smem = delta.ratio("shared_memory_per_block")
    tensor = delta.ratio("tensor_pipe_utilization")
    signals = {
        "long_scoreboard share": share_rise(delta, "long_scoreboard") >= 5,
        "long_scoreboard cycles per instruction": (delta.ratio("stall_cpi.long_scoreboard") or 0)
        >= 1.25,
        "wait share": share_rise(delta, "wait") >= 5,
        "wait cycles per instruction": (delta.ratio("stall_cpi.wait") or 0) >= 1.25,
        "shared memory per block": smem is not None and smem <= 0.75,
        "tensor pipe utilization": tensor is not None
        and tensor <= 0.8
        and (num(delta.baseline, "tensor_pipe_utilization") or 0) >= 5,
    }
    fired = [k for k, v in signals.items() if v]
    latency = any(k.startswith(("long_scoreboard", "wait")) for k in fired)
    if not (latency or len(fired) >= 2):
        return None
    detail = (
        f"at the same work, {', '.join(fired)} moved"
        + (f"; shared memory per block {times(smem)}" if smem else "")
        + (f"; tensor pipe {times(tensor)}" if tensor else "")
        + "; theoretical occupancy did not fall, so occupancy is not the lever"
    )
    return root_cause(
        "lost-pipelining",
        CauseKind.REGRESSION,
        "Lost latency hiding (software pipelining)",
        detail,
        delta,
        (
            "shared_memory_per_block",
            "tensor_pipe_utilization",
            "stall.long_scoreboard",
            "stall.wait",
            "stall_cpi.long_scoreboard",
            "stall_cpi.wait",
            "registers_per_thread",
            "occupancy_limiter",
            "theoretical_occupancy",
        ),
        78 + 3 * len(fired),
    )


def tensor_cores_lost(delta: KernelDelta) -> RootCause | None:
    """Tensor-pipe instructions to about zero: the math moved to the FMA pipe (a dtype, a
    shape, or a code path without WMMA/wgmma)."""
    cites = (
        "tensor_instructions",
        "tensor_pipe_utilization",
        "instructions_executed",
        "sm_throughput",
    )
    ti_a, util_a = (
        num(delta.current, "tensor_instructions"),
        num(delta.current, "tensor_pipe_utilization"),
    )
    if single(delta):
        if not _MATMUL_NAME.search(delta.current.name):
            return None
        instr = num(delta.current, "instructions_executed")
        if ti_a is not None and instr:
            low, said = ti_a / instr < 0.005, f"{ti_a / instr * 100:.2f}% of all instructions"
        elif util_a is not None:
            low, said = util_a < 1, f"the tensor pipe is busy {util_a:.2f}% of active cycles"
        else:
            return None
        if not low:
            return None
        return root_cause(
            "no-tensor-cores",
            CauseKind.REGRESSION,
            "Matrix kernel without tensor-core work",
            f"tensor-pipe instructions are {said}",
            delta,
            cites,
            80,
        )
    ti_b = num(delta.baseline, "tensor_instructions")
    if ti_b is not None and ti_a is not None:
        if ti_b <= 0 or ti_a > 0.2 * ti_b:
            return None
        detail = f"tensor-pipe instructions {fmt(ti_b)} -> {fmt(ti_a)}"
    else:
        util_b = num(delta.baseline, "tensor_pipe_utilization")
        if util_b is None or util_a is None or util_b < 3 or util_a > 0.1 * util_b:
            return None
        detail = f"tensor pipe busy {util_b:.2f}% -> {util_a:.2f}% of active cycles"
    r = delta.ratio("instructions_executed")
    return root_cause(
        "no-tensor-cores",
        CauseKind.REGRESSION,
        "Tensor cores no longer used",
        detail
        + (f"; instructions {times(r)} (the math moved to the FMA pipe)" if r and r > 1.5 else ""),
        delta,
        cites,
        98,
    )
