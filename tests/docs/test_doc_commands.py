"""Every command the README and docs/ show either runs in the tests (tests/docs/test_readme.py) or
is marked as a synopsis, and a synopsis names perfgate's real commands, options and baselines;
the install and setup instructions work on a fresh machine before the first release."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import yaml

from perfgate.baseline.selection import expand
from perfgate.cli import main as cli_main
from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.S | re.M)
MARK = re.compile(r"<!-- (readme-test: [\w=.-]+|synopsis) -->\s*$")
COMMAND_LANGS = {"bash", "sh", "shell", "console"}
# v0.1.0 was released without a tag (docs/release.md): nothing can be pinned to it.
UNTAGGED = {"0.1.0"}


def _blocks(path: Path) -> list[tuple[str, str, str]]:
    """(marker or "", language, body) of each fenced block of one markdown file."""
    text = path.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip().splitlines()
        mark = MARK.search(before[-1].strip()) if before else None
        body = "\n".join(line[len(m.group(1)) :] for line in m.group(3).splitlines())
        found.append((mark.group(1) if mark else "", m.group(2), body))
    return found


def _commands(body: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, comments and [optional]
    parts dropped, each `&&` part on its own."""
    joined = re.sub(r"\\\n\s*", " ", body)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"\s#\s.*$", "", line).strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"\[[^\]]*\]", "", line)
        for part in line.split(" && "):
            commands.append(shlex.split(part))
    return commands


def test_every_command_block_is_run_by_the_tests_or_marked_a_synopsis() -> None:
    unmarked = [
        f"{path.relative_to(ROOT)}: {body.splitlines()[0]}"
        for path in DOCS
        for mark, lang, body in _blocks(path)
        if lang in COMMAND_LANGS and not mark
    ]
    assert unmarked == [], (
        "mark each with <!-- synopsis --> or make tests/docs/test_readme.py run it (readme-test)"
    )


def _perfgate_commands() -> list[tuple[str, list[str]]]:
    found = []
    for path in DOCS:
        for mark, lang, body in _blocks(path):
            if lang not in COMMAND_LANGS or not mark:
                continue
            for argv in _commands(body):
                if argv and argv[0] == "perfgate":
                    found.append((f"{path.relative_to(ROOT)}: {shlex.join(argv)}", argv[1:]))
    return found


def test_synopses_name_perfgate_commands_and_options_that_exist() -> None:
    found = _perfgate_commands()
    assert len(found) >= 15
    for where, args in found:
        command: click.Command = cli_main
        while isinstance(command, click.Group) and args and args[0] in command.commands:
            command = command.commands[args.pop(0)]
        assert not isinstance(command, click.Group), where
        names = {opt for p in command.params for opt in p.opts + p.secondary_opts}
        names |= {opt for p in cli_main.params for opt in p.opts + p.secondary_opts}
        for arg in args:
            if arg == "--":
                break
            if arg.startswith("-") and arg != "-":
                assert arg.split("=")[0] in names | {"-h", "--help"}, (where, arg)


def _baseline_paths() -> list[tuple[str, str]]:
    """(where, path) of every baseline under baselines/ that a command or config passes."""
    found = []
    for where, args in _perfgate_commands():
        if args[:2] == ["baseline", "record"]:
            continue  # -o names the file to write
        for i, arg in enumerate(args):
            if arg.startswith("baselines/") and (i == 0 or args[i - 1] != "-o"):
                found.append((where, arg))
    for path in DOCS:
        for _, lang, body in _blocks(path):
            if lang == "yaml":
                found += [
                    (str(path.relative_to(ROOT)), p)
                    for p in re.findall(r"baselines/\S*?\.ya?ml|baselines/(?=[\s,\]])", body)
                ]
    return found


def test_the_baselines_the_docs_pass_exist_and_a_folder_holds_one_per_gpu() -> None:
    """A file the docs pass is a baseline of this repository; a folder (`baselines/`,
    searched with its subfolders) holds baselines, which a check of a bundled capture takes
    one per capture file (docs/ci.md, "A folder of baselines")."""
    found = _baseline_paths()
    assert len(found) >= 8
    for where, path in found:
        if (ROOT / path).is_dir():
            assert expand([str(ROOT / path)]), f"{where}: {path} holds no baseline"
            continue
        assert (ROOT / path).is_file(), f"{where}: {path} is not a baseline file of this repository"


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_readme_works_on_a_python_that_is_externally_managed() -> None:
    """PEP 668 (Debian 12, Ubuntu 24.04): pip refuses to install outside a virtual environment,
    so every README block that pip-installs creates and activates one first, or follows the
    block that did (the README says: in the same shell)."""
    readme = ROOT / "README.md"
    activated = False
    installs = 0
    for _, lang, body in _blocks(readme):
        if lang not in COMMAND_LANGS:
            continue
        for argv in _commands(body):
            if argv[:3] == ["python3", "-m", "venv"]:
                assert argv[3] == ".venv"
            if argv == [".", ".venv/bin/activate"]:
                activated = True
            if argv[:4] == ["python3", "-m", "pip", "install"]:
                installs += 1
                assert activated, f"pip install before a virtual environment: {shlex.join(argv)}"
    assert installs >= 3
    first = next(body for mark, _, body in _blocks(readme) if mark == "readme-test: exit=1")
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && python3 -m pip")
    # Installing from PyPI is offered only for after the first release.
    install = " ".join(_section(readme.read_text(), "Install").split())
    assert "Once released" in install
    assert not re.search(r"install perfgate\b", install.split("Once released")[0])


