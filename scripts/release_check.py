#!/usr/bin/env python3
"""Check that a release tag, perfgate's version and the changelog agree (docs/release.md).

    python3 scripts/release_check.py v0.2.0     # in the release workflow, on the tag
    python3 scripts/release_check.py            # the version and the changelog only

perfgate/__init__.py's `__version__` is the one source of the version (the wheel's metadata
reads it); CHANGELOG.md's first released section (`## [X.Y.Z] - YYYY-MM-DD`, below
`## [Unreleased]`) must be that version, and a tag must be `v` followed by it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:(a|b|rc)(0|[1-9]\d*))?")


def package_version(root: Path = ROOT) -> str:
    text = (root / "perfgate" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not m:
        raise SystemExit("perfgate/__init__.py has no __version__ line")
    return m.group(1)


def released_versions(root: Path = ROOT) -> list[tuple[str, str]]:
    """(version, date) of each released section of the changelog, newest first."""
    text = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[(\d[^\]]*)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)


def problems(tag: str | None, root: Path = ROOT) -> list[str]:
    version = package_version(root)
    found: list[str] = []
    if not SEMVER.fullmatch(version):
        found.append(f"__version__ {version!r} is not MAJOR.MINOR.PATCH (optionally aN, bN, rcN)")
    released = released_versions(root)
    if not released:
        found.append("CHANGELOG.md has no released section '## [X.Y.Z] - YYYY-MM-DD'")
    elif released[0][0] != version:
        found.append(
            f"CHANGELOG.md's newest release is {released[0][0]}, __version__ is {version}: "
            "move the Unreleased entries under a new '## [X.Y.Z] - date' heading"
        )
    if tag is not None and tag != f"v{version}":
        found.append(f"tag {tag!r} does not match __version__ {version} (expected v{version})")
    return found


def main(argv: list[str]) -> int:
    found = problems(argv[1] if len(argv) > 1 else None)
    for problem in found:
        print(f"release_check: {problem}", file=sys.stderr)
    if not found:
        print(f"release_check: version {package_version()} is ready to tag v{package_version()}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
