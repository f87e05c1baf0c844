#!/usr/bin/env python3
"""Check what a perfgate sdist ships (.ci/run and release.yml run it on the one they build).

    python3 scripts/check_sdist.py dist/perfgate-X.Y.Z.tar.gz

The sdist carries the package, its schemas, the docs, the example baselines, the README, the
changelog and the license, and no tests: the suite reads the whole repository (scripts/,
action.yml, .github/, benchmarks/, the README's commands), so it runs from a clone (README.md,
"Try it on a fresh machine"), never from an unpacked sdist where it would fail for want of
them. Exit 0 when the sdist is right, 1 with one line per problem otherwise, 2 on bad usage.
Standard library only.
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import PurePosixPath

REQUIRED = (
    "PKG-INFO",
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "LICENSE",
    "perfgate/__init__.py",
    "perfgate/cli/__init__.py",
    "perfgate/py.typed",
)
REQUIRED_FOLDERS = ("schemas", "docs", "baselines")
FORBIDDEN_FOLDERS = ("tests",)


def problems(names: list[str]) -> list[str]:
    """What is wrong with an sdist holding these member names (each under one top folder)."""
    inner = sorted({str(PurePosixPath(*PurePosixPath(n).parts[1:])) for n in names})
    inner = [n for n in inner if n != "."]
    found = [f"missing {path}" for path in REQUIRED if path not in inner]
    for folder in REQUIRED_FOLDERS:
        if not any(n.startswith(f"{folder}/") for n in inner):
            found.append(f"missing {folder}/")
    for folder in FORBIDDEN_FOLDERS:
        shipped = [n for n in inner if n == folder or n.startswith(f"{folder}/")]
        if shipped:
            found.append(
                f"ships {folder}/ ({len(shipped)} files): the suite runs from a clone, not an sdist"
            )
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].endswith(".tar.gz"):
        print("usage: check_sdist.py SDIST.tar.gz", file=sys.stderr)
        return 2
    try:
        with tarfile.open(argv[1], "r:gz") as tar:
            names = tar.getnames()
    except (OSError, tarfile.TarError) as exc:
        print(f"check_sdist: {argv[1]}: cannot read: {exc}", file=sys.stderr)
        return 2
    found = problems(names)
    for problem in found:
        print(f"check_sdist: {argv[1]}: {problem}", file=sys.stderr)
    if not found:
        print(f"check_sdist: {argv[1]}: {len(names)} entries, as expected")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
