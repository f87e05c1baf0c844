"""The metric catalog: logical metrics, and the raw ncu metrics each one is computed from.

A logical metric has a name, a unit, the direction that is worse, a noise class and default
thresholds (measured: docs/noise.md), and an ordered list of formulas over raw metrics. The
first formula whose inputs the capture holds is used; formulas differ by what a capture holds
(`--set full` has no `l1tex__average_t_sectors_per_request_*` ratio, so sectors per request
comes from the sums) and by architecture (no DRAM counters on CC 8.7, 11.0 and 12.1).

Every formula belongs to a comparability group. A baseline records the group it was measured
in, and a check only uses formulas of that group: stall shares from PC sampling are never
compared with shares from the stall counters.

Any raw ncu metric name can be gated too; it is compared as it is, in both directions unless
the baseline says otherwise.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Value, cc_version
from perfgate.metrics.stalls import (
    FAMILIES,
    ISSUING,
    NOT_STALLS,
    REASONS,
    STALL_REASONS,
    StallFamily,
    choose_family,
    cycles_per_instruction,
    present_reasons,
    stall_reasons_for,
)
from perfgate.metrics.stalls import shares as stall_shares
from perfgate.metrics.thresholds import CategoricalCheck, Direction, Noise, Threshold

LaunchValues = Mapping[str, Value]
Computed = float | str | dict[str, float] | None


class Aggregate(enum.Enum):
    MEDIAN = "median"  # numeric: the median over the kernel's launches
    MODE = "mode"  # categorical: the most common value
    DOMINANT = "dominant"  # the largest median share of a stall family
    # Launch accounting: per capture file (one captured run or range), then the median over
    # the files: how many launches, and their summed value (total GPU time).
    COUNT = "count"
    SUM = "sum"  # launches x the fastest launch, per capture file
    # The best launch: the fastest time, the highest rate. Timing noise on a GPU is one-sided
    # (interference, clock ramps only make a launch slower: seen one launch of three 5% slow),
    # so the best launch is the steadiest estimate, and a regression moves every launch.
    FASTEST = "fastest"


class ColumnOp(enum.Enum):
    DIRECT = "direct"  # names[0] * scale
    RATIO = "ratio"  # names[0] / names[1] * scale; 0 / 0 is 0
    TOTAL = "total"  # the sum of every name; no value when one is missing
    PRESENT = "present"  # the sum of the names that have a value


@dataclass(frozen=True)
class Columnar:
    """A formula's arithmetic as data, for perfgate.metrics.columns to run over every launch
    at once.
    `compute` stays the definition; tests/metrics/test_columns.py holds the two to the same
    values."""

    op: ColumnOp
    names: tuple[str, ...]
    scale: float = 1.0


@dataclass(frozen=True)
class Formula:
    """How one launch's value is computed from its raw metrics."""

    inputs: tuple[str, ...]
    compute: Callable[[LaunchValues], Computed]
    text: str  # shown in reports and recorded in baselines as the metric's source
    group: str  # values compare only within one group
    needs_all: bool = True  # False: usable when any input is present; absent ones count as 0
    for_cc: Callable[[tuple[int, int] | None], bool] = field(default=lambda cc: True)
    family: str = ""  # stall metrics: the stall family (perfgate.metrics.stalls) it reads
    columnar: Columnar | None = None  # the same arithmetic over columns (perfgate.metrics.columns)

    def available(self, columns: frozenset[str] | set[str], cc: str | None) -> bool:
        if not self.for_cc(cc_version(cc)):
            return False
        if self.needs_all:
            return all(name in columns for name in self.inputs)
        return any(name in columns for name in self.inputs)


def _num(values: LaunchValues, name: str) -> float | None:
    v = values.get(name)
    # v == v is math.isnan's answer without the call: every formula reads every launch.
    return v if isinstance(v, float) and v == v else None


def direct(
    name: str,
    group: str = "counters",
    scale: float = 1.0,
    for_cc: Callable[[tuple[int, int] | None], bool] = lambda cc: True,
) -> Formula:
    def compute(values: LaunchValues) -> Computed:
        v = values.get(name)  # _num() inlined: the commonest formula, once per launch
        return v * scale if isinstance(v, float) and v == v else None

    text = name if scale == 1.0 else f"{name} * {scale:g}"
    columnar = Columnar(ColumnOp.DIRECT, (name,), scale)
    return Formula((name,), compute, text, group, for_cc=for_cc, columnar=columnar)


