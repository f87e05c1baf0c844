"""Kernels whose launch configuration is an autotuner's choice, not part of what they are.

Triton's @triton.autotune benchmarks its configs in each new process and keeps the fastest,
so one build launches one kernel at another grid, block and register count from run to run
(tests/data/field/h100/h100-a/triton-autotune-run{1,2,3}: perfgate_autotuned_mm at grid 512
block 128 registers 126, grid 512 block 128 registers 128, grid 128 block 256). Inductor
tunes its generated kernels at their first run and caches the choice per machine start: the
runs of one start agree, another start differs (compile-default, h100-a against h100-b:
triton_poi_fused_add_2 grid 4096 block 256 registers 16 -> grid 2048 block 128 registers 18).

A kernel whose configuration differs between the recorded runs is one entry that matches by
name whatever its grid and block, records the configurations it saw (each with its best
duration), and gates only what does not depend on the configuration. An Inductor kernel at one
configuration in every recorded run stays a fully gated entry that records that configuration:
a later check that finds it at another grid or block judges it as "reconfigured" (time,
launches, DRAM bytes); registers alone changing at the same grid and block are gated.
The distinction from shapes: a configuration that varies BETWEEN the runs of one build is a
choice; several configurations present in EVERY run are several shapes, several kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from perfgate.baseline.model import KernelBaseline, LaunchConfig
from perfgate.identity.families import family_of
from perfgate.identity.grouping import KernelGroup, KernelKey, split_work
from perfgate.ingest.launches import Launch

# What an autotuned entry gates: time, launches and the DRAM bytes, which follow from the
# data the kernel reads and writes, not from the tile (113.77 MB and 113.17 MB for the two
# perfgate_rmsnorm_kernel configs of triton-autotune h100-a). Registers, shared memory,
# occupancy, instruction and sector counts, tensor instructions and stall ratios follow the
# tile and move to `info` (kept for the diagnosis, never gated).
CONFIG_INDEPENDENT = ("duration", "total_time", "launches", "dram_bytes")

_REGISTERS = "launch__registers_per_thread"

# What tells the problem sizes of an autotuned kernel apart: the memory traffic it asks for, in
# 32-byte sectors, which its configuration does not change. Instruction counts follow the
# configuration (Triton's softmax_kernel at N=1000: 15.3M instructions at 4 warps, 32.2M at 16;
# tests/data/field/families/fam-a/triton-sizes), and so do global LOAD sectors where a tile is
# reused from L1 (perfgate_autotuned_mm: 12.6M sectors at grid 512, 6.3M at grid 128,
# triton-autotune h100-a). What stays is what is written (global store sectors: the output)
# and what is read from DRAM (the input: ncu flushes the caches before each kernel), the same
# at every configuration within 0.4% in both captures; DRAM writes stay in L2 in part, by
# configuration, and are left out.
TRAFFIC = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "dram__bytes_read.sum")
SECTOR = 32  # bytes
# The traffic recorded in an autotuned size's `info` (sectors a launch), the measure a check
# pairs the sizes it finds with.
TRAFFIC_INFO = "traffic_sectors"
# Below this many sectors apart (64 KiB), two launches are one size whatever the ratio: a tiny
# kernel's few sectors vary by more than the gap.
TRAFFIC_FLOOR = 2048.0
_SHARED = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def config_of(launch: Launch) -> LaunchConfig:
    """A launch's configuration; `runs` left at 0."""
    shared = [v for key in _SHARED if (v := _int(launch.metrics.get(key))) is not None]
    return LaunchConfig(
        launch.grid,
        launch.block,
        _int(launch.metrics.get(_REGISTERS)),
        sum(shared) if shared else None,
    )


def configurations(launches: Sequence[Launch]) -> tuple[LaunchConfig, ...]:
    """Each configuration of the launches with the number of runs (capture files) that used
    it, most runs first, then in order of first launch."""
    runs: dict[tuple[object, ...], set[str]] = {}
    first: dict[tuple[object, ...], LaunchConfig] = {}
    for launch in sorted(launches, key=lambda la: (la.source, la.index)):
        config = config_of(launch)
        runs.setdefault(config.shape, set()).add(launch.source)
        first.setdefault(config.shape, config)
    ordered = sorted(first, key=lambda shape: -len(runs[shape]))
    return tuple(
        LaunchConfig(c.grid, c.block, c.registers, c.shared_memory, len(runs[s]))
        for s in ordered
        for c in (first[s],)
    )


