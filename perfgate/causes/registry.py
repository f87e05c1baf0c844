"""The one registry of diagnosis rules, and `diagnose`, which runs them over a KernelDelta.

Each rule is registered with the metrics it reads (alternatives, the first usable wins), the
raw counters to add to a capture when none is there, and whether it can judge one capture
alone. A rule whose metrics are absent is not guessed at: it becomes a "not evaluated" note.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from perfgate.causes import (
    rules_execution,
    rules_memory,
    rules_ncu,
    rules_occupancy,
    rules_stalls,
    rules_work,
)
from perfgate.causes.facts import faster, has, raw, single
from perfgate.causes.levers import ACCEPT, lever
from perfgate.causes.model import CauseKind, Evidence, KernelDelta, RootCause
from perfgate.judge.comparison import State

Check = Callable[[KernelDelta], RootCause | None]


@dataclass(frozen=True)
class Rule:
    key: str
    title: str
    check: Check
    needs: tuple[tuple[str, ...], ...]  # alternative metric sets; one must be on both sides
    add: str  # what to add to the capture when no alternative is there
    single: bool = False  # can judge one capture with an empty baseline (`perfgate explain`)
    # A symptom, not a mechanism: runs only when no other rule found a regression.
    fallback: bool = False


def _ld(op: str) -> str:
    return (
        f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio, or "
        f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum and "
        f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "atomic-contention",
        "atomic contention",
        rules_memory.atomic_contention,
        (("l2_atomic_requests",), ("global_atomic_requests",)),
        "lts__t_requests_srcunit_tex_op_red.sum, lts__t_requests_srcunit_tex_op_atom.sum and "
        "the drain / lg_throttle stall counters",
        single=True,
    ),
    Rule(
        "no-tensor-cores",
        "tensor cores",
        rules_execution.tensor_cores_lost,
        (("tensor_instructions",), ("tensor_pipe_utilization",)),
        "smsp__inst_executed_pipe_tensor_op_hmma.sum (and _gmma on CC 9.0) or "
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        single=True,
    ),
    Rule(
        "spills-removed",
        "spills removed",
        rules_occupancy.spills_removed,
        (("local_memory_sectors", "registers_per_thread"),),
        "l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum and launch__registers_per_thread",
    ),
    Rule(
        "local-memory",
        "local memory",
        rules_occupancy.local_memory,
        (("local_memory_sectors",),),
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum, ..._op_st.sum",
        single=True,
    ),
    Rule(
        "uncoalesced-loads",
        "coalescing of loads",
        rules_memory.uncoalesced_loads,
        (("global_load_efficiency",), ("sectors_per_request_ld",)),
        _ld("ld"),
        single=True,
    ),
    Rule(
        "uncoalesced-stores",
        "coalescing of stores",
        rules_memory.uncoalesced_stores,
        (("global_store_efficiency",), ("sectors_per_request_st",)),
        _ld("st"),
        single=True,
    ),
    Rule(
        "vectorized-access",
        "vector accesses",
        rules_memory.vectorized_access,
        (("sectors_per_request_ld",), ("sectors_per_request_st",)),
        _ld("ld"),
    ),
    Rule(
        "bank-conflicts",
        "bank conflicts",
        rules_execution.bank_conflicts,
        (
            ("shared_bank_conflicts", "instructions_executed"),
            ("shared_bank_conflicts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
            ("shared_bank_conflicts",),
        ),
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum and smsp__inst_executed.sum",
        single=True,
    ),
    Rule(
        "divergence",
        "divergence",
        rules_execution.divergence,
        (("warp_execution_efficiency",),),
        "smsp__thread_inst_executed.sum and smsp__inst_executed.sum",
        single=True,
    ),
    Rule(
        "occupancy-registers",
        "register pressure",
        rules_occupancy.occupancy_registers,
        (
            ("registers_per_thread", "theoretical_occupancy"),
            ("registers_per_thread", "occupancy_limiter"),
        ),
        "launch__registers_per_thread, sm__maximum_warps_per_active_cycle_pct, "
        "launch__occupancy_limit_*",
        single=True,
    ),
    Rule(
        "occupancy-shared-memory",
        "shared memory per block",
        rules_occupancy.occupancy_shared_memory,
        (
            ("shared_memory_per_block", "theoretical_occupancy"),
            ("shared_memory_per_block", "occupancy_limiter"),
        ),
        "launch__shared_mem_per_block_{static,dynamic}, "
        "sm__maximum_warps_per_active_cycle_pct, launch__occupancy_limit_*",
        single=True,
    ),
    Rule(
        "lost-pipelining",
        "latency hiding",
        rules_execution.lost_pipelining,
        (
            ("stall.long_scoreboard",),
            ("stall_cpi.long_scoreboard",),
            ("dominant_stall",),
            ("shared_memory_per_block", "tensor_pipe_utilization"),
        ),
        "the stall counters (smsp__average_warps_issue_stalled_*_per_issue_active.ratio) "
        "and gpu__time_duration.sum",
    ),
    Rule(
        "occupancy-limiter",
        "occupancy limiter",
        rules_occupancy.occupancy_limiter,
        (("occupancy_limiter",),),
        "launch__occupancy_limit_*",
    ),
    Rule(
        "launch-count",
        "launch count",
        rules_work.launch_count,
        (("launches",),),
        "every launch of the kernel in one run (no --launch-count cap)",
    ),
    Rule(
        "launch-shape",
        "launch shape",
        rules_work.launch_shape,
        (("grid", "block"),),
        "the Grid Size and Block Size columns",
    ),
    Rule(
        "wider-stores",
        "output width",
        rules_memory.wider_stores,
        (("global_store_sectors", "global_load_sectors", "sectors_per_request_st"),),
        "l1tex__t_sectors_pipe_lsu_mem_global_op_{st,ld}.sum and "
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ),
    Rule(
        "more-work",
        "more work",
        rules_work.more_work,
        (("instructions_executed",), ("dram_bytes",), ("global_load_sectors",), ("l2_sectors",)),
        "smsp__inst_executed.sum, dram__bytes_read.sum",
    ),
    Rule(
        "less-work",
        "less work",
        rules_work.less_work,
        (("instructions_executed",), ("dram_bytes",), ("global_load_sectors",), ("l2_sectors",)),
        "smsp__inst_executed.sum, dram__bytes_read.sum",
    ),
    Rule(
        "dram-bound",
        "DRAM bound",
        rules_stalls.dram_bound,
        (("dram_throughput", "dominant_stall"),),
        "dram__throughput.avg.pct_of_peak_sustained_elapsed and the stall counters",
        single=True,
    ),
    Rule(
        "stall-shift",
        "dominant stall",
        rules_stalls.stall_shift,
        (("dominant_stall",),),
        "the stall counters (smsp__average_warps_issue_stalled_*_per_issue_active.ratio)",
        single=True,
        fallback=True,
    ),
)

# Metrics whose change follows from whatever mechanism moved the kernel: the first cause
# lists them so a report shows them under it instead of as separate failures.
CONSEQUENCES = (
    "duration",
    "total_time",
    "dram_throughput",
    "sm_throughput",
    "memory_throughput",
    "l1tex_throughput",
    "l2_throughput",
    "l2_hit_rate",
    "achieved_occupancy",
    "dominant_stall",
)
_CONSEQUENCE_PREFIXES = ("stall.", "stall_cpi.")


@dataclass(frozen=True)
class Diagnosis:
    """Ranked causes of one kernel's change, and the rules that could not be evaluated."""

    causes: tuple[RootCause, ...]
    not_evaluated: tuple[str, ...] = ()

    @property
    def headline(self) -> RootCause | None:
        return self.causes[0] if self.causes else None