def ratio(num: str, den: str, scale: float = 1.0, group: str = "counters") -> Formula:
    def compute(values: LaunchValues) -> Computed:
        a, b = values.get(num), values.get(den)  # _num() inlined, as in direct()
        if not (isinstance(a, float) and a == a and isinstance(b, float) and b == b):
            return None
        if b == 0:
            return 0.0 if a == 0 else None  # ncu's convention: no requests, ratio 0
        return a / b * scale

    text = f"{num} / {den}" + (f" * {scale:g}" if scale != 1.0 else "")
    columnar = Columnar(ColumnOp.RATIO, (num, den), scale)
    return Formula((num, den), compute, text, group, columnar=columnar)


def _added(parts: Iterable[float]) -> float:
    """Left to right, one addition at a time: sum() of floats compensates its rounding from
    Python 3.12 on, which column arithmetic (perfgate.metrics.columns) does not."""
    acc = 0.0
    for part in parts:
        acc += part
    return acc


def total(names: Iterable[str], group: str = "counters", **kw: object) -> Formula:
    names = tuple(names)

    def compute(values: LaunchValues) -> Computed:
        parts = [_num(values, n) for n in names]
        if any(p is None for p in parts):
            return None
        return _added(p for p in parts if p is not None)

    columnar = Columnar(ColumnOp.TOTAL, names)
    return Formula(names, compute, " + ".join(names), group, columnar=columnar, **kw)  # type: ignore[arg-type]


def present(names: Iterable[str], **kw: object) -> Formula:
    """The sum of whichever of `names` the capture holds: one class missing (an instruction
    class ncu did not report) does not make the metric unavailable."""
    names = tuple(names)

    def compute(values: LaunchValues) -> Computed:
        parts = [p for p in (_num(values, n) for n in names) if p is not None]
        return _added(parts) if parts else None

    text = " + ".join(names) + " (those present)"
    columnar = Columnar(ColumnOp.PRESENT, names)
    return Formula(names, compute, text, needs_all=False, columnar=columnar, **kw)  # type: ignore[arg-type]


class StallKind(enum.Enum):
    SHARE = "share"  # stall.<reason>: percent of the stalled sum over the reason set
    DOMINANT = "dominant"  # dominant_stall: the reason with the largest median share
    CPI = "cpi"  # stall_cpi.<reason>: stall cycles per issued instruction


def _stall_formula(fam: StallFamily, kind: StallKind, reason: str | None) -> Formula:
    """One family's formula for a stall metric. The reason set is not fixed here: measure()
    computes over the set the baseline recorded, or over every reason the capture holds."""
    reasons = stall_reasons_for(None, fam.name)
    if kind is StallKind.CPI:
        assert reason is not None
        inputs: tuple[str, ...] = (fam.metric(reason),)
        if not fam.per_instruction:
            inputs += (fam.metric(ISSUING),)

        def compute(values: LaunchValues) -> Computed:
            return cycles_per_instruction(fam, reason, values)

        text = (
            fam.metric(reason)
            if fam.per_instruction
            else f"{fam.metric(reason)} / {fam.metric(ISSUING)}"
        )
        return Formula(inputs, compute, text, fam.group, family=fam.name)
    family_text = fam.template.format(reason="*")

    def vector(values: LaunchValues) -> Computed:
        have = [r for r in reasons if fam.metric(r) in values]
        return stall_shares(fam, have, values)

    if kind is StallKind.DOMINANT:
        compute, text = vector, f"shares of {family_text} (without selected, not_selected)"
    else:
        assert reason is not None

        def compute(values: LaunchValues) -> Computed:
            v = vector(values)
            return v.get(reason, 0.0) if isinstance(v, dict) else None

        text = f"{fam.metric(reason)} / sum of {family_text} (without selected, not_selected)"
    inputs = tuple(fam.metric(r) for r in reasons)
    return Formula(inputs, compute, text, fam.group, needs_all=False, family=fam.name)


def _stall_formulas(kind: StallKind, reason: str | None = None) -> tuple[Formula, ...]:
    return tuple(_stall_formula(fam, kind, reason) for fam in FAMILIES)


_LIMITERS = ("registers", "shared_mem", "warps", "blocks", "barriers")


_LIMIT_COLUMNS = tuple((name, f"launch__occupancy_limit_{name}") for name in _LIMITERS)


def _limiter(values: LaunchValues) -> Computed:
    known = {k: v for k, column in _LIMIT_COLUMNS if (v := _num(values, column)) is not None}
    if not known:
        return None
    low = min(known.values())
    return "+".join(k for k, v in known.items() if v == low)


def _no_dram(cc: tuple[int, int] | None) -> bool:
    # NVIDIA's own section rules request no DRAM metric on CC 8.7, 11.0 and 12.1 (chips
    # without their own DRAM counters); unknown CC: try.
    return cc not in {(8, 7), (11, 0), (12, 1)}