def _per_run(launches: Sequence[Launch]) -> list[frozenset[tuple[object, ...]]]:
    by_run: dict[str, set[tuple[object, ...]]] = {}
    for launch in launches:
        by_run.setdefault(launch.source, set()).add(config_of(launch).shape)
    return [frozenset(shapes) for shapes in by_run.values()]


def tuned_reason(name: str, groups: Sequence[KernelGroup], runs: int) -> str | None:
    """Why the launches of one name (and NVTX range) are one autotuned kernel, or None where
    they are one kernel or several shapes. `runs`: the capture files recorded together.
    An Inductor kernel at one configuration in every run is NOT autotuned here: it stays
    fully gated (an instruction regression of compiled-a's kernels must fail,
    tests/real/test_real_changes.py) and records that configuration (records_configuration)."""
    launches = [la for g in groups for la in g.launches]
    per_run = _per_run(launches)
    if (
        runs >= 2
        and (len(per_run) < runs or len(set(per_run)) > 1)
        and len(set().union(*per_run)) > 1
    ):
        return "its launch configuration differs between the recorded runs"
    return None


def traffic(launch: Launch) -> float | None:
    """The sectors a launch stores plus the sectors it reads from DRAM (TRAFFIC); None where
    the capture lacks either."""
    stored, read = (launch.metrics.get(m) for m in TRAFFIC)
    if not isinstance(stored, int | float) or not isinstance(read, int | float):
        return None
    return float(stored) + float(read) / SECTOR


