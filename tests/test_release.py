"""Release-ready: one version in step with the changelog, a license, typed package metadata,
and a README whose links work where PyPI shows it (absolute, to files that exist)."""

from __future__ import annotations

import importlib.util
import re
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


def test_the_changelogs_newest_release_is_the_version() -> None:
    check = _release_check()
    assert check.package_version() == perfgate.__version__
    released = check.released_versions()
    assert released and released[0][0] == perfgate.__version__
    assert check.problems(None) == []
    assert check.problems(f"v{perfgate.__version__}") == []
    assert check.problems("v99.0.0") == [
        f"tag 'v99.0.0' does not match __version__ {perfgate.__version__} "
        f"(expected v{perfgate.__version__})"
    ]
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()


def test_release_check_catches_a_version_without_its_changelog(tmp_path: Path) -> None:
    check = _release_check()
    (tmp_path / "perfgate").mkdir()
    (tmp_path / "perfgate" / "__init__.py").write_text('__version__ = "0.3.0"\n')
    (tmp_path / "CHANGELOG.md").write_text("## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n")
    assert any("newest release is 0.2.0" in p for p in check.problems(None, tmp_path))


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
                assert (ROOT / link.removeprefix(prefix)).exists(), link
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
    assert check.problems([*good, f"{top}/tests/test_cli.py"]) == [
        "ships tests/ (1 files): the suite runs from a clone, not an sdist"
    ]
    assert check.problems(good[1:]) == ["missing PKG-INFO"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m build --sdist" in ci and "scripts/check_sdist.py" in ci