class Role(enum.Enum):
    """What a metric's move beyond its bound means on its own (perfgate.judge.rules)."""

    PRIMARY = "primary"  # fails the kernel on its own
    EVIDENCE = "evidence"  # explains a primary regression; alone it is noted, not failed


# The one table of roles: every metric not named here (a raw ncu metric included: someone
# asked for it by name) is PRIMARY. Evidence metrics are rates, ratios and shares that moved
# beyond their bounds between machine starts of UNCHANGED builds (tests/data/field/h100:
# achieved_occupancy -18%, stall_cpi.* +15% to +300%, dram_throughput -5%, l2_sectors +2.1%;
# docs/noise.md). A baseline's own threshold on one makes it gate on its own again.
EVIDENCE_METRICS: frozenset[str] = frozenset(
    {
        "achieved_occupancy",
        "dram_throughput",
        "tensor_pipe_utilization",
        "l2_sectors",
        "l2_hit_rate",
        "sm_throughput",
        "memory_throughput",
        "l1tex_throughput",
        "l2_throughput",
        "shared_bank_conflicts",
        "dominant_stall",
        # Store sectors and local-memory sectors moved across machine starts of unchanged
        # builds where load sectors never did: a cuDNN layout kernel's store sectors +9.4%,
        # small ATen copies' +9.7%, FlashAttention's local sectors +10% (docs/noise.md, the
        # field corpus): partial-sector stores follow the buffers' alignment, which the
        # allocator decides per process. The work they explain shows in instructions and
        # DRAM bytes, which stayed put.
        "global_store_sectors",
        "sectors_per_request_st",
        "local_memory_sectors",
    }
)
EVIDENCE_PREFIXES: tuple[str, ...] = ("stall.", "stall_cpi.")
# A kernel's own time is evidence below SHORT_KERNEL_NS unless it moved by more than
# SHORT_KERNEL_SLACK_NS a launch: kernels under 10 us moved by up to 36% across machine starts
# of unchanged builds (an ATen copy of 3 us on the H200: +1.1 us), 5-10 us reductions by 8.7%
# (+0.7 us), while each program's total GPU time moved by 1.4% at most (docs/noise.md). A
# bank-conflicted 9 us zoo kernel that became 23 us still fails on its own; smaller moves count
# in the whole-program gate, and a work change of the kernel still fails alone.
SHORT_KERNEL_NS = 10_000.0
SHORT_KERNEL_SLACK_NS = 1_500.0
_TIME_METRICS = frozenset({"duration", "total_time"})


def role_of(name: str, duration_ns: float | None = None, moved_ns: float | None = None) -> Role:
    """The metric's role. For the time of a kernel whose recorded duration is `duration_ns`
    and which moved by `moved_ns` a launch (None: not known), the rule above."""
    if name in EVIDENCE_METRICS or name.startswith(EVIDENCE_PREFIXES):
        return Role.EVIDENCE
    short = name in _TIME_METRICS and duration_ns is not None and duration_ns < SHORT_KERNEL_NS
    if short and (moved_ns is None or moved_ns <= SHORT_KERNEL_SLACK_NS):
        return Role.EVIDENCE
    return Role.PRIMARY


@dataclass(frozen=True)
class MetricDef:
    name: str
    title: str
    unit: str
    direction: Direction
    noise: Noise
    formulas: tuple[Formula, ...]
    threshold: Threshold = field(default_factory=Threshold)
    default: bool = True  # recorded by `baseline record` unless --metric says otherwise
    aggregate: Aggregate = Aggregate.MEDIAN
    check: CategoricalCheck | None = None  # categorical metrics only
    raw: bool = False  # a raw ncu metric gated as it is
    # A rate (DRAM %, throughput %) divides work by time: its fall is no regression when the
    # kernel got faster or when one of these work metrics fell with it.
    rate_of: tuple[str, ...] = ()
    stall: StallKind | None = None  # a stall metric: computed over a reason set (measure)
    reason: str = ""  # stall.<reason> and stall_cpi.<reason>

    @property
    def categorical(self) -> bool:
        return self.aggregate in (Aggregate.MODE, Aggregate.DOMINANT)

    @property
    def role(self) -> Role:
        return role_of(self.name)

    @property
    def per_capture(self) -> bool:
        return self.aggregate in (Aggregate.COUNT, Aggregate.SUM)

    def formulas_for(self, group: str | None = None) -> tuple[Formula, ...]:
        return tuple(f for f in self.formulas if group is None or f.group == group)

    def resolve(
        self, columns: frozenset[str] | set[str], cc: str | None, group: str | None = None
    ) -> Formula | None:
        if self.stall is not None:
            # The most complete stall family wins, not the first with any column.
            fam = choose_family(columns, cc, group)
            formula = next((f for f in self.formulas if fam and f.family == fam.name), None)
            return formula if formula is not None and formula.available(columns, cc) else None
        for formula in self.formulas_for(group):
            if formula.available(columns, cc):
                return formula
        return None

    def inputs(self, cc: str | None = None) -> tuple[str, ...]:
        """The raw metrics to ask ncu for: those of the first formula usable on `cc`."""
        version = cc_version(cc)
        for formula in self.formulas:
            if formula.for_cc(version):
                if formula.family and self.stall is not StallKind.CPI:
                    fam = next(f for f in FAMILIES if f.name == formula.family)
                    return fam.metrics(cc)
                return formula.inputs
        return ()


