"""The rules of differential diagnosis: each a small pure function from a KernelDelta to the
RootCause it recognises, or None. A rule reads what moved between baseline and current and
asks whether the move fits one mechanism; with an empty baseline (`perfgate explain`) the
rules that can judge one state judge the current side alone.

Scores rank causes (higher first): a specific mechanism with its own counter moving
(coalescing, atomics, tensor cores) outranks one inferred from consequences (more work,
a stall share that moved), so the lever that comes first is the one the counters prove.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from perfgate.causes.facts import (
    ev,
    faster,
    fmt,
    label,
    launches,
    num,
    share,
    share_rise,
    single,
    slower,
    times,
    within,
)
from perfgate.causes.levers import IMPROVED_LEVERS, LEVERS, STALLS
from perfgate.causes.model import CauseKind, Evidence, KernelDelta, RootCause
from perfgate.ingest.launches import RULE_PREFIX
from perfgate.judge.comparison import State

_MATMUL_NAME = re.compile(
    r"gemm|matmul|mma|conv|attention|attn|sdpa|flash|tensor_?core|nvjet|cutlass|cublas", re.I
)
_OP = {"ld": ("load", "loads"), "st": ("store", "stores")}


def _cause(
    mechanism: str,
    kind: CauseKind,
    title: str,
    detail: str,
    delta: KernelDelta,
    evidence: tuple[str, ...],
    score: float,
) -> RootCause:
    # The lever and the consequences are filled in by the registry (family, trade-off).
    return RootCause(
        mechanism,
        kind,
        title,
        detail,
        LEVERS.get(mechanism, ""),
        ev(delta, *evidence),
        evidence,
        score,
    )


# -- memory access ---------------------------------------------------------------------------


def _uncoalesced(op: str, delta: KernelDelta) -> RootCause | None:
    """Bytes used per fetched sector fell: the same accesses now touch more sectors. Sectors
    per request alone cannot tell a float4 load (16, ideal) from a scattered gather (also
    16), so it only speaks when the bytes-per-sector counter is absent and the instruction
    count did not fall (a vectorised rewrite issues fewer instructions)."""
    word, plural = _OP[op]
    eff_name, spr_name = f"global_{word}_efficiency", f"sectors_per_request_{op}"
    cites = (eff_name, spr_name, f"global_{word}_sectors", "dram_bytes", "l1tex_throughput")
    mechanism = f"uncoalesced-{plural}"
    eff_b, eff_a = num(delta.baseline, eff_name), num(delta.current, eff_name)
    spr_b, spr_a = num(delta.baseline, spr_name), num(delta.current, spr_name)
    if single(delta):
        if eff_a is not None:
            if 0 < eff_a < 80:
                return _cause(
                    mechanism,
                    CauseKind.REGRESSION,
                    f"Uncoalesced global {plural}",
                    f"{eff_a:.0f}% of the bytes in the fetched sectors are used"
                    + (f" ({spr_a:.1f} sectors per request)" if spr_a else ""),
                    delta,
                    cites,
                    85 if eff_a < 50 else 60,
                )
            return None
        if spr_a is not None and spr_a > 4.5:
            return _cause(
                mechanism,
                CauseKind.REGRESSION,
                f"Possibly uncoalesced global {plural}",
                f"{spr_a:.1f} sectors per request: 4 is ideal for 4-byte accesses, 8 "
                "and 16 for 8- and 16-byte vectors, 32 is one sector per lane",
                delta,
                cites,
                85 if spr_a > 16 else 30,
            )
        return None
    if eff_b is not None and eff_a is not None:
        if not (eff_a < 80 and eff_a < eff_b * 0.8):
            return None
        if spr_b is not None and spr_a is not None and spr_a < spr_b:
            return None  # fewer sectors per request: narrower accesses, not scattered ones
        detail = f"bytes used per fetched sector fell from {eff_b:.0f}% to {eff_a:.0f}%" + (
            f"; sectors per request {spr_b:.1f} -> {spr_a:.1f}"
            if spr_b is not None and spr_a is not None
            else ""
        )
        return _cause(
            mechanism,
            CauseKind.REGRESSION,
            f"Global {plural} became uncoalesced",
            detail,
            delta,
            cites,
            90 + min(10.0, eff_b / max(eff_a, 1.0)),
        )
    if spr_b is None or spr_a is None or not (spr_a > 4.5 and spr_a >= spr_b * 1.5):
        return None
    sectors = delta.ratio(f"global_{word}_sectors")
    instructions = delta.ratio("instructions_executed")
    if (sectors is not None and sectors < 1.2) or (
        sectors is None and instructions is not None and instructions < 0.9
    ):
        return None  # the same sectors in fewer, wider requests: vectorised-access's case
    return _cause(
        mechanism,
        CauseKind.REGRESSION,
        f"Global {plural} became uncoalesced",
        f"sectors per request {spr_b:.1f} -> {spr_a:.1f}"
        + (f", sectors {times(sectors)}" if sectors else "")
        + " at the same or more instructions",
        delta,
        cites,
        88,
    )


def uncoalesced_loads(delta: KernelDelta) -> RootCause | None:
    return _uncoalesced("ld", delta)


def uncoalesced_stores(delta: KernelDelta) -> RootCause | None:
    return _uncoalesced("st", delta)


def vectorized_access(delta: KernelDelta) -> RootCause | None:
    """Sectors per request rose while bytes used per sector held (or the sector count held,
    or fewer instructions do the work): wider vector accesses, not scattered ones."""
    for op, (word, plural) in _OP.items():
        spr = delta.ratio(f"sectors_per_request_{op}")
        if spr is None or spr < 1.5:
            continue
        eff_b = num(delta.baseline, f"global_{word}_efficiency")
        eff_a = num(delta.current, f"global_{word}_efficiency")
        sectors = delta.ratio(f"global_{word}_sectors")
        instructions = delta.ratio("instructions_executed")
        if eff_b is not None and eff_a is not None:
            ok = eff_a >= eff_b * 0.95
        elif sectors is not None:
            ok = sectors < 1.2
        else:
            ok = instructions is not None and instructions < 0.9
        if op == "st" and _stored_wider(delta) is not None:
            continue  # wider elements, not wider vectors: wider_stores names it
        if ok:
            kind = CauseKind.IMPROVEMENT if faster(delta) else CauseKind.CHANGE
            return _cause(
                "vectorized-access",
                kind,
                f"Wider vector {plural}",
                f"sectors per request {times(spr)} with the bytes used per sector "
                "unchanged: each request now moves more data (vector accesses)",
                delta,
                (
                    f"sectors_per_request_{op}",
                    f"global_{word}_efficiency",
                    f"global_{word}_sectors",
                    "instructions_executed",
                ),
                40,
            )
    return None


def _warps(delta: KernelDelta) -> float | None:
    side = delta.current
    if side.grid is None or side.block is None:
        return None
    return math.prod(side.grid) * math.ceil(math.prod(side.block) / 32)


def atomic_contention(delta: KernelDelta) -> RootCause | None:
    """Atomics serialise on one L2 line: requests up, and warps wait in drain (at exit, for
    the writes) or lg_throttle (the LSU queue full) while DRAM idles."""
    name = next(
        (
            m
            for m in ("l2_atomic_requests", "global_atomic_requests")
            if num(delta.current, m) is not None
        ),
        None,
    )
    if name is None:
        return None
    after = num(delta.current, name) or 0.0
    stalls = ("drain", "lg_throttle")
    cites = (
        name,
        "stall.drain",
        "stall.lg_throttle",
        "stall_cpi.drain",
        "stall_cpi.lg_throttle",
        "dominant_stall",
        "l2_hit_rate",
        "instructions_executed",
    )
    if single(delta):
        dominant = label(delta.current, "dominant_stall")
        warps = _warps(delta)
        if dominant in stalls and warps and after / warps >= 1.0:
            return _cause(
                "atomic-contention",
                CauseKind.REGRESSION,
                "Atomic contention",
                f"{dominant} is the dominant stall ({share(delta.current, dominant) or 0:.0f}% of "
                f"stalls) with {after / warps:.1f} atomic "
                "requests per warp",
                delta,
                cites,
                90,
            )
        return None
    r = delta.ratio(name)
    before = num(delta.baseline, name) or 0.0
    grew = (r is not None and r >= 2.0) or (before == 0 and after > 0)
    waits = max(share_rise(delta, s) for s in stalls)
    cpi = max((delta.ratio(f"stall_cpi.{s}") or 0.0) for s in stalls)
    if not grew or not (waits >= 5 or cpi >= 1.5 or slower(delta)):
        return None
    return _cause(
        "atomic-contention",
        CauseKind.REGRESSION,
        "Atomic contention",
        f"atomic requests {fmt(before)} -> {fmt(after)} ({times(r)}); drain and "
        f"lg_throttle gained {waits:.0f} points of the stalls: writes to few "
        "addresses serialise in L2",
        delta,
        cites,
        97,
    )


# -- registers, local memory, occupancy ------------------------------------------------------

_OCC = ("theoretical_occupancy", "occupancy_limiter", "achieved_occupancy")


def _limited_by(delta: KernelDelta, resource: str) -> bool | None:
    lim = label(delta.current, "occupancy_limiter")
    return None if lim is None else resource in lim.split("+")


def _occupancy_fell(delta: KernelDelta) -> tuple[float, float] | None:
    b, a = num(delta.baseline, "theoretical_occupancy"), num(delta.current, "theoretical_occupancy")
    if b is not None and a is not None:
        return (b, a) if a < b - 0.5 else None
    lb = label(delta.baseline, "occupancy_limiter")
    la = label(delta.current, "occupancy_limiter")
    # Without theoretical occupancy, a limiter that changed is the only sign left.
    return (math.nan, math.nan) if lb is not None and la is not None and lb != la else None


def _single_occupancy(delta: KernelDelta, resource: str, metric: str) -> RootCause | None:
    """Seed 000 section 9: low occupancy (< 60%) with this resource as the limiter."""
    theo = num(delta.current, "theoretical_occupancy")
    if not _limited_by(delta, resource) or (theo is not None and theo >= 100):
        return None
    ach = num(delta.current, "achieved_occupancy")
    what = "registers per thread" if resource == "registers" else "bytes of shared memory per block"
    mechanism = "occupancy-registers" if resource == "registers" else "occupancy-shared-memory"
    title = f"Occupancy limited by {'registers' if resource == 'registers' else 'shared memory'}"
    detail = (
        f"{fmt(num(delta.current, metric))} {what} bound the blocks per SM"
        + (f"; theoretical occupancy {theo:.0f}%" if theo is not None else "")
        + (f", achieved {ach:.0f}%" if ach is not None else "")
    )
    low = ach is not None and ach < 60
    return _cause(
        mechanism, CauseKind.REGRESSION, title, detail, delta, (metric, *_OCC), 70 if low else 55
    )


def _local_fell(delta: KernelDelta) -> bool:
    b, a = num(delta.baseline, "local_memory_sectors"), num(delta.current, "local_memory_sectors")
    return b is not None and a is not None and b > 0 and a <= b * 0.5


def occupancy_registers(delta: KernelDelta) -> RootCause | None:
    """More registers per thread, fewer resident blocks: theoretical occupancy falls with
    registers as the limiter. Spills that went away are spills-removed's case."""
    if single(delta):
        return _single_occupancy(delta, "registers", "registers_per_thread")
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    fell = _occupancy_fell(delta)
    if (
        rb is None
        or ra is None
        or ra <= rb
        or fell is None
        or _limited_by(delta, "registers") is False
    ):
        return None
    if _local_fell(delta):
        return None
    b, a = fell
    detail = f"registers per thread {rb:.0f} -> {ra:.0f}" + (
        f"; theoretical occupancy {b:.0f}% -> {a:.0f}% (registers now the limiter)"
        if not math.isnan(b)
        else "; registers now limit occupancy"
    )
    score = 80 + (min(10.0, (b - a) / 5) if not math.isnan(b) else 0)
    return _cause(
        "occupancy-registers",
        CauseKind.REGRESSION,
        "Register pressure cut occupancy",
        detail,
        delta,
        ("registers_per_thread", *_OCC),
        score,
    )


