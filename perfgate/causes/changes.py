"""Change findings: the kernels gone from a capture and the kernels new to it, grouped by the
one change that explains them (issue 22).

A flag flipped at the caller's level (TF32 off, another SDPA backend, channels_last removed,
another torch.compile mode) swaps a whole set of library kernels at once; reported kernel by
kernel it reads as a dozen unrelated substitutions. Each rule reads only the names of the
missing and new kernels (what each library writes in them: `tf32`, `ffma`, `bf16`,
`tensor16x8x8`, `nhwc`, `flash`, `triton_tem_`) and claims the kernels its change explains; one
registry runs them in order, each on what the rules before it left. A finding says what was
replaced by what, the GPU time of those kernels before and after, and the lever.

The rules live by family in perfgate.causes.changes_types, changes_paths, changes_picks
and changes_work, over the model of perfgate.causes.changes_model; this module holds their
one registry, RULES, and find_changes, which runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgate.causes.changes_model import (
    MISSING,
    NEW,
    RECONFIGURED,
    RECOUNTED,
    SCALED,
    SHOWN,
    ChangeFinding,
    ChangeKernel,
    Kernels,
    Rule,
    work_ratios,
)
from perfgate.causes.changes_names import label
from perfgate.causes.changes_paths import attention_rule, compile_rule, layout_rule, optimizer_rule
from perfgate.causes.changes_picks import heuristic_rule, user_code_rule
from perfgate.causes.changes_types import dtype_rule, element_type_rule, precision_rule
from perfgate.causes.changes_work import recomputation_rule, scaled_work_rule

# The model's names, importable from here for the callers of find_changes.
__all__ = [
    "MISSING",
    "NEW",
    "RECONFIGURED",
    "RECOUNTED",
    "RULES",
    "SCALED",
    "ChangeFinding",
    "ChangeKernel",
    "find_changes",
    "work_ratios",
]


def _time(kernels: Kernels) -> float:
    return sum(k.time_ns for k in kernels)


# Earlier rules claim first: the attention backend before the math mode (its kernels say
# bf16 too), the memory format before the dtype (channels_last kernels carry a dtype), the
# library's own heuristic and user code last. The flag: the rule needs some kernel of the
# program unchanged (a library's other pick, a user kernel's new code are changes of one
# program; with nothing left in common the capture may be another program's).
RULES: tuple[tuple[Rule, bool], ...] = (
    # The whole model's dtype first: everything else that moved with it (its SDPA call falling
    # to the math path in fp32, its GEMMs) is a consequence (hf-decoder bf16 -> fp32).
    (dtype_rule, False),
    (attention_rule, False),
    (compile_rule, False),
    (precision_rule, False),
    (layout_rule, False),
    (optimizer_rule, True),
    (element_type_rule, True),
    # The kernels still there (a problem grown, a forward recomputed) before the user-code
    # rule, which would take the recomputed graph's renumbered fusions for a code change.
    (scaled_work_rule, True),
    (recomputation_rule, True),
    (heuristic_rule, True),
    (user_code_rule, True),
)


def _named(kernels: Kernels) -> tuple[tuple[str, float], ...]:
    """Each label once, with its launches a run, heaviest first."""
    time: dict[str, float] = {}
    launches: dict[str, float] = {}
    for k in kernels:
        name = label(k.name)
        time[name] = time.get(name, 0.0) + k.time_ns
        launches[name] = launches.get(name, 0.0) + k.launches
    order = sorted(time, key=lambda n: (-time[n], n))
    return tuple((n, launches[n]) for n in order[:SHOWN])


def _claim(
    rule: Rule, left: list[ChangeKernel]
) -> tuple[ChangeFinding, set[tuple[str, str]]] | None:
    """One finding of a rule on the kernels no rule has claimed yet, with the (id, side) of
    the kernels it took; None when the rule finds nothing."""
    missing = [k for k in left if k.side == MISSING]
    new = [k for k in left if k.side == NEW]
    regressed = [k for k in left if k.side == SCALED]
    claim = rule(missing, new, regressed) if missing or new or regressed else None
    if claim is None:
        return None
    kind, title, lever, claimed = claim
    ids = {(k.id, k.side) for k in claimed}
    gone = [k for k in missing if (k.id, k.side) in ids]
    came = [k for k in new if (k.id, k.side) in ids]
    kept = [k for k in regressed if (k.id, k.side) in ids]
    if not gone and not came and not kept:
        return None
    finding = ChangeFinding(
        kind=kind,
        title=title,
        replaced=_named(gone),
        by=_named(came),
        replaced_kernels=len(gone),
        by_kernels=len(came),
        before_ns=_time(gone) + sum(k.recorded_ns for k in kept),
        after_ns=_time(came) + _time(kept),
        lever=lever,
        members=tuple(k.id for k in gone + came + kept),
        folded=tuple(k.id for k in kept),
        scaled=_named(kept),
        scaled_kernels=len(kept),
    )
    return finding, {(k.id, k.side) for k in gone + came + kept}


def find_changes(
    kernels: Sequence[ChangeKernel], unchanged: bool = True
) -> tuple[ChangeFinding, ...]:
    """The change findings of one check, the largest (GPU time before and after) first.
    `unchanged`: some baselined kernel is still in the capture."""
    left = [k for k in kernels if k.side in (MISSING, NEW, SCALED)]
    found: list[ChangeFinding] = []
    for rule, needs_unchanged in RULES:
        if needs_unchanged and not unchanged:
            continue
        if any(f.kind in _PATH_KINDS for f in found):
            # A change of the whole path explains what its kernels do (fp32 moves twice the
            # bytes): the kernels still there are not a grown problem's.
            left = [k for k in left if k.side != SCALED]
        # A rule may find several changes of its kind (two libraries' other picks): each
        # claim takes kernels, so this ends.
        while (claimed := _claim(rule, left)) is not None:
            finding, taken = claimed
            found.append(finding)
            left = [k for k in left if (k.id, k.side) not in taken]
    reconfigured = [k for k in kernels if k.side == RECONFIGURED]
    if reconfigured:
        found.append(_configuration(reconfigured))
    found.sort(key=lambda f: -(f.before_ns + f.after_ns))
    return _with_recounted(found, [k for k in kernels if k.side == RECOUNTED])


def _configuration(kernels: Sequence[ChangeKernel]) -> ChangeFinding:
    """The program's own kernels (Triton's or CUDA's) slower at a launch configuration the
    baseline never recorded: an autotune config list or launch parameters changed."""
    named = _named(kernels)
    return ChangeFinding(
        kind="configuration",
        title=(
            f"kernel configuration: {', '.join(n for n, _ in named)} "
            "slower at a launch configuration the baseline never recorded"
        ),
        replaced=named,
        by=named,
        replaced_kernels=len(kernels),
        by_kernels=len(kernels),
        before_ns=sum(k.recorded_ns for k in kernels),
        after_ns=_time(kernels),
        lever=(
            "the kernel's configurations: a Triton @triton.autotune config list (BLOCK sizes, "
            "num_warps, num_stages) or the launch parameters; `perfgate baseline accept` if "
            "intended"
        ),
        members=tuple(k.id for k in kernels),
    )


# A change of the whole path (another attention implementation, compile mode, dtype, layout)
# changes how often the kernels around it run; a library's other tile or a user kernel's new
# code does not explain another kernel's launch count.
_PATH_KINDS = ("attention", "compile", "dtype", "layout", "precision")


def _with_recounted(
    found: list[ChangeFinding], recounted: Sequence[ChangeKernel]
) -> tuple[ChangeFinding, ...]:
    """The kernels launched more or less often, under the largest change of the path."""
    target = next((i for i, f in enumerate(found) if f.kind in _PATH_KINDS), None)
    if target is None or not recounted:
        return tuple(found)
    f = found[target]
    names = tuple(dict.fromkeys(label(k.name) for k in recounted))
    found[target] = replace(
        f, members=f.members + tuple(k.id for k in recounted), recounted=names[:SHOWN]
    )
    return tuple(found)
