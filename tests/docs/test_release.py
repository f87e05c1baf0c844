"""Release-ready: one version in step with the changelog, a license, typed package metadata,
and a README whose links work where PyPI shows it (absolute, to files that exist)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import tarfile
import uuid
from pathlib import Path
from types import ModuleType

import yaml

import perfgate
from tests.conftest import ROOT

PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _release_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "release_check", ROOT / "scripts" / "release_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _repository() -> str:
    m = re.search(r'^Repository = "(https://github\.com/[\w.-]+/[\w.-]+)"$', PYPROJECT, re.M)
    assert m, "pyproject.toml [project.urls] names the Repository"
    return m.group(1)


def _hatch_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_version_comes_from_the_git_history() -> None:
    """Between releases perfgate says NEXT.devN+gSHA: the release after the changelog's
    newest, the commits since it, the commit; the build wrote it to perfgate/VERSION, which
    `perfgate --version`, the JSON report and a new baseline's recorded_by read."""
    check = _release_check()
    released = check.released_versions()
    assert released and "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()
    major, minor, _ = (int(n) for n in released[0][0].split("."))
    dev = re.compile(rf"{major}\.{minor + 1}\.0\.dev\d+\+g[0-9a-f]{{7,}}(\.dirty)?")
    built = check.package_version()
    assert built == released[0][0] or dev.fullmatch(built), built  # at the release's tag: it
    # perfgate/VERSION is as of the last install (pip install -e . writes it again).
    assert perfgate.__version__ == released[0][0] or dev.fullmatch(perfgate.__version__)
    assert (ROOT / "perfgate" / "VERSION").read_text().strip() == perfgate.__version__
    assert check.problems(None) == []
    pyproject = PYPROJECT.split("[tool.hatch.version]", 1)[1]
    assert 'source = "code"' in pyproject and 'path = "hatch_build.py"' in pyproject
    assert '"/hatch_build.py"' in PYPROJECT  # an sdist builds its wheel with it
    assert "perfgate/VERSION" in (ROOT / ".gitignore").read_text()


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@x"}  # fmt: skip
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
        cwd=repo, capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return proc.stdout.strip()


def _commit(repo: Path, changelog: str) -> str:
    (repo / "CHANGELOG.md").write_text(changelog)
    (repo / "n").write_text(uuid.uuid4().hex)  # a change to commit
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "c")
    return _git(repo, "rev-parse", "--short=7", "HEAD")


UNRELEASED = "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-21\n"
RELEASED = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n## [0.1.0] - 2026-11-21\n"


def test_versions_tell_builds_apart_and_a_tag_gives_the_release(tmp_path: Path) -> None:
    version = _hatch_build().version
    check = _release_check()
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "# Changelog\n\n## [Unreleased]\n")
    (repo / "hatch_build.py").write_text((ROOT / "hatch_build.py").read_text())
    _commit(repo, UNRELEASED)  # 0.1.0 dated, not tagged (as it was released)
    one = _commit(repo, UNRELEASED)
    assert version(repo) == f"0.2.0.dev1+g{one}"
    two = _commit(repo, UNRELEASED + "x")
    assert version(repo) == f"0.2.0.dev2+g{two}"
    (repo / "n").write_text("changed")
    assert version(repo) == f"0.2.0.dev2+g{two}.dirty"
    assert check.problems("v0.2.0", repo) == [
        "CHANGELOG.md's newest release is 0.1.0, the tag is v0.2.0: move the Unreleased "
        "entries under a new '## [X.Y.Z] - date' heading",
        f"tag 'v0.2.0': the version built here is 0.2.0.dev2+g{two}.dirty, not 0.2.0 "
        "(expected the commit tagged v0.2.0 checked out, with no local change)",
    ]
    # The release: the changelog dates 0.2.0, the commit is tagged.
    _commit(repo, RELEASED)
    _git(repo, "tag", "-a", "v0.2.0", "-m", "perfgate 0.2.0")
    assert version(repo) == "0.2.0"
    assert check.problems("v0.2.0", repo) == []
    assert check.problems("0.2.0", repo) == [
        "tag '0.2.0' is not vMAJOR.MINOR.PATCH (optionally aN, bN, rcN)"
    ]
    after = _commit(repo, RELEASED + "y")
    assert version(repo) == f"0.3.0.dev1+g{after}"
    # An sdist: the version it was built with (PKG-INFO), whatever else is there.
    sdist = tmp_path / "sdist"
    sdist.mkdir()
    (sdist / "PKG-INFO").write_text(
        "Metadata-Version: 2.4\nName: perfgate\nVersion: 0.3.0.dev1+gabc1234\n"
    )
    assert version(sdist) == "0.3.0.dev1+gabc1234"


