"""Why perfgate.baseline.fastcheck exists: the check compiled from the schema against
jsonschema, side by side on real baselines.

Baselines: the committed ones (baselines/h100, recorded by baselines/record.sh from
tests/data/h100's captures); one recorded here from each family of
tests/data/field/families/fam-a (66 raw metrics captured, three runs each); and the one of the
most metric entries with its kernels repeated to --kernels entries (ids renamed; every value
is one `perfgate baseline record` wrote). Per baseline, in one process, the variants take
turns round by round (median of --repeat rounds; a fast variant is timed over a loop of calls):

- jsonschema: perfgate's validator over the whole document (perfgate.common.schemas), what
  loading would run without the fast check;
- fastcheck: perfgate.baseline.fastcheck.document_is_valid, what loading runs first;
- load: perfgate.baseline.load.parse_baseline end to end (YAML, schema, semantic checks, model)
  as it is, and with the fast check answering "not sure" (jsonschema over the document).

Cold (fresh processes, median of --repeat): the first check of baselines/h100/zoo.yaml in a
process, importing jsonschema and building the validator against compiling the schema.

    python benchmarks/fastcheck.py                  # the table in docs/mutation.md
    python benchmarks/fastcheck.py --repeat 9 --kernels 2000
"""

from __future__ import annotations

import argparse
import copy
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.baseline import load as load_module  # noqa: E402
from perfgate.baseline.fastcheck import document_is_valid  # noqa: E402
from perfgate.common.schemas import schema_errors  # noqa: E402

SCHEMA = "baseline.schema.json"
FAMILIES = ROOT / "tests" / "data" / "field" / "families" / "fam-a"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_COLD = """
import sys, time, yaml
sys.path.insert(0, sys.argv[2])
data = yaml.load(open(sys.argv[3]).read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
import perfgate.common.schemas
t = time.perf_counter()
if sys.argv[1] == "jsonschema":
    ok = not perfgate.common.schemas.schema_errors(data, "baseline.schema.json")
else:
    from perfgate.baseline.fastcheck import document_is_valid
    ok = document_is_valid(data)
assert ok
print(time.perf_counter() - t)
"""


def _recorded(tmp: Path) -> Iterator[tuple[str, str]]:
    """One baseline per family of fam-a, recorded from its three runs."""
    for first in sorted(FAMILIES.glob("*-run1.csv.gz")):
        family = first.name.removesuffix("-run1.csv.gz")
        runs = sorted(FAMILIES.glob(f"{family}-run[0-9].csv.gz"))
        out = tmp / f"{family}.yaml"
        cmd = [sys.executable, "-m", "perfgate", "baseline", "record", "-o", str(out),
               "--reason", "benchmark", *(a for r in runs for a in ("-c", str(r)))]  # fmt: skip
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{family}: not recorded ({proc.stderr.strip()[-200:]})", file=sys.stderr)
            continue
        yield f"fam-a {family} (recorded)", out.read_text()


def _scaled(text: str, kernels: int) -> str:
    data = yaml.load(text, Loader=_LOADER)
    pattern = data["kernels"]
    out = []
    for i in range(kernels):
        kernel = copy.deepcopy(pattern[i % len(pattern)])  # no YAML aliases: load refuses them
        kernel["id"] = f"{kernel['id']}~{i}"
        out.append(kernel)
    data["kernels"] = out
    dumped: str = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, width=1000)
    return dumped


def _metrics(data: Any) -> int:
    return sum(len(k["metrics"]) for k in data["kernels"])


@contextmanager
def _unsure() -> Iterator[None]:
    """Loading with the fast check answering "not sure": jsonschema over the whole document."""
    names = vars(load_module)
    saved = {k: names[k] for k in ("document_is_valid", "without_bulk")}
    names.update(document_is_valid=lambda d: False, without_bulk=lambda d: None)
    try:
        yield
    finally:
        names.update(saved)


def _load_unsure(text: str, name: str) -> Any:
    with _unsure():
        return load_module.parse_baseline(text, name)


def _timed(call: Callable[[], Any], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        call()
    return (time.perf_counter() - start) / inner


def _side_by_side(name: str, text: str, repeat: int) -> dict[str, float]:
    data = yaml.load(text, Loader=_LOADER)
    if schema_errors(data, SCHEMA) or not document_is_valid(data):
        raise SystemExit(f"{name}: not a valid baseline")
    variants: dict[str, Callable[[], Any]] = {
        "jsonschema": lambda: schema_errors(data, SCHEMA),
        "fastcheck": lambda: document_is_valid(data),
        "load": lambda: load_module.parse_baseline(text, name),
        "load_unsure": lambda: _load_unsure(text, name),
    }
    # Each measurement a loop of at least 50 ms, so that the timer's resolution is no part of it.
    inner = {k: max(1, int(0.05 / max(_timed(f, 1), 1e-7))) for k, f in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    order = list(variants)
    for r in range(repeat):
        for k in order[r % len(order) :] + order[: r % len(order)]:
            times[k].append(_timed(variants[k], inner[k]))
    return {k: statistics.median(v) for k, v in times.items()}


def _cold(kind: str, path: Path, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-c", _COLD, kind, str(ROOT), str(path)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs.append(float(proc.stdout))
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--kernels", type=int, default=1000, help="the scaled baseline's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        baselines = [
            (str(p.relative_to(ROOT)), p.read_text())
            for p in sorted((ROOT / "baselines").rglob("*.yaml"))
        ]
        baselines += list(_recorded(Path(tmp)))
    largest_name, largest = max(baselines, key=lambda b: _metrics(yaml.load(b[1], Loader=_LOADER)))
    baselines.append(
        (f"{largest_name.split(' (')[0]} x {args.kernels} kernels", _scaled(largest, args.kernels))
    )

    print("| baseline | kernels | metric entries | jsonschema | fastcheck | ratio | "
          "load | load, jsonschema only | ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, text in baselines:
        data = yaml.load(text, Loader=_LOADER)
        t = _side_by_side(name, text, args.repeat)
        print(
            f"| {name} | {len(data['kernels'])} | {_metrics(data)} "
            f"| {t['jsonschema'] * 1e3:.2f} ms | {t['fastcheck'] * 1e3:.3f} ms "
            f"| {t['jsonschema'] / t['fastcheck']:.0f} "
            f"| {t['load'] * 1e3:.1f} ms | {t['load_unsure'] * 1e3:.1f} ms "
            f"| {t['load_unsure'] / t['load']:.2f} |",
            flush=True,
        )
    zoo = ROOT / "baselines" / "h100" / "zoo.yaml"
    cold = {kind: _cold(kind, zoo, args.repeat) for kind in ("jsonschema", "fastcheck")}
    print(
        f"\ncold, first check of {zoo.relative_to(ROOT)} in a fresh process: jsonschema "
        f"{cold['jsonschema'] * 1e3:.1f} ms, fastcheck {cold['fastcheck'] * 1e3:.1f} ms "
        f"(ratio {cold['jsonschema'] / cold['fastcheck']:.0f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