def usable(rule: Rule, delta: KernelDelta) -> bool:
    sides = (delta.current,) if single(delta) else (delta.baseline, delta.current)
    return any(all(has(s, m) for s in sides for m in need) for need in rule.needs)


def metrics() -> tuple[str, ...]:
    """Every metric a rule may read: what a check should measure on both sides."""
    names = [m for r in RULES for need in r.needs for m in need if m not in ("grid", "block")]
    names += [m for m in CONSEQUENCES if m not in names]
    extra = (
        "global_store_efficiency",
        "achieved_occupancy",
        "global_store_sectors",
        "stall_cpi.wait",
        "stall_cpi.drain",
        "stall_cpi.lg_throttle",
    )
    return tuple(dict.fromkeys([*names, *extra]))


def _trade_off(cause: RootCause) -> RootCause:
    """A gated counter got worse while the kernel got faster: most likely intended."""
    return replace(
        cause,
        kind=CauseKind.TRADE_OFF,
        title=f"Trade-off: {cause.title[0].lower()}{cause.title[1:]}, but faster",
        lever=f"{ACCEPT}; if it was not intended: {cause.lever}",
    )


def _explains(cause: RootCause, delta: KernelDelta, first: bool) -> tuple[str, ...]:
    compared = [c.metric for c in delta.comparisons]
    own = list(cause.explains)
    if first:
        own += [m for m in CONSEQUENCES if m not in own]
        own += [m for m in compared if m.startswith(_CONSEQUENCE_PREFIXES) and m not in own]
    if not compared:
        return tuple(own)
    return tuple(m for m in own if m in compared)