def occupancy_shared_memory(delta: KernelDelta) -> RootCause | None:
    if single(delta):
        return _single_occupancy(delta, "shared_mem", "shared_memory_per_block")
    sb = num(delta.baseline, "shared_memory_per_block")
    sa = num(delta.current, "shared_memory_per_block")
    fell = _occupancy_fell(delta)
    if sb is None or sa is None or sa <= sb or fell is None:
        return None
    if _limited_by(delta, "shared_mem") is False:
        return None
    b, a = fell
    detail = f"shared memory per block {fmt(sb)} -> {fmt(sa)} bytes" + (
        f"; theoretical occupancy {b:.0f}% -> {a:.0f}% (shared memory now the limiter)"
        if not math.isnan(b)
        else "; shared memory now limits occupancy"
    )
    score = 80 + (min(10.0, (b - a) / 5) if not math.isnan(b) else 0)
    return _cause(
        "occupancy-shared-memory",
        CauseKind.REGRESSION,
        "Shared memory per block cut occupancy",
        detail,
        delta,
        ("shared_memory_per_block", *_OCC),
        score,
    )


def occupancy_limiter(delta: KernelDelta) -> RootCause | None:
    """The limiter changed for another reason (warps, blocks, barriers), or changed without
    costing occupancy (then only a change to note, so the categorical gate is explained)."""
    lb, la = label(delta.baseline, "occupancy_limiter"), label(delta.current, "occupancy_limiter")
    if lb is None or la is None or lb == la:
        return None
    fell = _occupancy_fell(delta)
    theo_known = num(delta.current, "theoretical_occupancy") is not None
    cites = ("occupancy_limiter", "theoretical_occupancy", "achieved_occupancy")
    if fell is not None and theo_known:
        if set(la.split("+")) & {"registers", "shared_mem"}:
            return None  # occupancy-registers / occupancy-shared-memory say it better
        return _cause(
            "occupancy-limiter",
            CauseKind.REGRESSION,
            f"Occupancy now limited by {la}",
            f"the limiter changed from {lb} to {la} and theoretical occupancy fell "
            f"{fell[0]:.0f}% -> {fell[1]:.0f}%",
            delta,
            cites,
            70,
        )
    return _cause(
        "occupancy-limiter",
        CauseKind.CHANGE,
        "Occupancy limiter changed",
        f"the limiter changed from {lb} to {la} without lowering theoretical occupancy",
        delta,
        cites,
        10,
    )


