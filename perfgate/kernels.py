"""Which launches are one kernel, and what a baseline calls it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from perfgate.baseline import KernelMatch
from perfgate.capture import Launch
from perfgate.errors import UsageError


def select(launches: Sequence[Launch], patterns: Sequence[str]) -> list[Launch]:
    """The launches whose name matches one of the --kernel regular expressions (all when
    none is given); an invalid expression, or one that matches nothing, is a usage error."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise UsageError(
                f"--kernel {pattern!r} is not a valid regular expression: {exc}"
            ) from exc
    chosen = [la for la in launches if not compiled or any(p.search(la.name) for p in compiled)]
    if not chosen:
        names = sorted({la.function for la in launches})
        raise UsageError(
            f"no kernel in the capture matches --kernel {' / '.join(patterns)}; "
            f"the capture holds: {', '.join(names[:10])}"
        )
    return chosen


def group_launches(launches: Sequence[Launch]) -> list[list[Launch]]:
    """One group per kernel name, split by launch configuration where one name has several."""
    by_name: dict[str, list[Launch]] = {}
    for launch in launches:
        by_name.setdefault(launch.name, []).append(launch)
    groups: list[list[Launch]] = []
    for members in by_name.values():
        configs: dict[tuple[object, object], list[Launch]] = {}
        for launch in members:
            configs.setdefault((launch.grid, launch.block), []).append(launch)
        groups.extend(configs.values())
    return groups


def identity(group: list[Launch], groups: list[list[Launch]]) -> tuple[str, KernelMatch]:
    first = group[0]
    same_function = [g for g in groups if g[0].function == first.function]
    same_name = [g for g in same_function if g[0].name == first.name]
    split_config = len(same_name) > 1
    block = first.block if split_config else None
    grid = first.grid if split_config else None
    if len(same_function) == 1:
        return first.function, KernelMatch(function=first.function)
    key = f"{first.name}|{first.grid}|{first.block}" if split_config else first.name
    digest = hashlib.sha256(key.encode()).hexdigest()[:6]
    return f"{first.function}#{digest}", KernelMatch(name=first.name, block=block, grid=grid)