def test_an_archive_of_the_repository_knows_its_commit(tmp_path: Path) -> None:
    """GitHub's tarballs (git archive), which a runner fetches for `uses:`, have no .git:
    .git_archival.txt's placeholders, filled in by export-subst, name the commit."""
    assert ".git_archival.txt export-subst" in (ROOT / ".gitattributes").read_text()
    assert "$Format:%H$" in (ROOT / ".git_archival.txt").read_text()
    version = _hatch_build().version
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in (".gitattributes", ".git_archival.txt", "hatch_build.py"):
        (repo / name).write_text((ROOT / name).read_text())
    sha = _commit(repo, UNRELEASED)
    out = tmp_path / "out"
    out.mkdir()
    archive = tmp_path / "a.tar"
    _git(repo, "archive", "-o", str(archive), "HEAD")
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    assert version(out) == f"0.2.0.dev0+g{sha}"
    _git(repo, "tag", "v0.2.0")
    (out / ".git_archival.txt").unlink()
    _git(repo, "archive", "-o", str(archive), "HEAD")
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    assert version(out) == "0.2.0"
    # Not an archive (the placeholders as committed): nothing to read.
    assert version(tmp_path / "nothing") == "0.1.0.dev0+unknown"


def test_license_and_package_metadata() -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.split("\n")[0].strip() == "Apache License"
    assert "END OF TERMS AND CONDITIONS" in license_text
    assert 'license = "Apache-2.0"' in PYPROJECT and 'license-files = ["LICENSE"]' in PYPROJECT
    assert (ROOT / "perfgate" / "py.typed").is_file()
    assert '"Typing :: Typed"' in PYPROJECT
    # The Python versions CI tests are the versions the classifiers promise.
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    tested = ci["jobs"]["test"]["strategy"]["matrix"]["python"]
    promised = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', PYPROJECT)
    assert tested == promised == ["3.10", "3.11", "3.12", "3.13"]
    assert 'requires-python = ">=3.10"' in PYPROJECT
    for name in ("Homepage", "Repository", "Documentation", "Changelog", "Issues"):
        assert re.search(rf'^{name} = "{re.escape(_repository())}', PYPROJECT, re.M), name


def test_readme_links_are_absolute_and_point_at_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    base = _repository()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(links) >= 10
    for link in links:
        assert link.startswith("https://"), f"{link}: PyPI shows the README away from the repo"
        for kind in ("blob", "tree"):
            prefix = f"{base}/{kind}/main/"
            if link.startswith(prefix):
                path, _, anchor = link.removeprefix(prefix).partition("#")
                assert (ROOT / path).exists(), link
                if anchor:  # GitHub's anchor of a heading: lower case, spaces as hyphens
                    headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.M)
                    slugs = {
                        re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                        for h in headings
                    }
                    assert anchor in slugs, link
    for doc in ("docs/action.md", "docs/ci.md", "docs/release.md", "LICENSE"):
        assert f"{base}/blob/main/{doc}" in readme, doc


def test_readme_shows_the_three_ways_to_run_it() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Three ways to run it", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    kinds = [kind for kind, _ in blocks]
    assert kinds == ["bash", "yaml", "yaml"]
    cli, action, hook = (body for _, body in blocks)
    assert cli.startswith("perfgate check --baseline")
    steps = yaml.safe_load(action)
    uses = [s["uses"] for s in steps]
    assert (
        uses[0].startswith("actions/checkout@") and steps[0]["with"]["persist-credentials"] is False
    )
    assert uses[1].startswith("perfgate/perfgate@")
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    assert set(steps[1]["with"]) <= inputs
    config = yaml.safe_load(hook)
    hook_ids = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for r in config["repos"] for h in r["hooks"]} <= hook_ids


def _check_sdist() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_sdist", ROOT / "scripts" / "check_sdist.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sdist_include() -> list[str]:
    section = PYPROJECT.split("[tool.hatch.build.targets.sdist]", 1)[1].split("\n[", 1)[0]
    m = re.search(r"^include = \[(.*?)\]", section, re.M | re.S)
    assert m
    return re.findall(r'"([^"]+)"', m.group(1))


def test_the_sdist_ships_no_tests_that_would_fail_from_it(tmp_path: Path) -> None:
    """The suite reads scripts/, action.yml, .github/, benchmarks/ and more: run from an
    unpacked sdist, 19 of its tests failed. The sdist ships none (it runs from a clone); .ci/run
    builds the sdist and checks it with scripts/check_sdist.py."""
    include = _sdist_include()
    for path in include:
        assert path.startswith("/"), f"{path}: unanchored, it matches at any depth (tests/...)"
        assert (ROOT / path.lstrip("/")).exists() and not path.startswith("/tests"), path
    check = _check_sdist()
    top = "perfgate-0.1.0"
    good = [f"{top}/{p}" for p in check.REQUIRED] + [
        f"{top}/{d}/x.yaml" for d in check.REQUIRED_FOLDERS
    ]
    assert check.problems(good) == []
    assert check.problems([*good, f"{top}/tests/cli/test_cli.py"]) == [
        "ships tests/ (1 files): the suite runs from a clone, not an sdist"
    ]
    assert check.problems(good[1:]) == ["missing PKG-INFO"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m build --sdist" in ci and "scripts/check_sdist.py" in ci
