"""Kernel identity on issue 33's families (items 2 and 3): one name compiled for several problem
sizes is several kernels, XLA's renumbered fusions are the same kernels, and library families
are named.

Real captures (tests/workloads/families.py, triton_families.py): three runs of each workload
on machine start fam-a (the baseline), one run of the unchanged build and of each real change
on start fam-b. Expected values come from the workloads' facts (softmax_kernel reads 16384 bf16
rows of N=1000 and of N=3000; XLA renumbers fusions when the program changes), worked out
from the raw launches here, never from the output under test."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.identity.configs import config_of
from perfgate.identity.families import family_of
from perfgate.identity.grouping import group_launches
from perfgate.identity.matching import match
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, Launch, merge
from perfgate.ingest.names import normalise, short_name
from perfgate.judge.comparison import State
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check
from perfgate.verdicts.model import CheckResult, KernelVerdict
from tests.conftest import ROOT

FAMILIES = ROOT / "tests" / "data" / "field" / "families"
ROWS = 16384  # softmax_kernel's rows (tests/workloads/triton_families.py)
BF16 = 2  # bytes
SIZES = (1000, 3000)  # its n_cols, each its own @triton.autotune key


@functools.cache
def _runs(workload: str) -> Capture:
    return merge(
        [read_capture(FAMILIES / "fam-a" / f"{workload}-run{i}.csv.gz") for i in (1, 2, 3)]
    )


@functools.cache
def _baseline(workload: str) -> Baseline:
    return record(_runs(workload), RecordSettings()).baseline


@functools.cache
def _capture(run: str) -> Capture:
    return read_capture(FAMILIES / "fam-b" / f"{run}-run1.csv.gz")


@functools.cache
def _check(workload: str, run: str) -> CheckResult:
    return check(_baseline(workload), _capture(run))


def _n_cols(launch: Launch) -> int:
    """The row length a softmax_kernel launch ran at, from the bytes it read from DRAM (its
    input, 16384 bf16 rows): what the workload passed, whatever configuration ran it."""
    read = launch.metrics["dram__bytes_read.sum"]
    assert isinstance(read, float)
    return round(read / (ROWS * BF16) / 100) * 100


def _softmax(launches: Sequence[Launch]) -> list[Launch]:
    return [la for la in launches if la.name == "softmax_kernel"]


def _entries(baseline: Baseline) -> list[KernelBaseline]:
    return [k for k in baseline.kernels if k.match.name == "softmax_kernel"]


def _size_of(entry: KernelBaseline) -> int:
    """Which size an entry is: the one whose recorded launches ran at its configurations."""
    mine = {c.shape for c in entry.configurations}
    sizes = {
        _n_cols(la)
        for la in _softmax(_runs("triton-sizes").launches)
        if config_of(la).shape in mine
    }
    assert len(sizes) == 1, (entry.id, sizes)  # the configurations of one size only
    return sizes.pop()


def _verdict(result: CheckResult, kernel: str) -> KernelVerdict:
    return next(v for v in result.verdicts if v.kernel == kernel)


def test_the_workload_runs_softmax_at_two_sizes_at_one_grid() -> None:
    """The facts the tests below stand on, from the raw launches."""
    launches = _softmax(_runs("triton-sizes").launches)
    assert {_n_cols(la) for la in launches} == set(SIZES)
    assert len({la.grid for la in launches}) == 1
    # Each run launches each size once.
    for source in {la.source for la in launches}:
        assert sorted(_n_cols(la) for la in launches if la.source == source) == list(SIZES)


def test_two_problem_sizes_are_two_entries_each_with_its_own_configurations() -> None:
    entries = _entries(_baseline("triton-sizes"))
    assert len(entries) == len(SIZES), [e.id for e in entries]
    assert sorted(_size_of(e) for e in entries) == list(SIZES)
    for entry in entries:
        # Autotuned: matched by name and size whatever the grid and block, time judged against
        # the best configuration of its size.
        assert entry.tuned and entry.match.grid is None and entry.match.block is None
        # One launch of its size per recorded run: its configurations' runs add up to the runs.
        assert sum(c.runs for c in entry.configurations) == 3, entry.configurations
    assert len({e.id for e in entries}) == len(entries)
    assert all(e.id.startswith("softmax_kernel #work") for e in entries)


def _best(size: int) -> tuple[float, tuple[object, ...]]:
    """The fastest recorded launch of one size: its time and configuration."""
    times = [
        (la.metrics["gpu__time_duration.sum"], config_of(la).shape)
        for la in _softmax(_runs("triton-sizes").launches)
        if _n_cols(la) == size
    ]
    time, shape = min(times, key=lambda t: float(t[0]))  # type: ignore[arg-type]
    assert isinstance(time, float)
    return time, shape


def test_each_size_is_judged_against_the_best_configuration_of_its_own_size() -> None:
    result = _check("triton-sizes", "triton-sizes")
    for entry in _entries(_baseline("triton-sizes")):
        size = _size_of(entry)
        best, _ = _best(size)
        verdict = _verdict(result, entry.id)
        duration = next(c for c in verdict.comparisons if c.metric == "duration")
        assert duration.baseline == best, (entry.id, duration.baseline, best)
        now = [la for la in _softmax(_capture("triton-sizes").launches) if _n_cols(la) == size]
        took = min(float(la.metrics["gpu__time_duration.sum"]) for la in now)  # type: ignore[arg-type]
        # fam-b's autotuner picked 16 warps for N=1000 (twice its best's time) and another
        # choice for N=3000 no slower than that size's best: only the first fails.
        slower = took > best * 1.5
        assert (duration.state is State.REGRESSED) == slower, (entry.id, took, best)


def test_a_slower_choice_is_the_first_finding_naming_both_configurations_and_the_lever() -> None:
    for run in ("triton-sizes", "triton-sizes-fp32-out"):
        result = _check("triton-sizes", run)
        failed = 0
        for entry in _entries(_baseline("triton-sizes")):
            verdict = _verdict(result, entry.id)
            duration = next(c for c in verdict.comparisons if c.metric == "duration")
            if duration.state is not State.REGRESSED:
                continue
            titles = [c.title for c in verdict.causes]
            best, shape = _best(_size_of(entry))
            chosen = {
                config_of(la).shape
                for la in _softmax(_capture(run).launches)
                if _n_cols(la) == _size_of(entry)
            }
            if chosen == {shape}:
                # Slower at its own best configuration (N=3000 writing fp32): no choice to name.
                assert "Slower autotuner choice" not in titles, titles
                continue
            failed += 1
            # First; only a change of the kernel's own code (the fp32 output, which every
            # configuration writes) is told before it, and nothing that follows the tile
            # (the occupancy limiter of another num_warps) is.
            ahead = titles[: titles.index("Slower autotuner choice")]
            assert ahead == ([] if run == "triton-sizes" else ["Output written wider"]), titles
            first = verdict.causes[len(ahead)]
            # Its own size's best configuration, by its block and time, and the one chosen.
            block = "x".join(str(v) for v in shape[1])  # type: ignore[union-attr]
            assert f"the baseline's best was grid 16384x1x1 block {block}" in first.detail
            assert f"({best / 1000:.1f} us)" in first.detail, first.detail
            assert first.detail.startswith("the autotuner chose grid "), first.detail
            assert "warps" in first.detail
            assert "triton.Config" in first.lever and "autotune cache" in first.lever
        # N=1000 picked a slower num_warps on fam-b in both runs.
        assert failed >= 1, run


def test_an_autotuned_gemm_at_one_size_stays_one_entry() -> None:
    """Its load sectors follow the tile (a GEMM re-reads operands per tile), its stores and
    DRAM reads do not: perfgate_autotuned_mm's configurations are one problem, one entry."""
    field = ROOT / "tests" / "data" / "field" / "h100" / "h100-a"
    runs = merge([read_capture(field / f"triton-autotune-run{i}.csv.gz") for i in (1, 2, 3)])
    loads = {
        la.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
        for la in runs.launches
        if la.name == "perfgate_autotuned_mm"
    }
    assert len(loads) > 1  # the fact: load sectors differ between its configurations
    entries = [
        k for k in record(runs, RecordSettings()).baseline.kernels
        if k.match.name == "perfgate_autotuned_mm"
    ]  # fmt: skip
    assert len(entries) == 1 and entries[0].tuned and entries[0].match.work is None


