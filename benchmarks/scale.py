"""What a check costs on captures of a whole model, against just reading the file.

Side by side in one run, each measurement in a fresh Python process (median of --repeat):

- `perfgate check` on a `--set full` raw CSV of N launches and K kernels, against a bare
  `pandas.read_csv` of the same file (all columns, the preamble skipped): wall time and peak RSS;
- loading the baseline of the most kernels (`load_baseline`: YAML, schema, semantic checks),
  against `json.loads` of the same data written as JSON;
- `perfgate --help` start-up time, against `python -c pass` and `import pandas`;
- `perfgate check` on a `.ncu-rep` report, against a bare `ncu_report.load_report` that reads
  every metric of every launch (with --rep, on a machine with the ncu_report module).

The CSVs are synthetic, derived from a real capture (tests/data/h100/zoo-good-full-run1.csv.gz,
an H100 `--set full` capture): its launch rows repeated N times, renamed into K kernels. Every
value in them is one ncu wrote; only their number and the kernel names change.

    python benchmarks/scale.py                          # the table in docs/scale.md
    python benchmarks/scale.py --launches 10000 --kernels 8 --repeat 5
    python benchmarks/scale.py --rep big.ncu-rep --rep-baseline b.yaml --launches 0
    python benchmarks/scale.py --launches 10000 --kernels 1000 --against ../perfgate-old
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "h100" / "zoo-good-full-run1.csv.gz"

_MEASURE = r"""
import json, resource, sys, time
t = time.perf_counter()
kind, args = sys.argv[1], sys.argv[2:]
if kind == "bare-csv":
    import pandas as pd
    rows = len(pd.read_csv(args[0], skiprows=int(args[1])))
elif kind == "bare-rep":
    import ncu_report
    report = ncu_report.load_report(args[0])
    rows = 0
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            for name in action.metric_names():
                action.metric_by_name(name).value()
            rows += 1
elif kind == "load":
    from perfgate.baseline.load import load_baseline
    t = time.perf_counter()
    rows = len(load_baseline(args[0]).kernels)
elif kind == "json":
    t = time.perf_counter()
    with open(args[0], encoding="utf-8") as fh:
        rows = len(json.loads(fh.read())["kernels"])
else:
    from perfgate.cli import main
    sys.argv = ["perfgate", *args]
    try:
        main()
    except SystemExit:
        pass
    rows = -1
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""


def _run(kind: str, *args: str, root: Path = ROOT) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, kind, *args],
        capture_output=True, text=True, cwd=root, env=_env(root),
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"measurement {kind} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(lines[-1]))


_PYCACHE = Path(tempfile.gettempdir()) / "perfgate-scale-pycache"


def _env(root: Path = ROOT) -> dict[str, str]:
    """This checkout first on the path, whatever else the caller set (ncu_report's folder),
    and perfgate's bytecode cached as an installed program has it (pip compiles it at
    install): under PYTHONDONTWRITEBYTECODE every run would compile perfgate's modules again
    (0.17 s here) while pandas, installed, never does."""
    extra = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + extra if extra else "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    return env


def _compile(root: Path = ROOT) -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "perfgate")],
        check=True, cwd=root, env=_env(root), capture_output=True,
    )  # fmt: skip


def _interleaved(
    repeat: int, runs: dict[str, tuple[str, tuple[str, ...], Path]]
) -> dict[str, dict[str, float]]:
    """Each measurement `repeat` times, taking turns (a, b, c, a, b, c, ...) so that a machine
    that slows down or speeds up meanwhile weighs on each alike; the median of each."""
    got: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (kind, args, root) in runs.items():
            got[name].append(_run(kind, *args, root=root))
    return {
        name: {
            "wall": statistics.median(r["wall"] for r in values),
            "rss_mb": statistics.median(r["rss_mb"] for r in values),
        }
        for name, values in got.items()
    }


def _median(kind: str, repeat: int, *args: str) -> dict[str, float]:
    runs = [_run(kind, *args) for _ in range(repeat)]
    return {
        "wall": statistics.median(r["wall"] for r in runs),
        "rss_mb": statistics.median(r["rss_mb"] for r in runs),
    }


def _process_wall(cmd: list[str], repeat: int = 10) -> float:
    """Wall time of a whole process, interpreter start-up included, as a user waits for it."""
    env = _env()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _source() -> tuple[list[str], str, str, list[str]]:
    lines = gzip.decompress(SOURCE.read_bytes()).decode().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    return lines[:at], lines[at], lines[at + 1], lines[at + 2 :]


def make_capture(path: Path, launches: int, kernels: int) -> int:
    """Write a synthetic capture; return how many lines come before its header."""
    preamble, header, units, rows = _source()
    with path.open("w") as fh:
        fh.writelines(preamble)
        fh.write(header)
        fh.write(units)
        for i in range(launches):
            row = rows[i % len(rows)]
            # Field 0 is the launch ID; the kernel name (field 4) gets the kernel's number.
            fields = row.split('","')
            fields[0] = f'"{i}'
            if kernels > len(rows) // 2:
                name = fields[4]
                cut = name.index("(") if "(" in name else len(name)
                fields[4] = f"{name[:cut]}_k{i % kernels}{name[cut:]}"
            fh.write('","'.join(fields))
    return len(preamble)


def make_baseline(path: Path, kernels: int, workdir: Path, launches: int) -> None:
    """A baseline of every kernel, recorded from a capture with the same names and as many
    launches per kernel as the checked one: launch counts are gated, so the timed check is the
    common case of a build that passes."""
    small = workdir / f"small-{kernels}-{launches}.csv"
    make_capture(small, launches, kernels)
    subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "record", "-c", str(small), "-o", str(path)],
        check=True, capture_output=True, cwd=ROOT, env=_env(),
    )  # fmt: skip


