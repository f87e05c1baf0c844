#!/usr/bin/env python3
"""Check the pre-commit hooks as a user gets them (.ci/run runs this; needs pre-commit, git,
and PyPI for the hooks' own environment).

    python3 scripts/check_hooks.py

1. `pre-commit validate-manifest .pre-commit-hooks.yaml`: pre-commit's own validator, which
   refuses an entry without its required keys; and each hook id once (pre-commit itself
   takes a repeated id silently, the later entry winning).
2. A user's repository in a temporary folder, laid out as docs/ci.md assumes: the bundled
   baselines under baselines/h100/ and a capture at perfgate-report/capture.csv. Every hook
   runs there with `pre-commit try-repo` (its default args) and passes.
3. The .pre-commit-config.yaml docs/ci.md recommends, as written but for `repo:` (this
   checkout) and `rev:` (its commit): `pre-commit install`, the pre-commit stage, the
   pre-push stage on a good capture (passes) and on a regressed one (fails).

pre-commit installs perfgate into an environment of its own from this checkout's commit, so
commit before running it; its environments are cached in ~/.cache/pre-commit (PRE_COMMIT_HOME).
Exit 0 when all is as expected, 1 otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
DATA = ROOT / "tests" / "data" / "h100"
GIT = shutil.which("git") or "git"


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    print("$ " + " ".join(argv), flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)


def duplicate_ids(text: str) -> list[str]:
    """Hook ids that appear more than once in a manifest's text."""
    ids = [h.get("id") for h in yaml.safe_load(text) or [] if isinstance(h, dict)]
    return sorted({str(i) for i in ids if ids.count(i) > 1})


def recommended_config(ci_md: str, repo: str, rev: str) -> str:
    """docs/ci.md's .pre-commit-config.yaml, with this checkout as its repo at `rev`."""
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", ci_md, re.S)
    if block is None:
        raise SystemExit("check_hooks: docs/ci.md shows no ```yaml block of .pre-commit-config")
    text = block.group(1)
    text, repos = re.subn(r"(?m)^(\s*- repo: ).*$", lambda m: m.group(1) + repo, text)
    text, revs = re.subn(r"(?m)^(\s*rev: )\S+.*$", lambda m: m.group(1) + rev, text)
    if repos != 1 or revs != 1:
        raise SystemExit("check_hooks: docs/ci.md's config should name one repo and one rev")
    return text


def _user_repository(folder: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "u@x"],
                 ["config", "user.name", "u"], ["config", "commit.gpgsign", "false"]):  # fmt: skip
        subprocess.run([GIT, *args], cwd=folder, check=True)
    (folder / "baselines" / "h100").mkdir(parents=True)
    for baseline in sorted((ROOT / "baselines" / "h100").glob("*.yaml")):
        shutil.copyfile(baseline, folder / "baselines" / "h100" / baseline.name)
    (folder / "perfgate-report").mkdir()
    shutil.copyfile(DATA / "zoo-good-short-run1.csv", folder / "perfgate-report" / "capture.csv")
    (folder / ".gitignore").write_text("perfgate-report/\n")
    subprocess.run([GIT, "add", "."], cwd=folder, check=True)
    subprocess.run([GIT, "commit", "-q", "-m", "baselines"], cwd=folder, check=True)


def main() -> int:
    problems: list[str] = []

    def expect(proc: subprocess.CompletedProcess[str], code: int, what: str, *words: str) -> None:
        out = proc.stdout + proc.stderr
        missing = [w for w in words if w not in out]
        if proc.returncode != code or missing:
            print(out, file=sys.stderr)
            problems.append(
                f"{what}: exit {proc.returncode} (expected {code})"
                + (f", output lacks {missing}" if missing else "")
            )

    expect(_run(["pre-commit", "validate-manifest", str(MANIFEST)], ROOT), 0, "validate-manifest")
    twice = duplicate_ids(MANIFEST.read_text(encoding="utf-8"))
    if twice:
        problems.append(f".pre-commit-hooks.yaml names hook ids more than once: {twice}")
    rev = subprocess.run(
        [GIT, "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="perfgate-hooks-") as tmp:
        user = Path(tmp)
        _user_repository(user)
        # Every hook of the manifest, with its default args (one try-repo: each installs
        # perfgate into a new environment).
        names = [str(h["name"]) for h in yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))]
        proc = _run(["pre-commit", "try-repo", str(ROOT), "--all-files"], user)
        expect(proc, 0, "try-repo", *names)
        ran = re.findall(r"^(.+?)\.{3,}.*Passed$", proc.stdout, re.M)
        if sorted(ran) != sorted(names):
            problems.append(f"try-repo ran {ran}, expected each of {names} to pass")
        config = recommended_config((ROOT / "docs" / "ci.md").read_text(), str(ROOT), rev)
        (user / ".pre-commit-config.yaml").write_text(config)
        expect(_run(["pre-commit", "install"], user), 0, "install", "pre-push")
        expect(
            _run(["pre-commit", "run", "--all-files"], user), 0, "the pre-commit stage",
            "perfgate baseline validate", "Passed",
        )  # fmt: skip
        push = ["pre-commit", "run", "--all-files", "--hook-stage", "pre-push", "perfgate-check"]
        expect(_run(push, user), 0, "pre-push, a good capture", "perfgate check", "Passed")
        shutil.copyfile(DATA / "zoo-bad-short-run1.csv", user / "perfgate-report" / "capture.csv")
        expect(_run(push, user), 1, "pre-push, a regressed capture", "perfgate check FAILED")
    for problem in problems:
        print(f"check_hooks: {problem}", file=sys.stderr)
    if not problems:
        print("check_hooks: the manifest validates and every hook runs as docs/ci.md says")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