# Which source counter names the lines behind a mechanism (a .ncu-rep with SourceCounters).
_L2_EXCESS = ("derived__memory_l2_theoretical_sectors_global_excessive", "excessive sectors")
_SOURCE_COUNTER = {
    "uncoalesced-loads": _L2_EXCESS,
    "uncoalesced-stores": _L2_EXCESS,
    "bank-conflicts": ("derived__memory_l1_wavefronts_shared_excessive", "excessive wavefronts"),
}


def _with_lines(cause: RootCause, delta: KernelDelta) -> RootCause:
    counter = _SOURCE_COUNTER.get(cause.mechanism)
    where = delta.current.lines.get(counter[0]) if counter else None
    if not counter or not where:
        return cause
    said = ", ".join(f"{line} ({value:,.0f} {counter[1]})" for line, value in where)
    return replace(cause, detail=f"{cause.detail}; source lines: {said}")


def _finish(causes: list[RootCause], delta: KernelDelta) -> tuple[RootCause, ...]:
    quicker = not single(delta) and faster(delta)
    out = []
    for c in causes:
        improved = c.kind is CauseKind.IMPROVEMENT
        c = replace(c, lever=lever(c.mechanism, delta.family, improved) or c.lever)
        c = _with_lines(c, delta)
        if quicker and c.kind is CauseKind.REGRESSION:
            c = _trade_off(c)
        c = replace(
            c,
            evidence=tuple(
                e if e.raw else Evidence(e.metric, e.before, e.after, e.unit, raw(e.metric))
                for e in c.evidence
            ),
        )
        out.append(c)
    out.sort(key=lambda c: -c.score)
    lead = next((i for i, c in enumerate(out) if c.kind is not CauseKind.CHANGE), 0)
    return tuple(replace(c, explains=_explains(c, delta, i == lead)) for i, c in enumerate(out))


def _unexplained_trade_off(causes: tuple[RootCause, ...], delta: KernelDelta) -> RootCause | None:
    """Gated counters regressed, no rule named why, and the kernel got faster."""
    if single(delta) or not faster(delta):
        return None
    covered = {m for c in causes for m in c.explains}
    worse = tuple(
        c.metric
        for c in delta.comparisons
        if c.state is State.REGRESSED and c.metric not in covered
    )
    if not worse:
        return None
    return RootCause(
        "trade-off",
        CauseKind.TRADE_OFF,
        "Trade-off: counters got worse, the kernel faster",
        f"{', '.join(worse)} regressed while the duration fell beyond its noise bound",
        ACCEPT,
        (),
        worse,
        35.0,
    )


def diagnose(delta: KernelDelta) -> Diagnosis:
    """The causes of a kernel's change, ranked; an empty baseline side judges one capture."""
    alone = single(delta)
    found: list[RootCause] = []
    notes: list[str] = []
    for rule in RULES:
        if alone and not rule.single:
            continue
        if not usable(rule, delta):
            needs = " or ".join("+".join(n) for n in rule.needs)
            notes.append(f"{rule.title}: needs {needs}; add {rule.add} to the capture")
            continue
        if rule.fallback and any(c.kind is CauseKind.REGRESSION for c in found):
            continue
        cause = rule.check(delta)
        if cause is not None:
            found.append(cause)
    second_opinion = rules_ncu.ncu_rules(delta)
    if second_opinion is not None:
        found.append(second_opinion)
    causes = _finish(found, delta)
    extra = _unexplained_trade_off(causes, delta)
    if extra is not None:
        causes = (*causes, extra)
    return Diagnosis(causes, tuple(notes))