def _repository() -> str:
    pyproject = (ROOT / "pyproject.toml").read_text()
    m = re.search(r'^Repository = "(https://github\.com/[\w.-]+/[\w.-]+)"$', pyproject, re.M)
    assert m
    return m.group(1)


def _tagged() -> set[str]:
    text = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}$", text, re.M)
    return {f"v{v}" for v in released if v not in UNTAGGED}


def test_install_and_pins_work_before_the_first_release() -> None:
    """Until a release is tagged and on PyPI, the README installs from the repository and
    the pre-commit rev and the action's comment name `main`; docs/release.md's checklist
    switches them when it is."""
    readme = (ROOT / "README.md").read_text()
    install = _section(readme, "Install")
    assert f'python3 -m pip install "perfgate @ git+{_repository()}@main"' in install
    tagged = _tagged()
    refs = []
    for path in [*DOCS, ROOT / ".pre-commit-hooks.yaml"]:
        text = path.read_text()
        refs += [(path.name, r) for r in re.findall(r"^[ #]*rev: (\S+)", text, re.M)]
        refs += [
            (path.name, r)
            for r in re.findall(r"^[ #-]*uses: perfgate/perfgate@[^#\n]*# (\S+)", text, re.M)
        ]
    assert len(refs) >= 4
    for where, ref in refs:
        assert ref == "main" or ref in tagged, f"{where}: {ref} is not a tag of the repository"
    release = (ROOT / "docs" / "release.md").read_text()
    checklist = _section(release, "Release checklist")
    for step in ("CHANGELOG.md", "__version__", "release_check.py", "git tag", "PyPI", "README"):
        assert step in checklist, step


def test_check_doc_names_only_junit_readers_that_use_file_and_line() -> None:
    text = (ROOT / "docs" / "check.md").read_text()
    sentence = re.search(r"carries `file`.*?annotate", text, re.S)
    assert sentence is not None
    assert "dorny" not in sentence.group(0)  # dorny/test-reporter reads neither
    assert "EnricoMi" in sentence.group(0) and "mikepenz" in sentence.group(0)


def test_pre_commit_hooks_run_in_the_stages_and_with_the_args_ci_doc_shows() -> None:
    """pre-commit merges a config's hook entry over the hook's manifest entry; the result must
    run `perfgate check` with a baseline and a capture, at pre-push, and `pre-commit try-repo .
    perfgate-check` (the pre-commit stage, the manifest's own args) must run it too."""
    manifest = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    ci = (ROOT / "docs" / "ci.md").read_text()
    configs = [
        yaml.safe_load(body) for _, lang, body in _blocks(ROOT / "docs" / "ci.md") if lang == "yaml"
    ]
    configs = [c for c in configs if isinstance(c, dict) and "repos" in c]
    assert configs, "docs/ci.md shows a .pre-commit-config.yaml"
    all_stages = {"pre-commit", "pre-push", "manual"}
    for config in configs:
        install_types = set(config.get("default_install_hook_types", ["pre-commit"]))
        for repo in config["repos"]:
            for hook in repo["hooks"]:
                merged = {**manifest[hook["id"]], **hook}
                stages = set(merged.get("stages", all_stages))
                assert stages & install_types, (hook["id"], stages, install_types)
                _parses(merged, hook["id"])
                if hook["id"] == "perfgate-check":
                    assert stages == {"pre-push"}, "ci.md: pre-push, not every commit"
                    assert "pre-push" in install_types
    assert "pre-commit install" in ci
    for hook in manifest.values():
        assert "pre-commit" in set(hook.get("stages", all_stages)), "try-repo runs pre-commit"
        _parses(hook, hook["id"])
    assert "--baseline" in manifest["perfgate-check"]["args"]


def _parses(hook: dict[str, object], where: str) -> None:
    """The hook's command line parses (pre-commit appends the matching files unless
    pass_filenames is false)."""
    entry = shlex.split(str(hook["entry"]))
    assert entry[0] == "perfgate"
    argv = entry[1:] + [str(a) for a in hook.get("args", [])]  # type: ignore[attr-defined]
    if hook.get("pass_filenames", True):
        argv.append("baselines/h100/zoo.yaml")
    command: click.Command = cli_main
    while isinstance(command, click.Group):
        command = command.commands[argv.pop(0)]
    with command.make_context(where, argv) as ctx:
        assert ctx.params