def local_memory(delta: KernelDelta) -> RootCause | None:
    """Local-memory sectors appeared: registers spill (registers fell or sit at a cap), or an
    array is indexed at run time. Both show as long_scoreboard and lg_throttle:
    local memory goes through the LSU."""
    a = num(delta.current, "local_memory_sectors")
    cites = (
        "local_memory_sectors",
        "registers_per_thread",
        "instructions_executed",
        "dram_bytes",
        "l2_hit_rate",
        "stall.long_scoreboard",
        "stall.lg_throttle",
        "stall_cpi.long_scoreboard",
    )
    if a is None:
        return None
    if single(delta):
        if a <= 0:
            return None
        return _cause(
            "local-memory",
            CauseKind.REGRESSION,
            "Local-memory traffic",
            f"{fmt(a)} local-memory sectors: registers spill, or an array is indexed at run time",
            delta,
            cites,
            75,
        )
    b = num(delta.baseline, "local_memory_sectors")
    if b is None or not (a > b * 1.5 and a - b > 1024):
        return None
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    spills = rb is not None and ra is not None and ra < rb
    title = "Registers now spill to local memory" if spills else "Local-memory traffic appeared"
    why = (
        f"registers per thread {rb:.0f} -> {ra:.0f}: the compiler spills"
        if spills
        else "registers unchanged: an array indexed at run time, or new spills"
    )
    return _cause(
        "local-memory",
        CauseKind.REGRESSION,
        title,
        f"local-memory sectors {fmt(b)} -> {fmt(a)}; {why}",
        delta,
        cites,
        92,
    )


