"""What the defences against hostile input cost on ordinary input, and how the wide-capture
path scales (docs/limits.md).

- the YAML nesting guard (perfgate.baseline.nesting.check_nesting) against the whole load of a
  1,000-kernel baseline recorded by benchmarks/scale.py, and against the guard it replaced
  (a Python loop over every character and every line), in one process, best of --repeat;
- the scan of a capture with and without its per-row field count;
- `perfgate check` on the zoo capture with N extra columns, each a fresh process: the time per
  extra column stays flat when column lookups are linear (they were quadratic: 80,000 columns
  took 29 s);
- user regexes against long kernel names (issue 23), each a fresh `perfgate baseline show`:
  `-k '(a+)+$'` over a kernel named 30 letters `a` and a `!` (25 s before: now refused up
  front), and 60 accepted patterns against one long name (49 s before, with a budget of 2 s
  per pattern: now one budget of 2 s for them all).
- the slow cases of issue 23, each made by a generator below (tests/hostile/test_slow_inputs.py runs
  them with a time bound): a 32 KB lambda-style kernel name, a baseline whose kernels are all
  missing, a check of many capture files, a capture of many kernel names.

    python benchmarks/hostile.py
    python benchmarks/hostile.py --slow
    python benchmarks/hostile.py --columns 0,20000,40000 --repeat 5
    python benchmarks/hostile.py --only regex
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CAPTURE = ROOT / "tests" / "data" / "h100" / "zoo-good-short-run1.csv"
ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"


def _old_guard(text: str) -> None:
    """The guard before issue 15: brackets counted character by character, indentation line by
    line (it missed `- - - x` on one line)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}" and depth:
            depth -= 1
    max((len(line) - len(line.lstrip(" ")) for line in text.splitlines()), default=0)


def guard(workdir: Path, repeat: int) -> None:
    import scale

    from perfgate.baseline import load as baseline
    from perfgate.baseline.nesting import check_nesting

    path = workdir / "b1000.yaml"
    scale.make_baseline(path, 1000, workdir, 2000)
    text = path.read_text()
    new = min(timeit.repeat(lambda: check_nesting(text, "x"), number=5, repeat=repeat))
    old = min(timeit.repeat(lambda: _old_guard(text), number=1, repeat=repeat))
    load = min(timeit.repeat(lambda: baseline.load_baseline(path), number=1, repeat=repeat))
    new /= 5
    print(f"baseline: 1,000 kernels, {len(text):,} bytes")
    print("| | seconds | share of the load |\n|---|---|---|")
    print(f"| load_baseline (guard included) | {load:.3f} | 1 |")
    print(f"| nesting guard (issue 15) | {new:.4f} | {new / load:.4f} |")
    print(f"| nesting guard before | {old:.4f} | {old / load:.4f} |")


def rows(workdir: Path, repeat: int) -> None:
    """The per-row field count of the scan (a row with a field missing or extra is refused)
    against the same scan without it, on a 2,000-launch `--set full` capture."""
    import scale

    from perfgate.ingest import raw_scan

    path = workdir / "full-2000.csv"
    scale.make_capture(path, 2000, 8)

    def scan() -> None:
        raw_scan.scan(lambda: path.open("rb"), str(path))

    with_check = min(timeit.repeat(scan, number=1, repeat=repeat))
    counted = raw_scan._field_count
    raw_scan._field_count = lambda raw, row, expected: expected  # type: ignore[assignment]
    try:
        without = min(timeit.repeat(scan, number=1, repeat=repeat))
    finally:
        raw_scan._field_count = counted
    size = path.stat().st_size / 1e6
    print(
        f"\nscan of a 2,000-launch --set full capture ({size:.0f} MB): {with_check:.3f} s with "
        f"the row check, {without:.3f} s without ({with_check / without:.2f}x)"
    )


def _wide(path: Path, extra: int) -> None:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    with path.open("w") as fh:
        fh.writelines(lines[:at])
        for i, line in enumerate(lines[at:]):
            value = "extra__c{}" if i == 0 else ("" if i == 1 else "1")
            cells = "".join(f',"{value.format(j)}"' for j in range(extra))
            fh.write(line.rstrip("\n") + cells + "\n")


def columns(workdir: Path, counts: list[int], repeat: int) -> None:
    print(
        "\n| extra columns | perfgate check, s | over the plain capture, s | per 10,000 columns, s |"
    )
    print("|---|---|---|---|")
    base = None
    for n in counts:
        path = workdir / f"wide-{n}.csv"
        _wide(path, n)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "perfgate", "check", "-b", str(ZOO), "-c", str(path)],
                capture_output=True, cwd=ROOT,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            assert proc.returncode == 0, proc.stderr
        t = min(times)
        base = t if base is None else base
        per = f"{(t - base) / n * 10_000:.3f}" if n else "-"
        print(f"| {n:,} | {t:.2f} | {t - base:.2f} | {per} |")


# A kernel name the exponential pattern backtracks on, and one the accepted polynomial
# patterns take most of a second each on (`a.*a.*a.*a.*a.*b`: n^5/5! ways, 65 letters).
CATASTROPHIC = "(a+)+$"
EXPONENTIAL_NAME = "a" * 30 + "!"
POLYNOMIAL_NAME = "a" * 65


def polynomial_patterns(count: int = 60) -> list[str]:
    """`count` distinct patterns the static check accepts (5 unbounded repeats) that each
    backtrack for a while on POLYNOMIAL_NAME without matching it."""
    return ["a.*a.*a.*a.*a.*b" + "c" * i for i in range(count)]