# ------------------------------------------------------------------ XLA's renumbered fusions

_NUMBER = re.compile(r"_\d+$")


def _unnumbered(name: str) -> str:
    return _NUMBER.sub("", name)


def test_xla_names_are_normalised_by_their_number_only() -> None:
    for a, b in (
        ("gemm_fusion_dot_general_8", "gemm_fusion_dot_general_10"),
        ("loop_multiply_fusion", "loop_multiply_fusion_2"),
        ("input_reduce_fusion_1", "input_reduce_fusion_3"),
        ("wrapped_transpose", "wrapped_transpose_4"),
        ("fusion_3", "fusion"),
    ):
        assert normalise(a) == normalise(b), (a, b)
    for a, b in (
        ("loop_add_fusion", "loop_multiply_fusion"),  # other ops: another kernel
        ("gemm_fusion_dot_general_8", "gemm_fusion_dot_8"),
        ("copy_vec_1", "copy_vec_2"),  # not XLA's: a user's kernels keep their names
    ):
        assert normalise(a) != normalise(b), (a, b)
    # Ids keep XLA's number: it is all that tells its fusions apart.
    assert short_name("gemm_fusion_dot_3") == "gemm_fusion_dot_3"


def _renumbered_pairs() -> dict[str, str]:
    """Baselined jax-train fusions absent by name from jax-remat, each with the one jax-remat
    kernel of its name but for the number, at its grid and block, with its exact instruction
    count: renamed only by XLA's numbering."""
    before = group_launches(_runs("jax-train").launches)
    after = group_launches(_capture("jax-remat").launches)
    names_after = {g.key.name for g in after}
    out: dict[str, str] = {}
    for old in before:
        if old.key.name in names_after:
            continue
        same = [
            g for g in after
            if _unnumbered(g.key.name) == _unnumbered(old.key.name)
            and (g.key.grid, g.key.block) == (old.key.grid, old.key.block)
            and g.instructions == old.instructions
        ]  # fmt: skip
        if len(same) == 1:
            out[old.key.name] = same[0].key.name
    return out