_EXACT = Threshold(0.0, 0.0)
_LD = "l1tex__t_{x}_pipe_lsu_mem_global_op_{op}.sum"


def _sectors_per_request(op: str) -> tuple[Formula, ...]:
    return (
        ratio(_LD.format(x="sectors", op=op), _LD.format(x="requests", op=op)),
        direct(f"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_{op}.ratio"),
    )


_TENSOR_OPS = ("hmma", "imma", "dmma")
_TENSOR = "smsp__inst_executed_pipe_tensor_op_{op}.sum"
_BYTES_PER_SECTOR = "smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio"

CATALOG_LIST: tuple[MetricDef, ...] = (
    # Registers allocated per thread; more registers, fewer resident warps.
    MetricDef(
        "registers_per_thread", "Registers per thread", "register/thread",
        Direction.HIGHER_IS_WORSE, Noise.EXACT, (direct("launch__registers_per_thread"),), _EXACT,
    ),
    # Static plus dynamic shared memory a block asks for.
    MetricDef(
        "shared_memory_per_block", "Shared memory per block", "byte/block",
        Direction.HIGHER_IS_WORSE, Noise.EXACT,
        (total(["launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"]),),
        _EXACT,
    ),
    # The resource that bounds blocks per SM (ties joined with '+').
    MetricDef(
        "occupancy_limiter", "Occupancy limiter", "", Direction.ANY_CHANGE, Noise.EXACT,
        (Formula(tuple(f"launch__occupancy_limit_{n}" for n in _LIMITERS), _limiter,
                 "smallest of launch__occupancy_limit_{registers,shared_mem,warps,blocks,barriers}",
                 "counters", needs_all=False),),
        aggregate=Aggregate.MODE, check=CategoricalCheck(stable=True),
    ),
    # The most warps per SM the launch configuration allows, of the SM's maximum.
    MetricDef(
        "theoretical_occupancy", "Theoretical occupancy", "%",
        Direction.LOWER_IS_WORSE, Noise.EXACT,
        (direct("sm__maximum_warps_per_active_cycle_pct"),), _EXACT,
    ),
    # Active warps as a share of the SM's maximum.
    MetricDef(
        "achieved_occupancy", "Achieved occupancy", "%", Direction.LOWER_IS_WORSE, Noise.NOISY,
        (direct("sm__warps_active.avg.pct_of_peak_sustained_active"),), Threshold(0.08, 8.0),
    ),
    # 4 is ideal for coalesced 4-byte loads, 32 is fully scattered. Diagnostic only: 16-byte vector
    # loads make a quarter of the requests for the same sectors, so the ratio quadruples on a change
    # that is no regression; global_load_efficiency and global_load_sectors gate coalescing.
    MetricDef(
        "sectors_per_request_ld", "Sectors per global load request", "sector/request",
        Direction.HIGHER_IS_WORSE, Noise.EXACT, _sectors_per_request("ld"), Threshold(0.0, 0.01),
        default=False,
    ),
    # 32-byte sectors global loads fetch from L1: the work of a load, whatever the access width
    # (16-byte vector loads keep the sectors); uncoalescing multiplies it.
    MetricDef(
        "global_load_sectors", "Global load sectors", "sector", Direction.HIGHER_IS_WORSE,
        Noise.EXACT, (direct(_LD.format(x="sectors", op="ld")),), _EXACT,
    ),
    # 32-byte sectors global stores write: the work of a store, whatever the access width. Partial-
    # sector stores (2-byte halves) move by up to 1.3% between launches (seen); full-sector stores
    # are exact.
    MetricDef(
        "global_store_sectors", "Global store sectors", "sector", Direction.HIGHER_IS_WORSE,
        Noise.NOISY, (direct(_LD.format(x="sectors", op="st")),), Threshold(0.02, 0.0),
    ),
    # Diagnostic only (see sectors_per_request_ld). 4 is ideal for coalesced 4-byte stores, 32 is
    # fully scattered. Store sectors of partial-sector writes vary by up to 1.3% between launches
    # (seen).
    MetricDef(
        "sectors_per_request_st", "Sectors per global store request", "sector/request",
        Direction.HIGHER_IS_WORSE, Noise.NOISY, _sectors_per_request("st"), Threshold(0.02, 0.01),
        default=False,
    ),
    # Active threads per executed warp instruction, of 32; divergence lowers it. Exact for most
    # kernels; persistent library kernels vary by 0.4% (seen).
    MetricDef(
        "warp_execution_efficiency", "Warp execution efficiency", "%",
        Direction.LOWER_IS_WORSE, Noise.NOISY,
        (
            ratio("smsp__thread_inst_executed.sum", "smsp__inst_executed.sum", 100 / 32),
            direct("smsp__average_thread_inst_executed_per_inst_executed.ratio", scale=100 / 32),
            direct("smsp__thread_inst_executed_per_inst_executed.ratio", scale=100 / 32),
        ),
        Threshold(0.0, 1.0),
    ),
    # Warp-level instructions executed. Exact for most kernels; persistent library kernels (cuDNN
    # attention) vary by 0.3% between launches (seen).
    MetricDef(
        "instructions_executed", "Warp instructions executed", "inst",
        Direction.HIGHER_IS_WORSE, Noise.NOISY, (direct("smsp__inst_executed.sum"),),
        Threshold(0.01, 0.0),
    ),
    # Extra shared-memory cycles spent on bank conflicts (seen varying 35% between launches).
    MetricDef(
        "shared_bank_conflicts", "Shared-memory bank conflicts", "conflict",
        Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (direct("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),), Threshold(0.5, 4096.0),
    ),
    # Local-memory traffic: register spills and run-time-indexed arrays.
    MetricDef(
        "local_memory_sectors", "Local-memory sectors", "sector",
        Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (total(["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
                "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"]),),
        Threshold(0.10, 0.0),
    ),
    # Global atomics and reductions reaching L2; contention grows with them.
    MetricDef(
        "l2_atomic_requests", "L2 atomic and reduction requests", "request",
        Direction.HIGHER_IS_WORSE, Noise.EXACT,
        (
            total(["lts__t_requests_srcunit_tex_op_red.sum",
                   "lts__t_requests_srcunit_tex_op_atom.sum"]),
            # --set full splits atomics by kind and has no plain op_atom sum.
            total(["lts__t_requests_srcunit_tex_op_red.sum",
                   "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum",
                   "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum"]),
        ),
        _EXACT,
    ),
    # Warp instructions on the tensor pipe (HMMA, GMMA on CC 9.0, IMMA, DMMA).
    MetricDef(
        "tensor_instructions", "Tensor-core instructions", "inst",
        Direction.LOWER_IS_WORSE, Noise.NOISY,
        (
            direct("smsp__inst_executed_pipe_tensor.sum"),
            direct("sm__inst_executed_pipe_tensor.sum"),
            # The per-class counters, where the pipe total is absent: a class ncu did not
            # report counts as 0. Their sum is another quantity (seen on sm_90: GMMA kernels
            # count in both op_hmma and op_gmma, twice the pipe total), so another group.
            present([_TENSOR.format(op=op) for op in ("hmma", "gmma", *_TENSOR_OPS[1:])],
                    group="tensor_ops", for_cc=lambda cc: cc is not None and cc[0] == 9),
            present([_TENSOR.format(op=op) for op in _TENSOR_OPS],
                    group="tensor_ops", for_cc=lambda cc: cc is None or cc[0] != 9),
            present([f"sm__inst_executed_pipe_tensor_op_{op}.sum"
                     for op in ("hmma", "gmma", *_TENSOR_OPS[1:])], group="tensor_ops"),
        ),
        Threshold(0.01, 0.0),
    ),
    # Cycles the tensor pipe is busy, of the active cycles.
    MetricDef(
        "tensor_pipe_utilization", "Tensor pipe utilization", "%",
        Direction.LOWER_IS_WORSE, Noise.NOISY,
        (direct("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),),
        Threshold(0.10, 2.0), rate_of=("tensor_instructions",),
    ),
    # DRAM bandwidth used, of peak. A drop usually means the kernel got slower for the same bytes;
    # more bytes show in dram_bytes.
    MetricDef(
        "dram_throughput", "DRAM throughput", "%", Direction.LOWER_IS_WORSE, Noise.NOISY,
        (
            direct("dram__throughput.avg.pct_of_peak_sustained_elapsed", for_cc=_no_dram),
            direct("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", for_cc=_no_dram),
        ),
        Threshold(0.05, 2.0), aggregate=Aggregate.FASTEST, rate_of=("dram_bytes",),
    ),
    # Bytes read from and written to device memory (or one direction, when the capture holds only
    # that one; such a baseline compares only with that direction).
    MetricDef(
        "dram_bytes", "DRAM bytes", "byte", Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (
            total(["dram__bytes_read.sum", "dram__bytes_write.sum"], for_cc=_no_dram),
            direct("dram__bytes.sum", for_cc=_no_dram),
            # Only one direction captured: usable, but never compared with both directions.
            direct("dram__bytes_read.sum", group="dram_read", for_cc=_no_dram),
            direct("dram__bytes_write.sum", group="dram_write", for_cc=_no_dram),
        ),
        Threshold(0.03, 65536.0),
    ),
    # Kernel time under the profiler, of the fastest launch (clocks not locked: noisy, and the noise
    # only ever adds time).
    MetricDef(
        "duration", "Duration", "ns", Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (direct("gpu__time_duration.sum"),), Threshold(0.08, 1000.0), aggregate=Aggregate.FASTEST,
    ),
    # How often the kernel runs in one captured run: a redundant launch is a regression, fewer
    # launches an improvement.
    MetricDef(
        "launches", "Launches per capture", "launch", Direction.HIGHER_IS_WORSE, Noise.EXACT,
        (Formula((), lambda values: 1.0, "launches of the kernel in each capture file",
                 "counters"),),
        _EXACT, aggregate=Aggregate.COUNT,
    ),
    # The kernel's GPU time in one captured run: its launches times its fastest launch.
    MetricDef(
        "total_time", "Total GPU time per capture", "ns", Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (direct("gpu__time_duration.sum"),), Threshold(0.08, 1000.0), aggregate=Aggregate.SUM,
    ),
    # The stall reason with the largest share (not counting 'selected', which is issuing); a change
    # counts when the new reason leads the old by more than the margin.
    MetricDef(
        "dominant_stall", "Dominant warp stall", "", Direction.ANY_CHANGE, Noise.NOISY,
        _stall_formulas(StallKind.DOMINANT), aggregate=Aggregate.DOMINANT, stall=StallKind.DOMINANT,
        check=CategoricalCheck(stable=True, margin=5.0),
    ),
    # Speed-of-light compute throughput.
    MetricDef(
        "sm_throughput", "SM throughput", "%", Direction.LOWER_IS_WORSE, Noise.NOISY,
        (direct("sm__throughput.avg.pct_of_peak_sustained_elapsed"),), Threshold(0.10, 2.0),
        default=False, aggregate=Aggregate.FASTEST, rate_of=("instructions_executed",),
    ),
    # Speed-of-light memory throughput (the busiest of DRAM, L2, L1).
    MetricDef(
        "memory_throughput", "Memory throughput", "%", Direction.LOWER_IS_WORSE, Noise.NOISY,
        (direct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),),
        Threshold(0.10, 2.0), default=False,
        aggregate=Aggregate.FASTEST,
        rate_of=("dram_bytes", "l2_sectors", "global_load_sectors", "global_store_sectors"),
    ),
    MetricDef(
        "l1tex_throughput", "L1/TEX throughput", "%", Direction.ANY_CHANGE, Noise.NOISY,
        (direct("l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),), Threshold(0.10, 2.0),
        default=False, rate_of=("global_load_sectors", "global_store_sectors"),
    ),
    MetricDef(
        "l2_throughput", "L2 throughput", "%", Direction.ANY_CHANGE, Noise.NOISY,
        (direct("lts__throughput.avg.pct_of_peak_sustained_elapsed"),), Threshold(0.10, 2.0),
        default=False, rate_of=("l2_sectors",),
    ),
    # 32-byte sectors the L2 slices served: L2 traffic from every unit.
    MetricDef(
        "l2_sectors", "L2 sectors", "sector", Direction.HIGHER_IS_WORSE, Noise.NOISY,
        (direct("lts__t_sectors.sum"),), Threshold(0.02, 0.0),
    ),
    MetricDef(
        "l2_hit_rate", "L2 hit rate", "%", Direction.LOWER_IS_WORSE, Noise.NOISY,
        (direct("lts__t_sector_hit_rate.pct"),), Threshold(0.05, 2.0), default=False,
    ),
    MetricDef(
        "global_atomic_requests", "Global atomic and reduction requests (L1)", "request",
        Direction.HIGHER_IS_WORSE, Noise.EXACT,
        (total(["l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
                "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"]),),
        _EXACT, default=False,
    ),
    # Bytes a global load uses of the 32-byte sectors it fetches: 100% is coalesced whatever the
    # access width.
    MetricDef(
        "global_load_efficiency", "Global load efficiency", "%",
        Direction.LOWER_IS_WORSE, Noise.EXACT,
        (direct(_BYTES_PER_SECTOR.format(op="ld"), scale=100 / 32),),
        Threshold(0.0, 0.1),
    ),
    # Bytes a global store uses of the 32-byte sectors it writes.
    MetricDef(
        "global_store_efficiency", "Global store efficiency", "%",
        Direction.LOWER_IS_WORSE, Noise.EXACT,
        (direct(_BYTES_PER_SECTOR.format(op="st"), scale=100 / 32),),
        Threshold(0.0, 0.1),
    ),
)  # fmt: skip

CATALOG: dict[str, MetricDef] = {m.name: m for m in CATALOG_LIST}
STALL_PREFIX = "stall."
STALL_CPI_PREFIX = "stall_cpi."
STALL_THRESHOLD = Threshold(0.25, 15.0)
# A tiny kernel's shares stray by up to 10.3 points from a one-run baseline (a two-block Triton
# kernel's long_scoreboard, docs/noise.md): 15 points keeps half as much again in hand.
# Instruction-fetch stalls swing with a cold instruction cache in kernels launched once or
# twice per run: seen up to 15.4 points outside a baseline's range.
COLD_START_STALLS = frozenset({"imc_miss", "no_instruction"})
COLD_START_THRESHOLD = Threshold(0.25, 25.0)
# Stall cycles per issued instruction: docs/noise.md measures the spread across machine starts.
STALL_CPI_THRESHOLD = Threshold(0.30, 0.5)
COLD_START_CPI_THRESHOLD = Threshold(0.50, 1.0)


def _refuse_non_stall(reason: str, prefix: str) -> None:
    if reason in NOT_STALLS:
        raise UsageError(
            f"{prefix}{reason}: '{reason}' is not a stall ('selected' is issuing, "
            "'not_selected' an eligible warp another was picked over: enough parallelism)"
        )
    if reason not in REASONS:
        raise UsageError(f"unknown stall reason {reason!r}; known: {', '.join(STALL_REASONS)}")


def stall_share(reason: str) -> MetricDef:
    # Share of '<reason>' among the stall reasons of the baseline's set (not selected, not
    # not_selected). Zero-sum: one reason growing makes the others fall, so not in the default set.
    return MetricDef(
        f"{STALL_PREFIX}{reason}",
        f"Stall share: {reason}",
        "%",
        Direction.HIGHER_IS_WORSE,
        Noise.NOISY,
        _stall_formulas(StallKind.SHARE, reason),
        COLD_START_THRESHOLD if reason in COLD_START_STALLS else STALL_THRESHOLD,
        default=False,
        stall=StallKind.SHARE,
        reason=reason,
    )


def stall_cpi(reason: str) -> MetricDef:
    # Cycles warps spent stalled on '<reason>' per instruction issued: the reason's value divided by
    # 'selected' (the latency family's value as it is). Absolute: it does not fall when another
    # reason grows.
    return MetricDef(
        f"{STALL_CPI_PREFIX}{reason}",
        f"Stall cycles per instruction: {reason}",
        "cycle/inst",
        Direction.HIGHER_IS_WORSE,
        Noise.NOISY,
        _stall_formulas(StallKind.CPI, reason),
        COLD_START_CPI_THRESHOLD if reason in COLD_START_STALLS else STALL_CPI_THRESHOLD,
        # Per instruction: fewer instructions for the same stall time raise it (seen x2.5 for
        # 16-byte vector loads, a quarter of the instructions and 37% faster).
        rate_of=("instructions_executed",),
        stall=StallKind.CPI,
        reason=reason,
    )


def raw_metric(name: str) -> MetricDef:
    # A raw ncu metric, compared as it is.
    return MetricDef(
        name,
        name,
        "",
        Direction.ANY_CHANGE,
        Noise.NOISY,
        (direct(name, group="raw"),),
        Threshold(0.10, 0.0),
        default=False,
        raw=True,
    )


def is_raw_name(name: str) -> bool:
    return "__" in name


@functools.lru_cache(maxsize=4096)
def lookup(name: str) -> MetricDef:
    """The definition of a logical metric, a stall share `stall.<reason>`, stall cycles per
    instruction `stall_cpi.<reason>`, or a raw metric."""
    if name in CATALOG:
        return CATALOG[name]
    if name.startswith(STALL_PREFIX):
        reason = name[len(STALL_PREFIX) :]
        _refuse_non_stall(reason, STALL_PREFIX)
        return stall_share(reason)
    if name.startswith(STALL_CPI_PREFIX):
        reason = name[len(STALL_CPI_PREFIX) :]
        _refuse_non_stall(reason, STALL_CPI_PREFIX)
        return stall_cpi(reason)
    if is_raw_name(name):
        return raw_metric(name)
    raise UsageError(
        f"unknown metric {name!r}: not in the catalog (perfgate metrics lists it), not "
        "stall.<reason>, and not a raw ncu metric name (those contain '__')"
    )


def default_metrics(columns: frozenset[str] | set[str], cc: str | None) -> list[str]:
    """What `baseline record` gates when not told: the default catalog metrics the capture
    can compute, and stall_cpi.<reason> for each stall reason of the most complete stall
    family it holds. Shares (stall.<reason>) are zero-sum and only gated when asked for.
    Instruction-fetch stalls (imc_miss, no_instruction) are left out: they follow the cold
    instruction cache of a kernel's first launches, not its code (seen x6 between separate
    runs of a 2-block Triton kernel); ask for them by name to gate them."""
    names = [m.name for m in CATALOG_LIST if m.default and m.resolve(columns, cc)]
    fam = choose_family(columns, cc)
    if fam is not None:
        names += [
            f"{STALL_CPI_PREFIX}{r}"
            for r in present_reasons(fam, columns, cc)
            if r not in COLD_START_STALLS and stall_cpi(r).resolve(columns, cc) is not None
        ]
    return names


_WORSE = {
    Direction.HIGHER_IS_WORSE: "higher",
    Direction.LOWER_IS_WORSE: "lower",
    Direction.ANY_CHANGE: "changed",
}


def catalog_markdown() -> str:
    """The catalog as the table in docs/metrics.md (a test keeps the two the same)."""
    from perfgate.metrics.thresholds import describe_bound

    lines = [
        "| metric | role | unit | worse when | noise | default bound | default set "
        "| computed from |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cold = sorted(COLD_START_STALLS)
    generic = {
        f"{STALL_CPI_PREFIX}REASON": f"`{STALL_CPI_PREFIX}<reason>`",
        f"{STALL_CPI_PREFIX}{cold[0]}": ", ".join(f"`{STALL_CPI_PREFIX}{r}`" for r in cold),
        f"{STALL_PREFIX}REASON": f"`{STALL_PREFIX}<reason>`",
        f"{STALL_PREFIX}{cold[0]}": ", ".join(f"`{STALL_PREFIX}{r}`" for r in cold),
    }
    rows = [
        *CATALOG_LIST,
        stall_cpi("REASON"),
        stall_cpi(cold[0]),
        stall_share("REASON"),
        stall_share(cold[0]),
    ]
    for m in rows:
        if m.categorical:
            margin = m.check.margin if m.check else 0.0
            bound = "unchanged" + (f" (margin {margin:g} points)" if margin else "")
        else:
            bound = describe_bound(m.threshold, m.direction, m.unit)
        if m.stall is StallKind.CPI:
            sources = "`<reason> / selected` of the stall family the capture holds (see below)"
        elif m.stall is StallKind.SHARE:
            sources = "the stall family the capture holds (see below)"
        else:
            sources = "<br>".join(
                f"`{f.text}`" + ("" if f.group == "counters" else f" ({f.group})")
                for f in m.formulas
            )
        if m.stall is StallKind.CPI:
            default = (
                "no (instruction fetch: ask by name)"
                if m.reason in COLD_START_STALLS
                else "yes, each stall reason"
            )
        else:
            default = "yes" if m.default else "no"
        name = generic.get(m.name, f"`{m.name}`")
        lines.append(
            f"| {name} | {m.role.value} | {m.unit or '-'} | {_WORSE[m.direction]} "
            f"| {m.noise.value} | {bound} | {default} | {sources} |"
        )
    return "\n".join(lines) + "\n"


def ncu_metrics(cc: str | None = "9.0", names: Iterable[str] | None = None) -> list[str]:
    """The raw metrics an ncu run needs for `names` (default: the whole catalog) on `cc`."""
    chosen = list(names) if names is not None else [m.name for m in CATALOG_LIST]
    out: dict[str, None] = {}
    for name in chosen:
        for raw in lookup(name).inputs(cc):
            out[raw] = None
    for extra in ("launch__grid_size", "launch__block_size", "device__attribute_display_name"):
        out.setdefault(extra, None)
    return list(out)
