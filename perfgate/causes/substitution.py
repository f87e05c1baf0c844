"""A baselined kernel gone and others in its place: say what replaced it, in the words of
its family (a library picks kernels at run time by shape, dtype and backend flags)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from perfgate.causes.levers import lever
from perfgate.causes.model import CauseKind, RootCause, Side
from perfgate.identity.families import family_of

_NVJET_TILE = re.compile(r"nvjet_\w*?_(\d+x\d+_\d+x\d+)")
_TILE = re.compile(r"(\d+x\d+(?:x\d+)?(?:_\d+x\d+)?)")


def _tile(name: str) -> str | None:
    m = _NVJET_TILE.search(name) or _TILE.search(name)
    return m.group(1) if m else None


def _short(name: str) -> str:
    head = name.split("(")[0].strip()
    return head if len(head) <= 80 else head[:77] + "..."


def substitution_cause(missing: Side, new: Sequence[Side], family: str | None) -> RootCause:
    """Why a kernel is missing: what ran instead. `family` is the missing kernel's family name
    (perfgate.identity.families), None for user code."""
    kinds = {f.name if (f := family_of(s.name)) else None for s in new}
    if not new:
        title = f"{_short(missing.name)} no longer runs"
        detail = "no new kernel took its place: the work moved elsewhere or is skipped"
    elif family is not None and kinds == {family}:
        before, after = _tile(missing.name), sorted({t for s in new if (t := _tile(s.name))})
        # "cuBLAS picked a different GEMM kernel"; "ATen picked a different kernel", never
        # "a different kernel kernel".
        what = {"cuBLAS": "GEMM kernel", "cuDNN": "engine kernel"}.get(family, "kernel")
        tiles = f" (tile {before} -> {', '.join(after)})" if before and after else ""
        title = f"{family} picked a different {what}{tiles}"
        detail = f"{_short(missing.name)} was replaced by " + ", ".join(_short(s.name) for s in new)
    else:
        others = sorted({k or "user code" for k in kinds})
        source = family or "the kernel"
        count = f"{len(new)} kernel{'s' if len(new) != 1 else ''}"
        # ATen's and Inductor's kernels (with user code beside them) are the math path; user
        # kernels alone are user code, not a path of PyTorch's.
        math = kinds <= {"ATen", "Inductor", None} and bool(kinds & {"ATen", "Inductor"})
        path = "the math path" if math else "/".join(others)
        title = f"{source} was replaced by {count} of {path}"
        detail = (
            f"{_short(missing.name)} -> "
            + ", ".join(_short(s.name) for s in new[:8])
            + (f", ... ({len(new)} in all)" if len(new) > 8 else "")
        )
    lever_text = lever("substitution", family) or (
        "find what changed the dispatch: shapes, dtype, layout, a backend flag or a library "
        "version; if the new kernels are the intended ones, accept with "
        "`perfgate baseline accept --reason ...`"
    )
    return RootCause("substitution", CauseKind.CHANGE, title, detail, lever_text, score=100.0)