def test_xla_fusions_renumbered_by_another_program_are_matched_not_missing_and_new() -> None:
    pairs = _renumbered_pairs()
    # gemm_fusion_dot_general_8 -> _10, _12 -> _14, gemm_fusion_dot_5 -> _6, loop_multiply_fusion
    # (grid 1) -> loop_multiply_fusion_2: jax.checkpoint renumbered them.
    assert len(pairs) >= 3, pairs
    baseline = _baseline("jax-train")
    matching = match(baseline, group_launches(_capture("jax-remat").launches))
    ids = {k.match.name: k.id for k in baseline.kernels}
    for old, new in pairs.items():
        found = matching.groups.get(ids[old])
        assert found and [g.key.name for g in found] == [new], (old, new, found)
        assert matching.how[ids[old]].startswith("renamed"), matching.how[ids[old]]
    result = _check("jax-train", "jax-remat")
    missing = {v.name for v in result.verdicts if v.state.name == "MISSING"}
    assert not missing & set(pairs), missing & set(pairs)


def test_the_unchanged_jax_build_matches_every_fusion() -> None:
    result = _check("jax-train", "jax-train")
    assert not [v.kernel for v in result.verdicts if v.state.name in ("MISSING", "NEW")]


# ---------------------------------------------------------------------------------- families


def test_cub_kernels_are_the_cub_family_even_with_aten_template_arguments() -> None:
    launches = [*_runs("cub").launches, *_runs("moe").launches]
    dispatch = {la.name for la in launches if re.search(r"::Device\w+Kernel<", la.name)}
    assert len(dispatch) >= 8  # radix sort, select, reduce, scan-by-key, compact
    assert {f.name if (f := family_of(n)) else None for n in dispatch} == {"CUB"}
    # PyTorch's nonzero runs CUB with an ATen functor: still CUB.
    assert any("at::<unnamed>::NonZeroOp" in n for n in dispatch)
    # ATen's own kernels stay ATen.
    assert all(
        (f := family_of(la.name)) is not None and f.name == "ATen"
        for la in launches
        if la.name.startswith("void at::vectorized_elementwise_kernel")
    )


def test_xla_fusions_are_the_xla_family() -> None:
    names = {la.name for la in _runs("jax-train").launches}
    assert {f.name if (f := family_of(n)) else None for n in names} == {"XLA"}
    assert family_of("wrapped_transpose_2").name == "XLA"  # type: ignore[union-attr]
    assert family_of("triton_poi_fused_add_2").name == "Inductor"  # type: ignore[union-attr]
    assert family_of("transpose_tiled") is None  # an NVRTC user kernel


def test_cutlass_grouped_gemm_is_cutlass_named_by_its_task() -> None:
    grouped = (
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
        "GroupProblemShape<cute::tuple<int, int, int>>, cutlass::gemm::collective::"
        "CollectiveMma<...>>>(T1::Params)"
    )
    family = family_of(grouped)
    assert family is not None and family.name == "CUTLASS" and "grouped" in family.task
    plain = family_of(
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm>(T1::Params)"
    )
    assert plain is not None and plain.name == "CUTLASS" and "grouped" not in plain.task