def _load_line(baseline: Path, repeat: int, results: dict[str, object]) -> None:
    """load_baseline against json.loads of the same data, each in a fresh process."""
    import yaml

    as_json = baseline.with_suffix(".json")
    data = yaml.load(baseline.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    as_json.write_text(json.dumps(data))
    load = _median("load", repeat, str(baseline))
    plain = _median("json", repeat, str(as_json))
    kernels = len(data["kernels"])
    results["load"] = {"kernels": kernels, "mb": baseline.stat().st_size / 1e6, "load": load,
                       "json": plain}  # fmt: skip
    print(
        f"\n| baseline of {kernels:,} kernels ({baseline.stat().st_size / 1e6:.1f} MB) | "
        "load_baseline | json.loads of the same data | time ratio |\n|---|---|---|---|"
    )
    print(
        f"| median of {repeat} | {load['wall']:.2f} s | {plain['wall']:.2f} s "
        f"| {load['wall'] / plain['wall']:.1f} |",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--launches", default="1000,10000,50000", help="comma-separated; 0 skips the CSV part"
    )
    ap.add_argument("--kernels", default="8", help="comma-separated kernel counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--workdir", type=Path, help="where the synthetic captures go (default: a temporary folder)"
    )
    ap.add_argument("--rep", type=Path, help="a .ncu-rep report to time too")
    ap.add_argument("--rep-baseline", type=Path, help="the baseline to check the report against")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument(
        "--against",
        type=Path,
        help="another perfgate checkout (an earlier commit, say): its check is timed too, "
        "taking turns with the bare parse and this checkout's check",
    )
    args = ap.parse_args(argv)
    if args.against and not (args.against / "perfgate" / "__init__.py").is_file():
        ap.error(f"--against {args.against}: not a perfgate checkout (no perfgate/__init__.py)")
    for option, path in (("--rep", args.rep), ("--rep-baseline", args.rep_baseline)):
        if path is not None and not path.is_file():
            ap.error(f"{option} {path}: no such file")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="perfgate-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    _compile()
    if args.against:
        _compile(args.against.resolve())
    results: dict[str, object] = {"python": sys.version.split()[0], "rows": []}
    largest: Path | None = None
    print(
        "| launches | kernels | file | bare read_csv | perfgate check | time ratio | bare RSS | check RSS | RSS ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for kernels in [int(k) for k in args.kernels.split(",")]:
        for launches in [int(n) for n in args.launches.split(",") if int(n)]:
            baseline = work / f"baseline-{kernels}-{launches}.yaml"
            make_baseline(baseline, kernels, work, launches)
            largest = baseline
            capture = work / f"full-{launches}-{kernels}.csv"
            skip = make_capture(capture, launches, kernels)
            size = capture.stat().st_size / 1e6
            check_args = ("check", "-b", str(baseline), "-c", str(capture), "--no-new-kernels")
            runs = {
                "bare": ("bare-csv", (str(capture), str(skip)), ROOT),
                "check": ("check", check_args, ROOT),
            }
            if args.against:
                runs["against"] = ("check", check_args, args.against.resolve())
            timed = _interleaved(args.repeat, runs)
            bare, check = timed["bare"], timed["check"]
            row = {
                "launches": launches,
                "kernels": kernels,
                "mb": size,
                "bare": bare,
                "check": check,
            }
            if args.against:
                row["against"] = timed["against"]
            results["rows"].append(row)  # type: ignore[union-attr]
            print(
                f"| {launches:,} | {kernels:,} | {size:,.0f} MB | {bare['wall']:.2f} s | {check['wall']:.2f} s "
                f"| {check['wall'] / bare['wall']:.2f} | {bare['rss_mb']:,.0f} MB | {check['rss_mb']:,.0f} MB "
                f"| {check['rss_mb'] / bare['rss_mb']:.2f} |",
                flush=True,
            )
            if args.against:
                other = timed["against"]
                print(
                    f"|  | {args.against}: | | | {other['wall']:.2f} s "
                    f"| {other['wall'] / bare['wall']:.2f} | | {other['rss_mb']:,.0f} MB "
                    f"| {other['rss_mb'] / bare['rss_mb']:.2f} |",
                    flush=True,
                )
            capture.unlink()
    if largest is not None:
        _load_line(largest, args.repeat, results)
    startup = {
        "perfgate --help": _process_wall([sys.executable, "-m", "perfgate", "--help"]),
        "python -c pass": _process_wall([sys.executable, "-c", "pass"]),
        "python -c 'import pandas'": _process_wall([sys.executable, "-c", "import pandas"]),
    }
    results["startup"] = startup
    print("\n| start-up: the whole process, median of 10 | seconds |\n|---|---|")
    for name, value in startup.items():
        print(f"| `{name}` | {value:.3f} |")
    if args.rep:
        bare = _median("bare-rep", args.repeat, str(args.rep))
        check = _median(
            "check",
            args.repeat,
            "check",
            "-b",
            str(args.rep_baseline),
            "-c",
            str(args.rep),
            "--no-new-kernels",
        )
        results["rep"] = {
            "file": str(args.rep),
            "mb": args.rep.stat().st_size / 1e6,
            "bare": bare,
            "check": check,
        }
        print(
            "\n| .ncu-rep | bare load + every metric | perfgate check | time ratio | bare RSS | check RSS |\n|---|---|---|---|---|---|"
        )
        print(
            f"| {args.rep.name} ({args.rep.stat().st_size / 1e6:.1f} MB) | {bare['wall']:.2f} s | {check['wall']:.2f} s "
            f"| {check['wall'] / bare['wall']:.2f} | {bare['rss_mb']:,.0f} MB | {check['rss_mb']:,.0f} MB |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
