"""What `perfgate capture` asks ncu for: the cheapest ncu command that covers the baselines.

Only the raw metrics the baselines gate are requested, each through the first formula usable on
the GPU's compute capability, and stall metrics through the stall family that costs the fewest
replay passes (perfgate.pass_cost). The kernel filter is built from the baselined kernels, so
kernels nobody gates are not replayed at all. Everything here is pure: no ncu, no GPU.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.baseline.selection import below
from perfgate.common.errors import UsageError
from perfgate.ingest.launches import cc_version
from perfgate.ingest.names import function_name
from perfgate.ingest.scope import ALL, SCOPE_FILTERS, SCOPE_NAMES, capture_scope
from perfgate.ingest.scope import differ as scope_differs
from perfgate.metrics.catalog import CATALOG_LIST, ncu_metrics
from perfgate.metrics.passes import CLOCK_METRICS, DIAGNOSIS, FULL, GATE, gate_part
from perfgate.metrics.stalls import FAMILY_BY_NAME, ISSUING, StallFamily, stall_reasons_for
from perfgate.ncu.census import pushpop_ranges

# The stall family a capture asks for when a baseline gates stall counters. Families 1 to 4 of
# perfgate.metrics.stalls are one comparability group, so any of them checks a baseline recorded in
# another; this one costs the fewest passes next to the default gate set (docs/capture.md).
CAPTURE_STALL_FAMILY = "per_issue_active"
# Always asked for: no replay pass, and they name the GPU in the capture.
FREE_METRICS = ("device__attribute_display_name",)
# A kernel filter longer than this falls back to function names, then to no filter: ncu
# compiles it with std::regex, whose recursion grows with the pattern.
MAX_FILTER = 4000
_REGEX_SPECIAL = set("\\^$.|?*+()[]{}")
REPLAY_MODES = ("kernel", "application")
# ncu's cache and clock control, passed explicitly and recorded (sidecar, fingerprint): cache
# control changes values, not only noise (seen: one kernel's DRAM read bytes 20 times larger
# with `all` than with `none`). `all` is ncu's default, which every capture of the corpus used.
CACHE_CONTROL = "all"


class ClockControl(enum.Enum):
    """ncu's --clock-control. NONE (perfgate's default): the GPU runs at whatever clock its
    boost logic picks, as the program does without ncu; every capture of the corpus was taken
    so, and the time floors are measured that way. BASE (ncu's own default): ncu locks the
    clocks to base for each profiled kernel, which steadies durations where a runner allows it
    but times the kernel at a clock production never runs at (docs/noise.md "The clock behind
    a duration")."""

    NONE = "none"
    BASE = "base"


CLOCK_CONTROL = ClockControl.NONE.value
# A diagnosis capture profiles this many launches of each failing kernel unless told otherwise.
DIAGNOSIS_LAUNCHES = 2


@dataclass(frozen=True)
class CaptureOptions:
    """`perfgate capture`'s options, as the CLI read them."""

    baselines: tuple[str, ...]
    program: tuple[str, ...]
    output: str = "capture.csv"
    replay_mode: str = "kernel"
    kernels: tuple[str, ...] = ()  # the user's --kernel regexes, added to the baselines'
    launch_skip: int | None = None
    launch_count: int | None = None
    nvtx_include: tuple[str, ...] = ()
    all_kernels: bool = False  # no kernel filter from the baselines
    ncu: str = "ncu"
    cc: str | None = None  # the GPU's compute capability, when known before the run
    gpu: str | None = None  # the GPU's name, when known (selects baselines of a directory)
    allow_program_failure: bool = False  # write the capture of a program that exited non-zero
    keep_report: bool = False  # keep ncu's .ncu-rep beside the capture
    # gate: the one-pass gate set (perfgate.metrics.passes); full: every gated metric (the
    # single-phase capture); diagnosis: every gated metric, of `diagnose` kernels only.
    phase: str = FULL
    clock_control: ClockControl = ClockControl.NONE
    diagnose: tuple[str, ...] = ()  # the failing kernels' names (diagnosis phase)
    # --phases auto: the phase is the baselines' time basis (a baseline of full captures, as
    # by hand, gets a full capture: a gate capture's durations would not be judged against
    # it), and with no launch filter given, the baselines' own scope is applied.
    follow_baseline: bool = False
    # A push/pop --nvtx-include range (NAME/) is checked by a census run (perfgate.ncu.census):
    # it covers one thread, and a training step's backward pass runs on another.
    census: bool = True


@dataclass(frozen=True)
class CapturePlan:
    """The ncu run and the import that turns its report into the capture."""

    profile: tuple[str, ...]  # ncu ... -o REPORT --log-file LOG PROGRAM ARGS...
    metrics: tuple[str, ...]  # raw metrics requested
    gated: tuple[str, ...]  # of those, the ones a baseline needs (checked after the run)
    kernel_filter: str | None  # the regex given to ncu, None: every kernel
    baselines: tuple[str, ...]  # the baseline files used
    notes: tuple[str, ...] = ()
    program: tuple[str, ...] = field(default_factory=tuple)
    phase: str = FULL

    def import_command(self, ncu: str, report: str) -> tuple[str, ...]:
        return (ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base")

    def shell_text(self) -> str:
        """The command as a shell would read it: for showing, never for running."""
        return shlex.join(self.profile)


def baseline_files(paths: Iterable[str]) -> list[str]:
    """The files behind --baseline: a file as it is, a directory's *.yaml and *.yml, its
    subfolders' too (baselines/<gpu>/*.yaml: perfgate.baseline.selection, as check reads it)."""
    out: list[str] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = [str(f) for f in below(p)]
            if not found:
                raise UsageError("no *.yaml or *.yml baseline in this folder or below", given)
            out.extend(found)
        elif p.exists():
            out.append(given)
        else:
            raise UsageError("no such baseline file or directory", given)
    return list(dict.fromkeys(out))


def _recorded_gpu(baseline: Baseline) -> tuple[str | None, str | None]:
    # The fingerprint's GPU (a baseline older than fingerprints: its provenance's).
    return baseline.gpu.gpu, baseline.gpu.cc


def select_baselines(
    baselines: Sequence[Baseline], gpu: str | None
) -> tuple[list[Baseline], list[str]]:
    """Of several baselines, those recorded on this GPU (by name); all when none says so."""
    if gpu is None or len(baselines) < 2:
        return list(baselines), []
    mine = [b for b in baselines if _recorded_gpu(b)[0] == gpu]
    if mine:
        return mine, [f"{len(mine)} of {len(baselines)} baselines were recorded on {gpu}"]
    return list(baselines), [f"no baseline was recorded on {gpu}: covering all of them"]


def _stall_family(metric: MetricBaseline) -> StallFamily:
    if metric.formula_group == "sampling":
        return FAMILY_BY_NAME["pc_sampling"]
    return FAMILY_BY_NAME[CAPTURE_STALL_FAMILY]


def metric_inputs(metric: MetricBaseline, cc: str | None) -> tuple[str, ...]:
    """The raw metrics one baselined metric needs on `cc`, in the group it was recorded in."""
    defn = metric.definition
    if defn.stall is not None:
        fam = _stall_family(metric)
        if metric.reasons is not None:
            reasons: tuple[str, ...] = tuple(metric.reasons)
        elif defn.reason and defn.stall.value == "cpi":
            reasons = (defn.reason,)
        else:
            reasons = stall_reasons_for(cc, fam.name)
        names = [fam.metric(r) for r in reasons]
        if defn.reason and defn.reason not in reasons:
            names.append(fam.metric(defn.reason))
        if defn.stall.value == "cpi" and not fam.per_instruction:
            names.append(fam.metric(ISSUING))
        return tuple(dict.fromkeys(names))
    version = cc_version(cc)
    for formula in defn.formulas_for(metric.formula_group) or defn.formulas:
        if formula.for_cc(version):
            return formula.inputs
    return ()


def gated_metrics(baselines: Sequence[Baseline], cc: str | None) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for baseline in baselines:
        for kernel in baseline.kernels:
            for metric in kernel.metrics:
                for raw in metric_inputs(metric, cc):
                    names[raw] = None
    return tuple(names)


def escape_regex(text: str) -> str:
    """Escape for ncu's regex (ECMAScript): only the special characters, since an escaped
    space or comma is an error there, unlike in Python."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


# Inductor numbers its kernels per graph (perfgate.ingest.names.normalise): a renumbered kernel
# is the same kernel to `check`, so the filter follows the number.
_INDUCTOR = re.compile(r"^(triton_(?:poi|red|per|tem|for|mm|bmm)_\w*?)_\d+$")


def base_name(kernel: KernelBaseline) -> str | None:
    """The pattern of a baselined kernel's function name as ncu's `--kernel-name-base function`
    sees it (no namespace, template arguments or parameters); None for a regex match.

    Not the full demangled name: seen on an H200, the name ncu matches a demangled filter
    against differs from the "Kernel Name" of its CSV for templates (`<(int)4, ...>` and
    `at::native::` there, `<4, ...>` and `at::` in the CSV), so exact names miss every templated
    kernel (tests/data/h200/capture/README.md)."""
    match = kernel.match
    if match.regex is not None:
        return None
    function = match.function or (function_name(match.name) if match.name else None)
    if not function:
        return None
    base = function.rsplit("::", 1)[-1]
    inductor = _INDUCTOR.match(base)
    if inductor:
        return escape_regex(inductor.group(1)) + "_[0-9]+"
    return escape_regex(base)


def kernel_filter(
    baselines: Sequence[Baseline], extra: Sequence[str]
) -> tuple[str | None, list[str]]:
    """One regex for ncu's --kernel-name (function base): every baselined kernel's function,
    plus the user's --kernel patterns."""
    kernels = [k for b in baselines for k in b.kernels]
    user = "|".join(f"({e})" for e in extra)
    if not kernels:
        return user or None, []
    bases = [base_name(k) for k in kernels]
    if any(b is None for b in bases):
        return user or None, [
            "a baseline matches kernels by regex, which ncu cannot apply to the same names: "
            "profiling every kernel"
        ]
    regex = "^(" + "|".join(dict.fromkeys(b for b in bases if b)) + ")$"
    if user:
        regex += "|" + user
    if len(regex) > MAX_FILTER:
        return user or None, [
            f"the kernel filter would be over {MAX_FILTER} characters: profiling every kernel"
        ]
    return regex, []


def _program(argv: Sequence[str]) -> tuple[str, ...]:
    if not argv:
        raise UsageError("no program to profile: perfgate capture ... -- PROGRAM ARGS...")
    first = argv[0]
    # ncu would read a program named like an option as one.
    if first.startswith("-"):
        first = "./" + first
    return (first, *argv[1:])


def build_plan(
    options: CaptureOptions,
    report: str,
    log: str,
    baselines: Sequence[Baseline] | None = None,
) -> CapturePlan:
    """The ncu command for `options`; `baselines` when already loaded (tests)."""
    if options.replay_mode not in REPLAY_MODES:
        raise UsageError(f"--replay-mode must be one of {', '.join(REPLAY_MODES)}")
    files = baseline_files(options.baselines)
    loaded = list(baselines) if baselines is not None else [load_baseline(f) for f in files]
    chosen, notes = select_baselines(loaded, options.gpu)
    cc = options.cc or next((c for b in chosen if (c := _recorded_gpu(b)[1])), None)
    gated = gated_metrics(chosen, cc)
    if not gated:
        raise UsageError("the baselines gate no metric: nothing to capture")
    phase, said = _phase(options, chosen)
    notes.extend(said)
    options = replace(options, phase=phase)
    if options.phase == DIAGNOSIS:
        # The rich set a capture by hand takes (perfgate metrics --ncu): a baseline recorded
        # from gate captures gates the gate set alone, and its diagnosis side (`info`) was
        # measured from full captures, whose metrics the failing kernels are explained by.
        # Stall counters once: the baselines' own family where they gate stalls (the
        # catalog's first family beside it would cost another replay pass), else the catalog's.
        stalls = any(m.definition.stall is not None for b in chosen for k in b.kernels
                     for m in k.metrics)  # fmt: skip
        names = [m.name for m in CATALOG_LIST if not (stalls and m.stall is not None)]
        gated = tuple(dict.fromkeys([*gated, *ncu_metrics(cc, names)]))
    if options.phase == GATE:
        gated = gate_part(gated)
        if not gated:
            raise UsageError(
                "the baselines gate no metric of the one-pass gate set (docs/capture.md): "
                "capture with --phases full"
            )
    # The clock each duration ran at comes with every capture: it costs no extra pass.
    metrics = tuple(dict.fromkeys([*gated, *CLOCK_METRICS, *FREE_METRICS]))
    more: list[str] = []
    regex: str | None
    if options.phase == DIAGNOSIS:
        regex = diagnosis_filter(options.diagnose)
    elif options.all_kernels:
        regex = "|".join(f"({k})" for k in options.kernels) or None
    else:
        regex, more = kernel_filter(chosen, options.kernels)
    notes.extend(more)
    cmd: list[str] = [
        options.ncu, "--cache-control", CACHE_CONTROL,
        "--clock-control", options.clock_control.value,
        "--target-processes", "all",
        "--replay-mode", options.replay_mode, "--metrics", ",".join(metrics),
    ]  # fmt: skip
    if regex:
        cmd += ["--kernel-name-base", "function", "--kernel-name", f"regex:{regex}"]
    if options.launch_skip is not None:
        cmd += ["--launch-skip", str(options.launch_skip)]
    if options.launch_count is not None:
        cmd += ["--launch-count", str(options.launch_count)]
    elif options.phase == DIAGNOSIS:
        cmd += ["--launch-count", str(DIAGNOSIS_LAUNCHES * max(1, len(options.diagnose)))]
    nvtx = bool(options.nvtx_include) or any(
        b.by_nvtx or any(k.match.nvtx for k in b.kernels) for b in chosen
    )
    if nvtx:
        cmd.append("--nvtx")
    for rng in options.nvtx_include:
        cmd += ["--nvtx-include", rng]
    if options.phase != DIAGNOSIS:
        extra, said = _scope_filters(options, chosen, cmd)
        if any(a.startswith("--nvtx-") for a in extra) and "--nvtx" not in cmd:
            cmd.append("--nvtx")  # ncu reads NVTX ranges only when told to
        cmd += extra
        notes.extend(said)
    if options.census and options.phase != DIAGNOSIS and (ranges := pushpop_ranges(cmd)):
        notes.append(
            f"{', '.join(map(repr, ranges))} is a push/pop NVTX range, which covers only the "
            "thread that opened it: a census run follows the capture (the program once more "
            "under ncu, nothing replayed) to find kernels launched outside it; --no-census "
            "skips it"
        )
    cmd += ["--force-overwrite", "--export", report, "--log-file", log]
    program = _program(options.program)
    return CapturePlan(
        profile=(*cmd, *program),
        metrics=metrics,
        gated=gated,
        kernel_filter=regex,
        baselines=tuple(files),
        notes=tuple(notes),
        program=program,
        phase=options.phase,
    )


def _phase(options: CaptureOptions, chosen: Sequence[Baseline]) -> tuple[str, list[str]]:
    """The phase to capture: the baselines' time basis under --phases auto; the one asked
    for otherwise, with a note when the baselines hold durations of the other basis (a check
    will not judge them: docs/check.md "Not judged")."""
    bases = {b.gpu.time_basis for b in chosen}
    if options.phase == DIAGNOSIS:
        return DIAGNOSIS, []
    if options.follow_baseline:
        return (GATE if bases == {GATE} else FULL), []
    other = sorted(b.path for b in chosen if b.gpu.time_basis != options.phase)
    if not other:
        return options.phase, []
    return options.phase, [
        f"{', '.join(other)} holds durations of {'gate' if options.phase == FULL else 'full'} "
        f"captures: a {options.phase} capture's durations are not judged against it (check "
        "fails unless --waive time-basis); --phases auto captures what the baseline needs"
    ]


def scope_arguments(scope: str) -> list[str]:
    """ncu's arguments for a canonical scope text (perfgate.ingest.scope), launch filters
    only: perfgate capture builds its own kernel-name filter."""
    if scope == ALL:
        return []
    options = "|".join(re.escape(o) for o in SCOPE_FILTERS)
    found = re.findall(rf"(?:^| )({options}) (.*?)(?= (?:{options}) |$)", scope)
    return [a for o, v in found if o not in SCOPE_NAMES for a in (o, v)]


def _scope_filters(
    options: CaptureOptions, chosen: Sequence[Baseline], cmd: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The baselines' own launch filters when none was given (a baseline recorded with
    `--nvtx-include step/` is re-captured with it), and a note when the launch filters given
    leave the capture's scope other than the baselines' (its launch counts are then not
    judged)."""
    scopes = {b.gpu.scope for b in chosen if b.gpu.scope is not None}
    given = options.launch_skip is not None or options.launch_count is not None
    given = given or bool(options.nvtx_include)
    extra: list[str] = []
    if options.follow_baseline and not given and len(scopes) == 1:
        extra = scope_arguments(next(iter(scopes)))
    scope = capture_scope([*cmd, *extra, "PROGRAM"])
    other = sorted(b.path for b in chosen if scope_differs(b.gpu.scope, scope))
    if not other:
        return extra, []
    return extra, [
        f"this capture's scope ({scope}) is not that of {', '.join(other)}: its launch counts "
        "are not judged (check fails unless --waive scope); capture with the baseline's "
        "launch filters, or give none and let --phases auto apply them"
    ]


def diagnosis_filter(names: Sequence[str]) -> str:
    """ncu's --kernel-name regex (function base) for the failing kernels `names`."""
    bases: list[str] = []
    for name in names:
        function = function_name(name) or name
        base = function.rsplit("::", 1)[-1]
        inductor = _INDUCTOR.match(base)
        bases.append(
            escape_regex(inductor.group(1)) + "_[0-9]+" if inductor else escape_regex(base)
        )
    if not bases:
        raise UsageError("a diagnosis capture needs the names of the kernels that failed")
    return "^(" + "|".join(dict.fromkeys(bases)) + ")$"
