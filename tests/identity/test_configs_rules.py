"""The rules of perfgate/identity/configs.py one by one (docs/identity.md, "Autotuned kernels").

Every launch here is derived from a real capture: the first launch of
tests/data/field/h100/h100-a/triton-autotune-run1.csv.gz (perfgate_rmsnorm_kernel on an
H100), with only its grid, block, registers, duration, name, source file and index replaced
(dataclasses.replace), so each test states exactly the configurations and runs it is about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from perfgate.baseline.model import LaunchConfig
from perfgate.identity.configs import (
    best_configuration,
    config_of,
    describe_change,
    describe_choice,
    expected_duration,
    merge_tuned,
    pin_advice,
    slower_choice,
    tuned_reason,
    tuned_warning,
    with_durations,
)
from perfgate.identity.grouping import KernelGroup, KernelKey
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Dim3, Launch

CAPTURE = Path(__file__).parents[1] / "data/field/h100/h100-a/triton-autotune-run1.csv.gz"
RUN1, RUN2, RUN3 = "run1.csv.gz", "run2.csv.gz", "run3.csv.gz"
_TIME = "gpu__time_duration.sum"

# Two of perfgate_autotuned_mm's configurations in the field corpus (module docstring).
A: tuple[Dim3, Dim3, int] = ((512, 1, 1), (128, 1, 1), 126)
B: tuple[Dim3, Dim3, int] = ((128, 1, 1), (256, 1, 1), 128)
C: tuple[Dim3, Dim3, int] = ((256, 1, 1), (128, 1, 1), 96)

INDUCTOR = "triton_poi_fused_add_2"
CUBLAS = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
TRITON = "perfgate_autotuned_mm"


@cache
def _real() -> Launch:
    return read_capture(str(CAPTURE)).launches[0]


def launch(
    config: tuple[Dim3, Dim3, int],
    source: str,
    index: int,
    ns: float = 1000.0,
    name: str = TRITON,
) -> Launch:
    """The real launch at `config` (grid, block, registers), in capture `source`."""
    base = _real()
    grid, block, registers = config
    metrics = {
        **base.metrics,
        "launch__registers_per_thread": float(registers),
        "launch__shared_mem_per_block_static": 0.0,
        "launch__shared_mem_per_block_dynamic": 0.0,
        _TIME: ns,
    }
    return replace(
        base,
        grid=grid,
        block=block,
        metrics=metrics,
        source=source,
        index=index,
        name=name,
        function=name,
    )


def cfg(
    config: tuple[Dim3, Dim3, int], runs: int = 0, duration: float | None = None
) -> LaunchConfig:
    grid, block, registers = config
    return LaunchConfig(grid, block, registers, 0, runs, duration)  # no shared memory, as launch()


def group(launches: Sequence[Launch]) -> KernelGroup:
    first = launches[0]
    return KernelGroup(KernelKey(first.name, first.grid, first.block), tuple(launches))


def test_launches_keep_the_real_capture_apart_from_what_was_replaced() -> None:
    la = launch(A, RUN1, 0)
    assert la.device is not None and "H100" in la.device
    assert config_of(la).shape == ((512, 1, 1), (128, 1, 1), 126, 0)


# tuned_reason: a configuration that differs BETWEEN runs is a choice; several in EVERY run
# are several shapes.


def test_two_runs_at_two_configurations_are_one_autotuned_kernel() -> None:
    # The least number of runs that can show a choice between runs is two.
    groups = [group([launch(A, RUN1, 0)]), group([launch(B, RUN2, 0)])]
    assert tuned_reason(TRITON, groups, runs=2) is not None


def test_one_configuration_absent_from_a_run_is_no_choice() -> None:
    # Launched in one run of two, always at one configuration: nothing was chosen.
    groups = [group([launch(A, RUN1, 0), launch(A, RUN1, 1)])]
    assert tuned_reason(TRITON, groups, runs=2) is None


def test_two_configurations_in_every_run_are_two_shapes() -> None:
    groups = [
        group([launch(A, RUN1, 0), launch(A, RUN2, 0)]),
        group([launch(B, RUN1, 1), launch(B, RUN2, 1)]),
    ]
    assert tuned_reason(TRITON, groups, runs=2) is None


def test_two_configurations_not_in_every_run_are_not_shapes() -> None:
    # Runs 1 and 2 each launch A and B, run 3 launches neither: the two configurations are not
    # present in EVERY run, so they are no proof of two shapes; the kernel is autotuned.
    groups = [
        group([launch(A, RUN1, 0), launch(A, RUN2, 0)]),
        group([launch(B, RUN1, 1), launch(B, RUN2, 1)]),
    ]
    assert tuned_reason(TRITON, groups, runs=3) is not None


# merge_tuned: the groups in order of first launch.


def test_merged_groups_come_in_order_of_first_launch() -> None:
    # The autotuned matmul first launches at index 1 (its last at 7); the norm kernel, at one
    # configuration in both runs, first at 3 (last at 4). The matmul launched first.
    norm = launch(C, RUN1, 3, name="perfgate_rmsnorm_kernel")
    norm2 = replace(norm, source=RUN2, index=4)
    mm_a, mm_b = launch(A, RUN1, 1), launch(B, RUN2, 7)
    groups = [group([norm, norm2]), group([mm_a]), group([mm_b])]
    out, reasons = merge_tuned(groups, runs=2)
    merged = KernelKey(TRITON, None, None, None)
    assert [g.key for g in out] == [merged, groups[0].key]
    assert out[0].launches == (mm_a, mm_b)
    assert set(reasons) == {merged}


# with_durations / expected_duration: judged per configuration.


def _mean(launches: Sequence[Launch]) -> float | None:
    values = [v for la in launches if isinstance(v := la.metrics.get(_TIME), float)]
    return sum(values) / len(values) if values else None


def test_a_configuration_keeps_its_least_per_run_duration() -> None:
    launches = [
        launch(A, RUN1, 0, ns=1000.0),
        launch(A, RUN1, 1, ns=1200.0),  # run 1's mean: 1100
        launch(A, RUN2, 0, ns=1300.0),  # run 2's mean: 1300
        launch(B, RUN3, 0, ns=900.0),
    ]
    out = with_durations([cfg(A, 2), cfg(B, 1), cfg(C, 1)], launches, _mean)
    assert [c.duration for c in out] == [1100.0, 900.0, None]
    assert [c.runs for c in out] == [2, 1, 1]


def test_no_launches_expect_no_duration() -> None:
    assert expected_duration([cfg(A, 2, 1000.0)], []) is None


def test_no_recorded_duration_expects_none() -> None:
    assert expected_duration([cfg(A, 2), cfg(B, 1)], [launch(A, RUN1, 0)]) is None


def test_every_launch_expects_the_fastest_configurations_duration() -> None:
    """Issue 31: a launch at a slower recorded configuration is held to the best the baseline
    saw, not to its own configuration's time (the autotuner's slower choice is a slower
    kernel); a configuration never seen, likewise."""
    configs = [cfg(A, 2, 1000.0), cfg(B, 1, 800.0)]
    for launches in ([launch(A, RUN1, 0)], [launch(A, RUN1, 0), launch(C, RUN1, 1)]):
        assert expected_duration(configs, launches) == pytest.approx(800.0)
    assert best_configuration(configs) == configs[1]
    assert best_configuration([cfg(A, 2), cfg(B, 1)]) is None


def test_a_slower_choice_is_named_with_the_best() -> None:
    configs = [cfg(A, 2, 1000.0), cfg(B, 1, 800.0)]

    def mean(some):  # type: ignore[no-untyped-def]
        return sum(float(la.metrics["gpu__time_duration.sum"]) for la in some) / len(some)

    at_a = [launch(A, RUN1, 0, ns=1100.0)]
    said = slower_choice(configs, at_a, mean)
    assert said.startswith(f"the autotuner chose {describe_choice(config_of(at_a[0]))} (1.1 us)")
    assert f"the baseline's best was {describe_choice(configs[1])} (0.8 us)" in said
    new = [launch(C, RUN1, 0, ns=900.0)]
    assert "(0.9 us, not seen when recorded)" in slower_choice(configs, new, mean)
    assert slower_choice(configs, [launch(B, RUN1, 0, ns=900.0)], mean) == ""  # the best one
    assert slower_choice([cfg(A, 2), cfg(B, 1)], at_a, mean) == ""  # no time recorded


# pin_advice: how to pin the configuration, by who chose it.


def test_pin_advice_for_inductor_names_its_cache() -> None:
    advice = pin_advice(INDUCTOR)
    assert "TORCHINDUCTOR_CACHE_DIR" in advice
    assert "triton.Config" not in advice


def test_pin_advice_for_a_library_names_the_library() -> None:
    advice = pin_advice(CUBLAS)
    assert "cuBLAS" in advice
    assert "TORCHINDUCTOR_CACHE_DIR" not in advice


def test_pin_advice_for_a_triton_kernel_names_its_configs() -> None:
    advice = pin_advice(TRITON)
    assert "triton.Config" in advice
    assert "TORCHINDUCTOR_CACHE_DIR" not in advice


# describe_change: "" at the configuration most recorded runs used, else from -> to.


def test_the_configuration_most_runs_used_is_no_change() -> None:
    recorded = [cfg(A, 2), cfg(B, 1)]
    assert describe_change(recorded, [cfg(A)]) == ""


def test_the_configuration_fewer_runs_used_is_a_change() -> None:
    recorded = [cfg(A, 2), cfg(B, 1)]
    text = describe_change(recorded, [cfg(B)])
    assert text.startswith("reconfigured: ")
    assert "not seen when recorded" not in text


def test_a_configuration_never_recorded_is_marked() -> None:
    recorded = [cfg(A, 2), cfg(B, 1)]
    a, b, c = (x.describe() for x in (cfg(A), cfg(B), cfg(C)))
    assert describe_change(recorded, [cfg(B), cfg(C)]) == (
        f"reconfigured: autotuned launch configuration {a} (2 runs), {b} (1 run) -> "
        f"{b}, {c} (not seen when recorded)"
    )


@pytest.mark.parametrize(
    "block, warps",
    [((128, 1, 1), "4 warps"), ((32, 4, 1), "4 warps"), ((8, 4, 2), "2 warps"),
     ((65, 1, 1), "3 warps"), ((32, 1, 1), "1 warp")],
)  # fmt: skip
def test_a_choice_names_its_warps_from_every_block_dimension(block: Dim3, warps: str) -> None:
    """Warps are the block's threads over all three dimensions (a 2D block too), a partial
    warp counted whole (65 threads run 3 warps); a block of unknown shape says none."""
    config = LaunchConfig((512, 1, 1), block, 126)
    dims = "x".join(map(str, block))
    assert f"block {dims} ({warps})" in describe_choice(config)
    unknown = LaunchConfig((512, 1, 1), None, 126)
    assert describe_choice(unknown) == unknown.describe()


def test_the_warning_names_only_the_configurations_slower_than_the_best() -> None:
    """tuned_warning: the best configuration's time, then each configuration slower than it
    with its time (a tie and the best itself are not slower); with no duration recorded, no
    sentence about a held duration, and no division by it."""
    best = LaunchConfig(*A, runs=2, duration=29_500.0)
    tie = LaunchConfig((1024, 1, 1), (128, 1, 1), 126, runs=1, duration=29_500.0)
    slow = LaunchConfig(*B, runs=1, duration=40_400.0)
    text = tuned_warning("mm", "perfgate_autotuned_mm", [best, tie, slow], "why")
    assert f"the best configuration seen, {describe_choice(best)} (29.5 us)" in text
    held = text.split("a run that picks a slower one fails: ", 1)[1]
    assert held.startswith(f"{describe_choice(slow)} 40.4 us (+36.9%).")
    assert describe_choice(tie) not in held and describe_choice(best) not in held
    untimed = [replace(c, duration=None) for c in (best, slow)]
    quiet = tuned_warning("mm", "perfgate_autotuned_mm", untimed, "why")
    assert "best configuration seen" not in quiet and quiet.startswith("mm: autotuned")