def median_traffic(launches: Sequence[Launch]) -> float | None:
    values = sorted(v for la in launches if (v := traffic(la)) is not None)
    return values[len(values) // 2] if values else None


def problem_sizes(launches: Sequence[Launch]) -> list[list[Launch]]:
    """An autotuned kernel's launches by problem size: split where their traffic jumps by more
    than WORK_GAP (and TRAFFIC_FLOOR), whatever configuration each ran at; smallest first."""
    return split_work(launches, traffic, TRAFFIC_FLOOR)


def sized_groups(key: KernelKey, launches: Sequence[Launch]) -> list[KernelGroup]:
    """One group per problem size of an autotuned kernel, keyed by its name alone (grid and
    block None) and, where it ran at several sizes, the size's class (work 1 the smallest)."""
    sizes = problem_sizes(sorted(launches, key=lambda la: la.index))
    return [
        KernelGroup(
            KernelKey(key.name, None, None, key.nvtx, index if len(sizes) > 1 else None),
            tuple(sorted(size, key=lambda la: la.index)),
        )
        for index, size in enumerate(sizes, start=1)
    ]


def with_traffic(kernel: KernelBaseline, launches: Sequence[Launch]) -> KernelBaseline:
    """An autotuned size's entry with its traffic in `info` (TRAFFIC_INFO), which a check pairs
    the sizes it finds with; any other entry as it is."""
    value = median_traffic(launches)
    if not kernel.tuned or kernel.match.work is None or value is None:
        return kernel
    return replace(kernel, info={**kernel.info, TRAFFIC_INFO: round(value, 1)})


def recorded_traffic(kernel: KernelBaseline) -> float | None:
    value = kernel.info.get(TRAFFIC_INFO)
    return float(value) if isinstance(value, int | float) and value > 0 else None


# Why a problem size at one configuration in every run is autotuned all the same.
_SIZE_WHY = (
    "one configuration in every recorded run at this problem size, but the kernel's "
    "configuration differs between the runs at another size: its autotuner chooses afresh in "
    "each process"
)


def merge_tuned(
    groups: Sequence[KernelGroup], runs: int
) -> tuple[list[KernelGroup], dict[KernelKey, str]]:
    """The groups with each autotuned kernel's groups made one per problem size (sized_groups:
    Triton's softmax_kernel at N=1000 and N=3000 is two kernels, each with its own choices),
    keyed by its name alone (grid and block None), in order of first launch; and why each
    merged key is autotuned. Whether a kernel is autotuned is decided over all its sizes: an
    autotuner is a property of the function, so a size that happened to get one choice in
    every recorded run is autotuned too (softmax_kernel at N=3000: 8 warps in each fam-a run,
    4 warps on fam-b)."""
    by_name: dict[tuple[str, str | None], list[KernelGroup]] = {}
    for group in groups:
        by_name.setdefault((group.key.name, group.key.nvtx), []).append(group)
    reasons: dict[KernelKey, str] = {}
    out: list[KernelGroup] = []
    for (name, nvtx), members in by_name.items():
        why = tuned_reason(name, members, runs)
        if why is None:
            out.extend(members)
            continue
        launches = [la for g in members for la in g.launches]
        for sized in sized_groups(KernelKey(name, None, None, nvtx), launches):
            out.append(sized)
            reasons[sized.key] = why if len(configurations(sized.launches)) > 1 else _SIZE_WHY
    out.sort(key=lambda g: min(la.index for la in g.launches))
    return out, reasons


def records_configuration(name: str) -> bool:
    """Whether a kernel at one configuration records it: Inductor's generated Triton kernels,
    whose grid and block another machine start may tune differently (compile-default h100-a
    against h100-b). Library kernels keep matching by their grid and block."""
    family = family_of(name)
    return family is not None and family.name == "Inductor"


def with_durations(
    configs: Sequence[LaunchConfig],
    launches: Sequence[Launch],
    duration: Callable[[Sequence[Launch]], float | None],
) -> tuple[LaunchConfig, ...]:
    """Each configuration with its best duration: the least of its per-run `duration`s."""
    by: dict[tuple[object, ...], dict[str, list[Launch]]] = {}
    for launch in launches:
        by.setdefault(config_of(launch).shape, {}).setdefault(launch.source, []).append(launch)
    out = []
    for c in configs:
        values = [v for run in by.get(c.shape, {}).values() if (v := duration(run)) is not None]
        out.append(replace(c, duration=min(values) if values else None))
    return tuple(out)


def best_configuration(configs: Sequence[LaunchConfig]) -> LaunchConfig | None:
    """The fastest configuration the baseline saw (the least recorded best duration); None
    where no duration was recorded."""
    timed = [c for c in configs if c.duration is not None]
    return min(timed, key=lambda c: c.duration or 0.0) if timed else None


def expected_duration(configs: Sequence[LaunchConfig], launches: Sequence[Launch]) -> float | None:
    """What an autotuned entry's launches should take, whatever configuration they ran at:
    the best duration the baseline saw at any configuration. A configuration is the
    autotuner's choice, and a slower choice is a slower kernel: held only to its own
    configuration's time, `perfgate_autotuned_mm` forced onto the slowest configuration one
    recording run used (29.5 -> 40.4 us, +37%, triton-autotune h100-a) passed. The bound is one
    configuration's noise (perfgate.lifecycle.record), so a choice slower than the best beyond
    noise fails, and `slower_choice` names it. None where no duration was recorded."""
    best = best_configuration(configs)
    if best is None or not launches:
        return None
    return best.duration


def _warps(config: LaunchConfig) -> str:
    """ "8 warps" for a block of 256 threads (Triton's num_warps), "" where unknown."""
    if config.block is None:
        return ""
    threads = config.block[0] * config.block[1] * config.block[2]
    warps = -(-threads // 32)
    return f" ({warps} warp{'s' if warps != 1 else ''})"


def describe_choice(config: LaunchConfig) -> str:
    """A configuration as a kernel engineer names it: grid, block with its warps (a Triton
    kernel's num_warps), registers and shared memory."""
    text = config.describe()
    if config.block is None:
        return text
    dims = "x".join(str(v) for v in config.block)
    return text.replace(f"block {dims}", f"block {dims}{_warps(config)}", 1)


def _us(ns: float) -> str:
    return f"{ns / 1000:.1f} us"


def slower_choice(
    configs: Sequence[LaunchConfig],
    launches: Sequence[Launch],
    duration: Callable[[Sequence[Launch]], float | None],
) -> str:
    """What an autotuned kernel slower than the baseline's best ran at, by configuration:
    "the autotuner chose grid 512x1x1 block 128x1x1 (4 warps) registers 126 (40.4 us); the
    baseline's best was grid 128x1x1 block 256x1x1 (8 warps) registers 204 (29.5 us)"; ""
    where every launch ran at the best configuration or no time is known.
    `duration`: the kernel-level duration of some launches (the catalog's measure)."""
    best = best_configuration(configs)
    if best is None or best.duration is None:
        return ""
    by: dict[tuple[object, ...], list[Launch]] = {}
    for launch in launches:
        by.setdefault(config_of(launch).shape, []).append(launch)
    if set(by) == {best.shape}:
        return ""
    known = {c.shape for c in configs}
    chosen = []
    for members in by.values():
        config = config_of(members[0])
        took = duration(members)
        seen = "" if config.shape in known else ", not seen when recorded"
        timed = f" ({_us(took)}{seen})" if took is not None else f" ({seen[2:]})" if seen else ""
        chosen.append(describe_choice(config) + timed)
    return (
        f"the autotuner chose {', '.join(chosen)}; the baseline's best was "
        f"{describe_choice(best)} ({_us(best.duration)}), which an autotuned kernel is held to"
    )


def describe_reconfig(recorded: LaunchConfig, current: Sequence[LaunchConfig]) -> str:
    """A fully gated Triton/Inductor entry found at another grid or block."""
    after = ", ".join(c.describe() for c in current)
    return (
        f"reconfigured: launch configuration {recorded.describe()} -> {after}; "
        f"gating {', '.join(CONFIG_INDEPENDENT)} only (configuration changed)"
    )


def pin_advice(name: str) -> str:
    """How to make the kernel's configuration the same in every run, by who chose it."""
    family = family_of(name)
    if family is not None and family.name == "Inductor":
        return (
            "warm Inductor's on-disk cache (TORCHINDUCTOR_CACHE_DIR) before the profiled run "
            "and capture with that cache, or fix the configs (e.g. no max-autotune)"
        )
    if family is not None and family.library:
        return (
            f"choose a fixed algorithm where {family.name} offers one (e.g. "
            "torch.backends.cudnn.benchmark=False, a cuBLAS algorithm or workspace setting)"
        )
    return (
        "for a Triton kernel, give @triton.autotune one triton.Config (or launch with a fixed "
        "config), or warm the autotune cache outside the profiled range (TRITON_CACHE_DIR, "
        "ncu --nvtx-include / --launch-skip past the tuning launches)"
    )


def tuned_warning(kernel_id: str, name: str, configs: Sequence[LaunchConfig], why: str) -> str:
    seen = "; ".join(f"{c.describe()} in {c.runs} run{'s' if c.runs != 1 else ''}" for c in configs)
    best = best_configuration(configs)
    held = ""
    if best is not None and best.duration:
        fastest = best.duration
        slower = [
            f"{describe_choice(c)} {_us(c.duration)} ({(c.duration / fastest - 1) * 100:+.1f}%)"
            for c in configs
            if c.duration is not None and c is not best and c.duration > fastest
        ]
        held = (
            f" A check holds its duration to the best configuration seen, "
            f"{describe_choice(best)} ({_us(fastest)})"
            + (f"; a run that picks a slower one fails: {', '.join(slower)}" if slower else "")
            + "."
        )
    return (
        f"{kernel_id}: autotuned launch configuration ({why}): recorded as one entry that "
        f"gates {', '.join(CONFIG_INDEPENDENT)} only; seen: {seen}.{held} To gate all its "
        f"metrics and keep the choice from varying, pin the configuration: {pin_advice(name)} "
        "(docs/identity.md)"
    )


def describe_change(recorded: Sequence[LaunchConfig], current: Sequence[LaunchConfig]) -> str:
    """ "" where the check's launches all use the configuration most recorded runs used, else
    what it changed from and to (the recorded ones with their run counts)."""
    if recorded and {c.shape for c in current} == {recorded[0].shape}:
        return ""
    known = {c.shape for c in recorded}
    before = ", ".join(
        f"{c.describe()} ({c.runs} run{'s' if c.runs != 1 else ''})" for c in recorded
    )
    after = ", ".join(
        c.describe() + ("" if c.shape in known else " (not seen when recorded)") for c in current
    )
    return f"reconfigured: autotuned launch configuration {before} -> {after}"
