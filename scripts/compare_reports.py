"""Are this checkout's reports byte for byte those of another commit?

    python scripts/compare_reports.py --against REF     # exit 0: identical; 1: they differ

Checks REF out into a temporary git worktree, runs scripts/report_snapshot.py (this
checkout's copy, so both sides run the same commands) in each checkout with that checkout's
own perfgate, and compares every file: each command's stdout, stderr and exit code, and every
report file it wrote. Prints the files that differ, with the first differing line of each.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).resolve().parent / "report_snapshot.py"
OUT = ".snapshot-compare"
GIT = shutil.which("git") or "git"


def _snapshot(checkout: Path) -> Path:
    out = checkout / OUT
    shutil.rmtree(out, ignore_errors=True)
    # A fixed hash seed: without it, the order of set iteration changes between processes.
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    subprocess.run([sys.executable, str(SNAPSHOT), OUT], cwd=checkout, env=env, check=True)
    return out


def _line(lines: list[bytes], index: int) -> str:
    return lines[index].decode(errors="replace")[:200] if index < len(lines) else "<end>"


def _differences(a: Path, b: Path) -> list[str]:
    out: list[str] = []
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out += [f"only in {a.name}: {p}" for p in sorted(files_a - files_b)]
    out += [f"only in {b.name}: {p}" for p in sorted(files_b - files_a)]
    for rel in sorted(files_a & files_b):
        if not filecmp.cmp(a / rel, b / rel, shallow=False):
            lines_a = (a / rel).read_bytes().splitlines()
            lines_b = (b / rel).read_bytes().splitlines()
            first = next(
                (i for i, (x, y) in enumerate(zip(lines_a, lines_b, strict=False)) if x != y),
                min(len(lines_a), len(lines_b)),
            )
            was, now = _line(lines_a, first), _line(lines_b, first)
            out.append(f"differs: {rel} (line {first + 1})\n  - {was}\n  + {now}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the commit to compare with")
    args = parser.parse_args()
    sha = subprocess.run(
        [GIT, "rev-parse", args.against], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    script = hashlib.sha256(SNAPSHOT.read_bytes()).hexdigest()[:12]
    # The other commit's snapshot is kept: it is the same as long as the script is.
    cached = ROOT / f".snapshot-{sha[:12]}-{script}"
    if not cached.is_dir():
        with tempfile.TemporaryDirectory(prefix="perfgate-against-") as tmp:
            other = Path(tmp) / "against"
            subprocess.run(
                [GIT, "worktree", "add", "--detach", "--quiet", str(other), sha],
                cwd=ROOT,
                check=True,
            )
            try:
                shutil.copytree(_snapshot(other), cached)
            finally:
                subprocess.run(
                    [GIT, "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False
                )
    ours = _snapshot(ROOT)
    diffs = _differences(cached, ours)
    count = sum(1 for p in (ROOT / OUT).rglob("*") if p.is_file())
    if diffs:
        print("\n".join(diffs[:50]))
        more = " (first 50 shown)" if len(diffs) > 50 else ""
        print(f"{len(diffs)} of {count} files differ from {args.against}{more}")
        return 1
    print(f"all {count} files are byte for byte those of {args.against}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