def baseline_named(path: Path, name: str) -> Path:
    """The zoo baseline with its first kernel's id and name set to `name`."""
    import yaml

    doc = yaml.safe_load(ZOO.read_text())
    doc["kernels"][0]["id"] = name
    doc["kernels"][0]["name"] = name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def regex(workdir: Path, repeat: int) -> None:
    print("\n| user regexes | perfgate baseline show, s | exit |\n|---|---|---|")
    cases = [
        ("-k '(a+)+$', 30 a's and '!'", EXPONENTIAL_NAME, [CATASTROPHIC]),
        ("60 accepted -k patterns, one long name", POLYNOMIAL_NAME, polynomial_patterns()),
    ]
    for label, name, pats in cases:
        path = baseline_named(workdir / "named.yaml", name)
        args = [a for p in pats for a in ("-k", p)]
        times, code = [], None
        for _ in range(repeat):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "perfgate", "baseline", "show", str(path), *args],
                capture_output=True, cwd=ROOT,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            code = proc.returncode
        print(f"| {label} | {min(times):.2f} | {code} |")


# ----------------------------------------------------------------- slow cases (issue 23)


def _capture_lines() -> tuple[list[str], int]:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    return lines, next(i for i, line in enumerate(lines) if "Kernel Name" in line)


def lambda_name(path: Path, size: int = 32_000) -> None:
    """The zoo capture with one launch renamed to a lambda-style name of `size` characters: a
    new kernel, named for the report by its template arguments (20 s when the search for a
    lambda's enclosing function was quadratic)."""
    lines, at = _capture_lines()
    fields = lines[at + 2].split('","')
    fields[4] = "void k<lambda " + "a" * size + ">(int)"
    lines[at + 2] = '","'.join(fields)
    path.write_text("".join(lines))


def missing_baseline(path: Path, kernels: int, lean: bool = False) -> None:
    """zoo.yaml with `kernels` more kernels that no capture holds: each is missing. Each is a
    copy of init_random's entry, or with `lean` one metric only (a quicker load)."""
    lines = ZOO.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("- id: init_random"))
    end = next(i for i, line in enumerate(lines) if i > first and line.startswith("- id:"))
    entry = "".join(lines[first:end])
    if lean:
        entry = (
            "- id: init_random\n  match: {name: 'init_random(float *, int, unsigned int)'}\n"
            "  metrics:\n    registers_per_thread: {value: 16}\n"
        )
    with path.open("w") as fh:
        fh.writelines(lines)
        for i in range(kernels):
            fh.write(entry.replace("init_random", f"gone_{i}"))


def many_files(folder: Path, files: int) -> list[Path]:
    """`files` copies of the zoo capture (each a separate run of the same program)."""
    text = CAPTURE.read_text()
    paths = []
    for i in range(files):
        paths.append(folder / f"run{i}.csv")
        paths[-1].write_text(text)
    return paths


def many_names(path: Path, kernels: int) -> None:
    """The zoo capture's launches repeated under `kernels` different names: all new."""
    lines, at = _capture_lines()
    rows = lines[at + 2 :]
    with path.open("w") as fh:
        fh.writelines(lines[: at + 2])
        for i in range(kernels):
            fields = rows[i % len(rows)].split('","')
            fields[0] = f'"{i}'
            fields[4] = f"kernel_{i}(float *, int)"
            fh.write('","'.join(fields))


def _timed(*args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "perfgate", *args], capture_output=True, cwd=ROOT)
    took = time.perf_counter() - start
    assert proc.returncode in (0, 1), proc.stderr
    return took


def slow(workdir: Path) -> None:
    print("\n| case | perfgate check, s |\n|---|---|")
    path = workdir / "lambda.csv"
    lambda_name(path)
    print(
        f"| one 32 KB lambda-style kernel name | {_timed('check', '-b', str(ZOO), '-c', str(path)):.2f} |"
    )
    # 10,000 full entries would pass the 16 MiB baseline limit: those have one metric each.
    for n, lean in ((2000, False), (10_000, True)):
        base = workdir / f"missing-{n}.yaml"
        missing_baseline(base, n, lean)
        took = _timed("check", "-b", str(base), "-c", str(CAPTURE))
        kind = " (one metric each)" if lean else ""
        print(f"| {n:,} baselined kernels{kind}, all missing | {took:.2f} |")
    folder = workdir / "runs"
    folder.mkdir()
    args = [a for p in many_files(folder, 1500) for a in ("-c", str(p))]
    print(f"| 1,500 capture files | {_timed('check', '-b', str(ZOO), *args):.2f} |")
    path = workdir / "names.csv"
    many_names(path, 100_000)
    print(f"| 100,000 kernel names | {_timed('check', '-b', str(ZOO), '-c', str(path)):.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--columns", default="0,10000,20000,40000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("guard", "rows", "columns", "regex"))
    parser.add_argument("--slow", action="store_true", help="only the slow cases of issue 23")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.slow:
            slow(work)
            return 0
        if args.only in (None, "guard"):
            guard(work, args.repeat)
        if args.only in (None, "rows"):
            rows(work, args.repeat)
        if args.only in (None, "columns"):
            columns(work, [int(n) for n in args.columns.split(",")], args.repeat)
        if args.only in (None, "regex"):
            regex(work, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
