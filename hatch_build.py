"""perfgate's version, from the git history (pyproject.toml: hatchling's `code` version source).

- At a release tag `vX.Y.Z`, with no local change: `X.Y.Z`.
- Anywhere else: `NEXT.devN+gSHA`, where NEXT is the release after the newest one (the newest
  of the last tag and CHANGELOG.md's newest `## [X.Y.Z] - date`, its minor number plus one:
  0.1.0 -> 0.2.0), N the commits since that release (since its tag; for a release made without
  a tag, v0.1.0, since the commit that dated it in CHANGELOG.md) and SHA the commit;
  `.dirty` is added when tracked files hold changes not committed.
- An sdist (no .git): the version its PKG-INFO was built with.
- A `git archive` of the repository (GitHub's tarballs, which is how a runner fetches the
  Action): .git_archival.txt, whose placeholders git fills in (.gitattributes: export-subst),
  gives the commit and the tag: `NEXT.dev0+gSHA` (an archive has no history to count).
- None of these: `NEXT.dev0+unknown`.

The build writes the result to perfgate/VERSION (pyproject.toml: the version build hook), which
`perfgate --version`, the Action's `perfgate-version` output and each new baseline's
`recorded_by` read. Standard library only: this runs inside the build backend.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RELEASE = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\] - \d{4}-\d{2}-\d{2}$", re.M)
TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
DESCRIBED = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-(\d+)-g([0-9a-f]+)$")

Release = tuple[int, int, int]


def _git(root: Path, *args: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "-C", str(root), *args],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _changelog(root: Path) -> tuple[Release | None, str | None]:
    """The newest release CHANGELOG.md dates, and its heading line."""
    try:
        text = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    except OSError:
        return None, None
    m = RELEASE.search(text)
    if m is None:
        return None, None
    release = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return release, m.group(0)


def _next(*releases: Release | None) -> str:
    known = [r for r in releases if r is not None]
    major, minor, _ = max(known) if known else (0, 0, 0)
    return f"{major}.{minor + 1}.0"


def _show(release: Release) -> str:
    return ".".join(str(n) for n in release)


def from_pkg_info(root: Path) -> str | None:
    try:
        text = (root / "PKG-INFO").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"^Version: (\S+)$", text, re.M)
    return m.group(1) if m else None


def from_git(root: Path) -> str | None:
    if not (root / ".git").exists():
        return None
    sha = _git(root, "rev-parse", "--short=7", "HEAD")
    if sha is None:
        return None
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    released, heading = _changelog(root)
    described = _git(root, "describe", "--tags", "--long", "--match", "v[0-9]*.[0-9]*.[0-9]*")
    m = DESCRIBED.match(described or "")
    tagged: Release | None = None
    if m:
        tagged = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        distance = int(m.group(4))
        if distance == 0 and not dirty:
            return _show(tagged)
    if tagged is None or (released is not None and released > tagged):
        # No tag, or a newer release made without one: count from the commit that dated it.
        since = None
        if heading is not None:
            since = _git(root, "log", "-1", "--format=%H", "-S", heading, "--", "CHANGELOG.md")
        count = _git(root, "rev-list", "--count", f"{since}..HEAD" if since else "HEAD")
        distance = int(count) if count and count.isdigit() else 0
    local = f"g{sha}" + (".dirty" if dirty else "")
    return f"{_next(tagged, released)}.dev{distance}+{local}"


def from_archive(root: Path) -> str | None:
    try:
        text = (root / ".git_archival.txt").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in text.splitlines())
    )
    node = fields.get("node", "")
    if not re.fullmatch(r"[0-9a-f]{40}", node):
        return None  # not an archive: the placeholders are as committed
    released, _ = _changelog(root)
    tagged: Release | None = None
    m = DESCRIBED.match(fields.get("describe-name", "")) or TAG.match(
        fields.get("describe-name", "")
    )
    if m:
        tagged = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if m.re is TAG or m.group(4) == "0":
            return _show(tagged)
    return f"{_next(tagged, released)}.dev0+g{node[:7]}"


def version(root: Path = ROOT) -> str:
    """perfgate's version for the tree at `root` (module docstring)."""
    found = from_pkg_info(root) or from_git(root) or from_archive(root)
    if found:
        return found
    released, _ = _changelog(root)
    return f"{_next(released)}.dev0+unknown"


if __name__ == "__main__":
    print(version())
