"""A longer hunt than the property tests: mutate real baselines and captures (and write
regular expressions) at random for a while, and report every input that ends in anything but
a result or perfgate's own error, or that takes too long.

    python3 tests/fuzz.py --seconds 300                 # every target, in turn
    python3 tests/fuzz.py --seconds 60 --target yaml --seed 1000

Each case is made from one integer seed, so a finding is reproduced with `--replay TARGET:SEED`.
Findings are written to tests/corpus/fuzz-found/ (the file that failed and the traceback);
keep the ones that found a bug as corpus entries (tests/corpus/make_corpus.py,
expectations.yaml). Before each case its seed is written to .fuzz-last (a crash of the process
itself, such as a segmentation fault, leaves it there).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.common import patterns  # noqa: E402
from perfgate.common.errors import PerfgateError  # noqa: E402

FOUND = ROOT / "tests" / "corpus" / "fuzz-found"
ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
CAPTURE = ROOT / "tests" / "data" / "h100" / "zoo-good-short-run2.csv"
SLOW = 5.0  # seconds: a case slower than this is a finding

_TAGS = ["!!int", "!!float", "!!bool", "!!null", "!!str", "!!timestamp", "!!binary", "!!set",
         "!!omap", "!!pairs", "!!seq", "!!map", "!!merge", "!!python/none", "!local", "!<tag:x>"]  # fmt: skip
_SCALARS = ["abc", "2020-13-45", "2020-01-01", "1e999", ".nan", "-.inf", "0x1F", "0o17", "1_000",
            "1:30", "yes", "on", "~", "1" + "0" * 5000, "''", '"\\x00"', '"\\u2028::error::x"',
            "[a", "{a: 1", "*x", "&x y", "? a", "- - - x", "'a'", "@x", "`x`", "%TAG"]  # fmt: skip
_KEYS = ["1.5", "1", "true", "null", "~", "[a, b]", "{a: 1}", "? [x]", "'1.5'", "on", "<<"]


def _yaml_case(rng: random.Random, base: list[str]) -> str:
    lines = list(base)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        op = rng.choice(["tag", "scalar", "key", "nest", "bytes", "dup", "drop", "indent"])
        line = lines[i]
        if op == "tag" and ": " in line:
            k, v = line.split(": ", 1)
            lines[i] = (
                f"{k}: {rng.choice(_TAGS)} {v if rng.random() < 0.5 else rng.choice(_SCALARS)}"
            )
        elif op == "scalar" and ": " in line:
            lines[i] = line.split(": ", 1)[0] + ": " + rng.choice(_SCALARS)
        elif op == "key" and ": " in line:
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + rng.choice(_KEYS) + ": " + line.split(": ", 1)[1]
        elif op == "nest":
            unit = rng.choice(["- ", "? ", "[", "{", "- !t ", "  ", "-  ", "? - "])
            lines.insert(i, unit * rng.choice([2, 63, 64, 65, 300, 600, 5000, 40000]) + "x")
        elif op == "bytes":
            lines[i] = line[: rng.randrange(len(line) + 1)] + "".join(
                chr(rng.choice([0, 7, 9, 13, 27, 0x85, 0x2028, 0xFEFF, 0xD800 - 1, 0x10FFFF]))
                for _ in range(rng.randint(1, 3))
            )
        elif op == "dup":
            lines.insert(i, line)
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "indent":
            lines[i] = " " * rng.choice([1, 3, 511, 513, 5000]) + line
    return "\n".join(lines) + "\n"


def _csv_case(rng: random.Random, base: list[str], at: int) -> str:
    lines = list(base)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(at, len(lines))
        fields = lines[i].rstrip("\n").split('","')
        op = rng.choice(["drop", "add", "value", "cr", "quote", "name", "columns", "dup"])
        if op == "drop" and len(fields) > 1:
            del fields[rng.randrange(len(fields))]
        elif op == "add":
            fields.insert(rng.randrange(len(fields)), "7")
        elif op == "value":
            j = rng.randrange(len(fields))
            fields[j] = rng.choice(["1e999", "-1e999", "nan", "inf", "-0", "1e308", "-5", "",
                                    "n/a", "1,234.5", "1.234,5", "0x10", "\u0661", "1" * 400])  # fmt: skip
        elif op == "cr":
            fields[rng.randrange(len(fields))] += "\r"
        elif op == "quote":
            fields[rng.randrange(len(fields))] += '"'
        elif op == "name" and len(fields) > 4:
            fields[4] = rng.choice(["\n::error::x", "@octocat https://e.x", "\x1b[2J", "a" * 5000,
                                    "::warning::y", "(a+)+", "", "\u2028"])  # fmt: skip
        elif op == "columns":
            extra = rng.choice([1, 100, 3000])
            fields += [f"c{k}" for k in range(extra)]
        elif op == "dup":
            lines.insert(i, lines[i])
        lines[i] = '","'.join(fields) + "\n"
    return "".join(lines)


_ATOMS = ["a", "b", ".", r"\w", r"\d", "[ab]", "(a)", "(?:a|b)", "(a|ab)", "x"]
_QUANT = ["", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?", "+?"]


def _regex_case(rng: random.Random) -> str:
    def part(depth: int) -> str:
        if depth < 2 and rng.random() < 0.3:
            inner = "".join(part(depth + 1) for _ in range(rng.randint(1, 3)))
            alt = "|" + part(depth + 1) if rng.random() < 0.3 else ""
            return f"({inner}{alt})" + rng.choice(_QUANT)
        return rng.choice(_ATOMS) + rng.choice(_QUANT)

    return "".join(part(0) for _ in range(rng.randint(1, 4))) + rng.choice(["", "$", "!"])


def _run_yaml(seed: int) -> tuple[str, Callable[[Path], None], str]:
    from perfgate.baseline.load import load_baseline

    base = ZOO.read_text().splitlines()[:120]  # the header, provenance and a few kernels
    return _yaml_case(random.Random(seed), base), lambda p: (load_baseline(p), None)[1], ".yaml"


def _run_csv(seed: int) -> tuple[str, Callable[[Path], None], str]:
    from perfgate.reports import REPORTERS
    from perfgate.usecases.check import CheckRequest, run_check

    lines = CAPTURE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    text = _csv_case(random.Random(seed), lines[: at + 2 + 11], at)

    def target(path: Path) -> None:
        report = run_check(CheckRequest((str(ZOO),), (str(path),)))
        for reporter in REPORTERS.values():
            reporter.render(report)

    return text, target, ".csv"


def _run_regex(seed: int) -> tuple[str, Callable[[Path], None], str]:
    pattern = _regex_case(random.Random(seed))

    def target(path: Path) -> None:
        try:
            patterns.compile_pattern(pattern)
        except (patterns.UnsafePattern, re.error):  # refused or invalid: fine
            return
        # An accepted pattern must not backtrack exponentially: 28 letters and a stop.
        patterns.reset_budget()
        patterns.search(pattern, "a" * 28 + "!")

    return pattern, target, ".txt"


TARGETS = {"yaml": _run_yaml, "csv": _run_csv, "regex": _run_regex}


def run_case(target: str, seed: int, keep: bool = True) -> str | None:
    """None when the case ended in a result or perfgate's own error; the problem otherwise."""
    text, call, suffix = TARGETS[target](seed)
    (ROOT / ".fuzz-last").write_text(f"{target}:{seed}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"case{suffix}"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        start = time.perf_counter()
        problem = None
        try:
            call(path)
        except patterns.PatternTimeout:
            problem = "an accepted pattern timed out" if target == "regex" else None
        except PerfgateError as exc:
            if not exc.lines() or not all(line.strip() for line in exc.lines()):
                problem = "an error without a message"
        except Exception:
            problem = traceback.format_exc()
        spent = time.perf_counter() - start
        if problem is None and spent > SLOW:
            problem = f"took {spent:.1f} s"
    if problem and keep:
        FOUND.mkdir(parents=True, exist_ok=True)
        (FOUND / f"{target}-{seed}{suffix}").write_bytes(text.encode("utf-8", "surrogatepass"))
        (FOUND / f"{target}-{seed}.problem.txt").write_text(problem)
    return problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay", help="TARGET:SEED, one case")
    args = parser.parse_args(argv)
    if args.replay:
        target, seed = args.replay.split(":")
        problem = run_case(target, int(seed), keep=False)
        print(problem or "no problem")
        return 1 if problem else 0
    targets = list(TARGETS) if args.target == "all" else [args.target]
    deadline = time.monotonic() + args.seconds
    counts = dict.fromkeys(targets, 0)
    found = 0
    seed = args.seed
    while time.monotonic() < deadline:
        for target in targets:
            problem = run_case(target, seed)
            counts[target] += 1
            if problem:
                found += 1
                print(f"FOUND {target}:{seed}: {problem.strip().splitlines()[-1]}", flush=True)
        seed += 1
    (ROOT / ".fuzz-last").unlink(missing_ok=True)
    print(f"{sum(counts.values())} cases ({counts}), seeds {args.seed}..{seed - 1}, {found} found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
