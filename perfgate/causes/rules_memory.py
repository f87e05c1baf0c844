"""Diagnosis rules of global memory access: loads and stores coalesced or not, vector
accesses, atomics contending for one L2 line, and the output written in a wider type.
Each rule is a pure function from a KernelDelta to the RootCause it recognises, or None
(the registry, perfgate.causes.registry, runs them)."""

from __future__ import annotations

import math

from perfgate.causes.facts import faster, fmt, label, num, share, share_rise, single, slower, times
from perfgate.causes.model import CauseKind, KernelDelta, RootCause
from perfgate.causes.rootcause import root_cause

_OP = {"ld": ("load", "loads"), "st": ("store", "stores")}


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
                return root_cause(
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
            return root_cause(
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
        return root_cause(
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
    return root_cause(
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
        if op == "st" and stored_wider(delta) is not None:
            continue  # wider elements, not wider vectors: wider_stores names it
        if ok:
            kind = CauseKind.IMPROVEMENT if faster(delta) else CauseKind.CHANGE
            return root_cause(
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
            return root_cause(
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
    return root_cause(
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


def stored_wider(delta: KernelDelta) -> float | None:
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
    grown = stored_wider(delta)
    if grown is None:
        return None
    return root_cause(
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
