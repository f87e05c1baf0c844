#!/usr/bin/env python3
"""Check that a release tag, perfgate's version and the changelog agree (docs/release.md).

    python3 scripts/release_check.py v0.2.0     # in the release workflow, on the tag
    python3 scripts/release_check.py            # the version and the changelog only

perfgate's version comes from the git history (hatch_build.py): `X.Y.Z` at a tag `vX.Y.Z`
with no local change, `NEXT.devN+gSHA` anywhere else. A tag must be `v` followed by
MAJOR.MINOR.PATCH (optionally aN, bN, rcN), CHANGELOG.md's first released section (`## [X.Y.Z]
- YYYY-MM-DD`, below `## [Unreleased]`) must be that version, and the version built here must
be it (the tag is on the commit checked out, and nothing is changed).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:(a|b|rc)(0|[1-9]\d*))?")


def package_version(root: Path = ROOT) -> str:
    """The version a build of `root` gets (hatch_build.py)."""
    spec = importlib.util.spec_from_file_location("hatch_build", root / "hatch_build.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"{root / 'hatch_build.py'}: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    version: str = module.version(root)
    return version


def released_versions(root: Path = ROOT) -> list[tuple[str, str]]:
    """(version, date) of each released section of the changelog, newest first."""
    text = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[(\d[^\]]*)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)


def problems(tag: str | None, root: Path = ROOT) -> list[str]:
    found: list[str] = []
    released = released_versions(root)
    if not released:
        found.append("CHANGELOG.md has no released section '## [X.Y.Z] - YYYY-MM-DD'")
    if tag is None:
        return found
    wanted = tag.removeprefix("v")
    if not tag.startswith("v") or not SEMVER.fullmatch(wanted):
        found.append(f"tag {tag!r} is not vMAJOR.MINOR.PATCH (optionally aN, bN, rcN)")
        return found
    if released and released[0][0] != wanted:
        found.append(
            f"CHANGELOG.md's newest release is {released[0][0]}, the tag is {tag}: "
            "move the Unreleased entries under a new '## [X.Y.Z] - date' heading"
        )
    built = package_version(root)
    if built != wanted:
        found.append(
            f"tag {tag!r}: the version built here is {built}, not {wanted} (expected the "
            f"commit tagged {tag} checked out, with no local change)"
        )
    return found


def main(argv: list[str]) -> int:
    tag = argv[1] if len(argv) > 1 else None
    found = problems(tag)
    for problem in found:
        print(f"release_check: {problem}", file=sys.stderr)
    if not found:
        version = package_version()
        print(f"release_check: {tag or 'the changelog'} agrees; this tree builds {version}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