def spills_removed(delta: KernelDelta) -> RootCause | None:
    """Local memory gone, more registers: the compiler stopped spilling. Occupancy may fall
    and registers_per_thread regress, but the kernel is the better for it when it got faster:
    an improvement or a trade-off, never a reason to cut registers again."""
    if single(delta) or not _local_fell(delta):
        return None
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    if rb is None or ra is None or ra <= rb:
        return None
    b, a = num(delta.baseline, "local_memory_sectors"), num(delta.current, "local_memory_sectors")
    gated = any(c.state is State.REGRESSED for c in delta.comparisons)
    kind = CauseKind.TRADE_OFF if gated or not faster(delta) else CauseKind.IMPROVEMENT
    return _cause(
        "spills-removed",
        kind,
        "Register spills removed",
        f"local-memory sectors {fmt(b)} -> {fmt(a)} with registers per thread "
        f"{rb:.0f} -> {ra:.0f}" + ("; the kernel got faster" if faster(delta) else ""),
        delta,
        (
            "local_memory_sectors",
            "registers_per_thread",
            *_OCC,
            "instructions_executed",
            "dram_bytes",
        ),
        96,
    )


# -- shared memory, divergence, pipelining, tensor cores -------------------------------------

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
        return _cause(
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
    return _cause(
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
        return _cause(
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
    return _cause(
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
    return _cause(
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
        return _cause(
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
    return _cause(
        "no-tensor-cores",
        CauseKind.REGRESSION,
        "Tensor cores no longer used",
        detail
        + (f"; instructions {times(r)} (the math moved to the FMA pipe)" if r and r > 1.5 else ""),
        delta,
        cites,
        98,
    )


# -- work and launches -----------------------------------------------------------------------

_WORK = (
    "instructions_executed",
    "dram_bytes",
    "global_load_sectors",
    "global_store_sectors",
    "l2_sectors",
)


def _efficiency_held(delta: KernelDelta) -> bool:
    return (
        within(delta.ratio("warp_execution_efficiency"), 0.97, 10.0)
        and within(delta.ratio("global_load_efficiency"), 0.95, 10.0)
        and within(delta.ratio("global_store_efficiency"), 0.95, 10.0)
        and within(delta.ratio("sectors_per_request_ld"), 0.0, 1.1)
        and within(delta.ratio("l2_atomic_requests"), 0.0, 1.5)
        and within(delta.ratio("tensor_instructions"), 0.5, 100.0)
        and (num(delta.current, "local_memory_sectors") or 0)
        <= 1.5 * (num(delta.baseline, "local_memory_sectors") or 0) + 1024
    )


def _work_moved(delta: KernelDelta, up: bool) -> list[tuple[str, float]]:
    """Work counters that moved by a fifth, or by less where the gate itself judged the move
    beyond the counter's noise (a +1.5% instruction regression needs its cause named too)."""
    judged = State.REGRESSED if up else State.IMPROVED
    moved = []
    for m in _WORK:
        r = delta.ratio(m)
        if r is None:
            continue
        beyond = any(c.metric == m and c.state is judged for c in delta.comparisons)
        if (r >= 1.2 if up else r <= 0.8) or (beyond and (r > 1 if up else r < 1)):
            moved.append((m, r))
    return moved


def _work_cause(
    delta: KernelDelta, up: bool, key: str, kind: CauseKind, title: str, tail: str, score: float
) -> RootCause | None:
    moved = _work_moved(delta, up=up)
    if not moved:
        return None
    what = ", ".join(f"{m} {times(r)}" for m, r in moved)
    return _cause(key, kind, title, f"{what}{tail}", delta, tuple(m for m, _ in moved), score)


def more_work(delta: KernelDelta) -> RootCause | None:
    """More instructions or bytes at the same efficiency: the kernel does more, not worse."""
    if single(delta) or not _efficiency_held(delta) or _stored_wider(delta) is not None:
        return None  # the same elements written in a wider type are not more of them
    return _work_cause(
        delta, True, "more-work", CauseKind.REGRESSION, "More work",
        " at the same access and warp efficiency", 60,
    )  # fmt: skip


def less_work(delta: KernelDelta) -> RootCause | None:
    """Fewer bytes or instructions and faster: a rate such as DRAM % may fall with it."""
    if single(delta) or not faster(delta):
        return None
    return _work_cause(
        delta, False, "less-work", CauseKind.IMPROVEMENT, "Less work",
        "; the kernel got faster", 40,
    )  # fmt: skip


def _stored_wider(delta: KernelDelta) -> float | None:
    """The bytes stored over the bytes stored before, when the kernel writes the same number of
    elements in a type twice or four times as wide: stores x2 or x4 (bf16/fp16 -> fp32 output,
    fp32 -> fp64, int8 -> fp32) at the same store requests while its loads held. Bytes are
    sectors times the bytes used per sector: a bf16 row of 1000 fills its last sector partly,
    so the sectors alone rise by less than the type's width (x1.60 for x2.00 on a softmax)."""
    stored = delta.ratio("global_store_sectors")
    loaded = delta.ratio("global_load_sectors")
    if single(delta) or stored is None or loaded is None or not 0.9 <= loaded <= 1.1:
        return None
    used = delta.ratio("global_store_efficiency")
    grown = stored * (used if used is not None else 1.0)
    # The same store requests (sectors / sectors per request), each moving more sectors: wider
    # elements. Fuller sectors alone (a top-k writing k=4 values where it wrote 2 into the same
    # sectors) or more requests are more elements. Instructions are not asked: another
    # autotuned config (8 warps for 4) runs more of them for the same elements (x1.30 seen).
    per_request = delta.ratio("sectors_per_request_st")
    if stored < 1.3 or per_request is None or not 0.9 <= stored / per_request <= 1.1:
        return None
    return grown if any(0.9 * w <= grown <= 1.1 * w for w in (2.0, 4.0)) else None


def wider_stores(delta: KernelDelta) -> RootCause | None:
    """The output written in a wider type: store bytes x2 (or x4) with the loads unchanged. A
    kernel that reads bf16 and writes fp32 moves the same elements, each twice the bytes; its
    DRAM and L2 traffic grow with the stores alone."""
    grown = _stored_wider(delta)
    if grown is None:
        return None
    return _cause(
        "wider-stores",
        CauseKind.REGRESSION,
        "Output written wider",
        f"store bytes {times(grown)} with loads unchanged (e.g. bf16 -> fp32 output): the same "
        "elements stored in a wider type",
        delta,
        (
            "global_store_sectors",
            "global_store_efficiency",
            "sectors_per_request_st",
            "global_load_sectors",
            "dram_bytes",
            "l2_sectors",
        ),
        85,
    )


def launch_count(delta: KernelDelta) -> RootCause | None:
    b, a = launches(delta.baseline), launches(delta.current)
    if single(delta) or b is None or a is None or a == b:
        return None
    more = a > b
    cause = _cause(
        "launch-count",
        CauseKind.REGRESSION if more else CauseKind.IMPROVEMENT,
        "Launched more often" if more else "Launched less often",
        f"{b:g} -> {a:g} launches per captured run"
        + (": a redundant launch, total time grows with it" if more else ""),
        delta,
        ("launches", "total_time"),
        75 if more else 30,
    )
    return cause if more else _with_lever(cause, IMPROVED_LEVERS["launch-count"])


def launch_shape(delta: KernelDelta) -> RootCause | None:
    b, a = delta.baseline, delta.current
    if single(delta) or None in (b.grid, a.grid, b.block, a.block):
        return None
    if b.grid == a.grid and b.block == a.block:
        return None
    parts = [
        f"{w} {'x'.join(map(str, x))} -> {'x'.join(map(str, y))}"
        for w, x, y in (("grid", b.grid, a.grid), ("block", b.block, a.block))
        if x != y and x is not None and y is not None
    ]
    return _cause(
        "launch-shape",
        CauseKind.CHANGE,
        "Launch configuration changed",
        "; ".join(parts),
        delta,
        ("theoretical_occupancy", "instructions_executed"),
        72 if slower(delta) else 25,
    )


# -- stall fingerprints (the fallback) -------------------------------------------------------


def stall_shift(delta: KernelDelta) -> RootCause | None:
    """A stall reason gained share with no counter naming the mechanism: say what the
    reason means (ncu's own description of it) and its lever. Ranked last: it is a symptom."""
    if single(delta):
        top = label(delta.current, "dominant_stall")
        if top is None or top in ("not_selected", "selected"):
            return None
        pct = share(delta.current, top) or 0.0
        meaning, lever = STALLS.get(top, ("", ""))
        cause = _cause(
            f"stall-{top}",
            CauseKind.REGRESSION,
            f"Dominant stall: {top}",
            f"{pct:.0f}% of stalls" + (f": {meaning}" if meaning else ""),
            delta,
            ("dominant_stall", f"stall.{top}"),
            50 if pct >= 20 else 20,
        )
        return _with_lever(cause, lever)
    reasons = set(delta.current.shares or {}) | {
        k.removeprefix("stall.") for k in delta.current.values if k.startswith("stall.")
    }
    rises = {r: share_rise(delta, r) for r in reasons if r not in ("not_selected", "selected")}
    if not rises or not slower(delta):
        return None
    top = max(rises, key=lambda r: rises[r])
    if rises[top] < 10:
        return None
    meaning, lever = STALLS.get(top, ("", ""))
    cause = _cause(
        f"stall-{top}",
        CauseKind.REGRESSION,
        f"More {top} stalls",
        f"{top} gained {rises[top]:.0f} points of the stalls" + (f": {meaning}" if meaning else ""),
        delta,
        ("dominant_stall", f"stall.{top}", f"stall_cpi.{top}"),
        20,
    )
    return _with_lever(cause, lever)


def dram_bound(delta: KernelDelta) -> RootCause | None:
    """Seed 003's memory-bound quadrant: long_scoreboard leads and DRAM is near its peak."""
    if not single(delta):
        return None
    dram = num(delta.current, "dram_throughput")
    if label(delta.current, "dominant_stall") != "long_scoreboard" or dram is None or dram <= 80:
        return None
    cause = _cause(
        "dram-bound",
        CauseKind.REGRESSION,
        "Bound by DRAM bandwidth",
        f"DRAM throughput {dram:.0f}% of peak while long_scoreboard dominates",
        delta,
        ("dram_throughput", "dominant_stall"),
        55,
    )
    return _with_lever(cause, "move fewer bytes: fuse kernels, smaller data types, L2 reuse")


def _with_lever(cause: RootCause, lever: str) -> RootCause:
    return replace(cause, lever=lever)


RULE_NEW = 5.0  # estimated speedup (%) from which a rule that did not fire before counts
RULE_GROWTH = 10.0  # points of estimated speedup a rule that fired before must gain


def ncu_rules(delta: KernelDelta) -> RootCause | None:
    """NCU's own rules (a .ncu-rep captured with sections) that newly fire or whose estimated
    speedup grew: an independent second opinion beside the counters. One capture: the rules
    that fire with an estimated speedup of 20% or more."""
    now = {
        k[len(RULE_PREFIX) :]: v
        for k, v in delta.current.values.items()
        if k.startswith(RULE_PREFIX) and isinstance(v, float)
    }
    if not now:
        return None
    before = {
        k[len(RULE_PREFIX) :]: v
        for k, v in delta.baseline.values.items()
        if k.startswith(RULE_PREFIX) and isinstance(v, float)
    }
    moved: dict[str, tuple[float | None, float]]
    if single(delta):
        moved = {r: (None, v) for r, v in now.items() if v >= 20.0}
    else:
        moved = {
            r: (before.get(r), v)
            for r, v in now.items()
            if (r not in before and v >= RULE_NEW) or (r in before and v - before[r] >= RULE_GROWTH)
        }
    if not moved:
        return None
    ranked = sorted(moved, key=lambda r: -moved[r][1])
    parts = []
    for r in ranked:
        b, a = moved[r]
        how = f"est. speedup {a:.0f}%" if b is None else f"est. speedup {b:.0f}% -> {a:.0f}%"
        text = delta.current.rules.get(r, "")
        parts.append(f"{r} ({how}{'; ' + text if text else ''})")
    verb = "fire" if single(delta) else "newly fire or grew"
    return RootCause(
        "ncu-rules",
        CauseKind.CHANGE,
        f"NCU's rules {verb}: {', '.join(ranked)}",
        "; ".join(parts),
        "open the report in Nsight Compute (ncu-ui, or ncu --import FILE --page details) for "
        "the rule's source locations and guidance",
        tuple(Evidence(f"{RULE_PREFIX}{r}", moved[r][0], moved[r][1], "%", ()) for r in ranked),
        (),
        10.0,
    )
