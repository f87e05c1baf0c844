"""Every report perfgate writes on the bundled captures, into one folder, so that two
checkouts' reports can be compared byte for byte (scripts/compare_reports.py does that).

    python scripts/report_snapshot.py OUT        # run from the root of the checkout to snapshot

What it runs, all through the command line (`perfgate.cli.main`), so that it works on any
checkout whatever its module layout:
- a baseline recorded from each set of runs `NAME-run1..3` under tests/data (the committed
  baselines under baselines/ too), and `baseline show` of each;
- `check` of every capture of the same GPU and workload (the first word of the file name)
  against each of those baselines, with every report: text on stdout (verbose too), the
  markdown summary with its SVG charts, JSON, JUnit, the pull-request comment, GitHub
  annotations on stdout, and the step summary and step outputs an Action run writes;
- `check` of every hostile capture of tests/corpus against the H100 zoo baseline;
- `explain` of every capture in text, markdown and JSON;
- `baseline diff` of the two zoo baselines; `baseline accept` and `baseline update --ratchet`
  of each baseline against the captures that fail it, into new files.

Each command's stdout, stderr and exit code are kept as files. Paths are relative to the
checkout's root, so that they read the same in every checkout.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path.cwd()))

from perfgate.cli import main

CAPTURE = re.compile(r"\.(csv|csv\.gz|ncu-rep)$")
RUN = re.compile(r"^(?:start\d+-)?(?P<set>.+)-run(?P<n>\d+)\.(csv|csv\.gz|ncu-rep)$")
ENV = {
    "SOURCE_DATE_EPOCH": "1767225600",
    "GITHUB_ACTIONS": None,
    "GITHUB_ACTOR": None,
    "GITHUB_STEP_SUMMARY": None,
    "GITHUB_OUTPUT": None,
    "NO_COLOR": "1",
    "FORCE_COLOR": None,
    "USER": "snapshot",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _captures(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and CAPTURE.search(p.name))


def _workload(path: Path) -> str:
    name = re.sub(r"^start\d+-", "", path.name)
    return name.split("-")[0].split(".")[0]


def _gpu(path: Path) -> str:
    return next((part for part in path.parts if part in ("h100", "h200")), "other")


class Snapshot:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.runner = CliRunner()
        self.count = 0

    def run(self, name: str, args: list[str], env: dict[str, str | None] | None = None) -> int:
        """Run one command; keep stdout, stderr and the exit code under OUT/NAME.*"""
        self.count += 1
        result = self.runner.invoke(
            main, args, env={**ENV, **(env or {})}, catch_exceptions=True, prog_name="perfgate"
        )
        stem = self.out / name
        stem.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{stem}.stdout").write_bytes(result.stdout_bytes)
        Path(f"{stem}.stderr").write_bytes(result.stderr_bytes)
        code = str(result.exit_code)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            code += f" {type(result.exception).__name__}: {result.exception}"
        Path(f"{stem}.exit").write_text(code + "\n")
        return result.exit_code


def _sets(root: Path) -> Iterator[tuple[str, list[Path]]]:
    """Sets of runs of one build: NAME-run1, -run2, ... in one folder (start2-NAME apart)."""
    groups: dict[tuple[Path, str], list[Path]] = {}
    for path in _captures(root / "tests" / "data"):
        if m := RUN.match(path.name):
            prefix = path.name[: path.name.index(m["set"])]
            groups.setdefault((path.parent, prefix + m["set"]), []).append(path)
    for (folder, name), paths in sorted(groups.items()):
        if len(paths) >= 2:
            yield f"{folder.relative_to(root / 'tests' / 'data')}/{name}".replace("/", "_"), paths


def snapshot(root: Path, out: Path) -> int:
    snap = Snapshot(out)
    rel = out.relative_to(root) if out.is_relative_to(root) else out
    baselines: list[tuple[str, Path]] = [
        (f"committed_{p.parent.name}_{p.stem}", p.relative_to(root))
        for p in sorted((root / "baselines").rglob("*.yaml"))
    ]
    for name, runs in _sets(root):
        path = rel / "baselines" / f"{name}.yaml"
        args = ["baseline", "record", "-o", str(path)]
        for run in runs:
            args += ["-c", str(run.relative_to(root))]
        if snap.run(f"record/{name}", args) == 0:
            # The recording time is the one line two recordings of the same captures differ in.
            text = (root / path).read_text()
            (root / path).write_text(re.sub(r"recorded_at: .*", "recorded_at: fixed", text))
            baselines.append((name, path))
    captures = [p.relative_to(root) for p in _captures(root / "tests" / "data")]
    hostile = [p.relative_to(root) for p in _captures(root / "tests" / "corpus" / "captures")]

    for name, baseline in baselines:
        snap.run(f"show/{name}", ["baseline", "show", str(baseline)])
        snap.run(f"show-md/{name}", ["baseline", "show", str(baseline), "--format", "markdown"])
        gpu = "h100" if "h100" in name else "h200"
        workload = name.split("_")[-1].split("-")[0]
        mine = [c for c in captures if _gpu(c) == gpu and _workload(c) == workload]
        failing: list[Path] = []
        for capture in mine:
            tag = f"{name}/{str(capture).replace('/', '_')}"
            files = rel / "files" / tag
            files.mkdir(parents=True, exist_ok=True)
            common = ["check", "-b", str(baseline), "-c", str(capture)]
            code = snap.run(
                f"check/{tag}/text",
                [
                    *common,
                    "--json",
                    str(files / "report.json"),
                    "--junit",
                    str(files / "report.xml"),
                    "--markdown",
                    str(files / "summary.md"),
                    "--pr-comment",
                    str(files / "comment.md"),
                ],
            )
            if code == 1:
                failing.append(capture)
            snap.run(f"check/{tag}/verbose", [*common, "-v", "--no-new-kernels"])
            for fmt in ("markdown", "junit", "json"):
                snap.run(f"check/{tag}/{fmt}", [*common, "--format", fmt])
            step = files / "step_summary.md"
            output = files / "step_output.txt"
            step.write_text("")
            output.write_text("")
            snap.run(
                f"check/{tag}/github",
                [*common, "--format", "github", "--fail-on", "regression"],
                env={
                    "GITHUB_ACTIONS": "true",
                    "GITHUB_STEP_SUMMARY": str(step),
                    "GITHUB_OUTPUT": str(output),
                },
            )
        if failing:
            snap.run(
                f"accept/{name}",
                [
                    "baseline",
                    "accept",
                    str(baseline),
                    "--reason",
                    "snapshot",
                    "--by",
                    "snapshot",
                    "--add-new",
                    "-o",
                    str(rel / "edits" / f"{name}.accepted.yaml"),
                    *[a for c in failing[:2] for a in ("-c", str(c))],
                ],
            )
        passing = [c for c in mine if c not in failing]
        if passing:
            snap.run(
                f"ratchet/{name}",
                [
                    "baseline",
                    "update",
                    str(baseline),
                    "--ratchet",
                    "--by",
                    "snapshot",
                    "-o",
                    str(rel / "edits" / f"{name}.ratchet.yaml"),
                    *[a for c in passing[:3] for a in ("-c", str(c))],
                ],
            )

    zoo = next((b for n, b in baselines if n == "committed_h100_zoo"), None)
    if zoo is not None:
        for capture in hostile:
            snap.run(f"hostile/{capture.name}", ["check", "-b", str(zoo), "-c", str(capture)])
        full = next(b for n, b in baselines if n == "committed_h100_zoo-full")
        for fmt in ("text", "markdown"):
            snap.run(
                f"diff/zoo-{fmt}",
                ["baseline", "diff", str(zoo), str(full), "--all", "--format", fmt],
            )
        h200 = next((c for c in captures if _gpu(c) == "h200" and _workload(c) == "zoo"), None)
        if h200 is not None:
            snap.run("other-gpu/refused", ["check", "-b", str(zoo), "-c", str(h200)])
            snap.run(
                "other-gpu/allowed", ["check", "-b", str(zoo), "-c", str(h200), "--allow-other-gpu"]
            )

    for capture in [*captures, *hostile]:
        tag = str(capture).replace("/", "_")
        for fmt in ("text", "markdown", "json"):
            snap.run(f"explain/{tag}/{fmt}", ["explain", "-c", str(capture), "--format", fmt])
    return snap.count


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path.cwd().resolve()
    target = Path(sys.argv[1]).resolve()
    if target.exists() and any(target.iterdir()):
        sys.exit(f"{target} is not empty")
    target.mkdir(parents=True, exist_ok=True)
    print(f"{snapshot(root, target)} commands; reports in {target}")
