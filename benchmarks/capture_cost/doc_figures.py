"""The replay-pass figures the user docs quote, measured for the metric lists perfgate asks
for now: `python3 benchmarks/capture_cost/doc_figures.py lists` (no GPU) writes the lists of
this checkout, `... measure` (on a machine with an H100/H200, ncu and nvcc) profiles the zoo
with each list and with `--set full` and records the passes per kernel.

    python3 benchmarks/capture_cost/doc_figures.py lists > /tmp/lists.json
    OUT=/tmp/out python3 benchmarks/capture_cost/doc_figures.py measure /tmp/lists.json
    # -> $OUT/doc-figures.json: commit it as benchmarks/capture_cost/passes/doc-figures-<gpu>.json

tests/docs/test_user_docs.py holds the docs' figures to that file, and the file's lists to what
this checkout asks ncu for: when a list changes (a metric added to the catalog, a formula's
raw metric renamed), the test fails until the figures are measured again.

The lists:
- `catalog`: `perfgate metrics --ncu`, the whole catalog (what a capture by hand asks for,
  README step 1);
- `full`: `perfgate capture --phases full -b baselines/h100/zoo.yaml` (every gated metric of
  a baseline of the default catalog);
- `gate`: `perfgate capture --phases gate` of the same baseline (the one-pass gate set);
- `diagnosis`: the diagnosis capture `--phases auto` takes of the kernels that failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = "baselines/h100/zoo.yaml"
_PASSES = re.compile(r'^==PROF== Profiling "([^"]+)".* - (\d+) pass(?:es)?\s*$')


def metric_lists() -> dict[str, list[str]]:
    """The ncu metric lists of this checkout, by name (module docstring): the `--metrics` of
    the ncu command `perfgate capture` builds for each phase."""
    sys.path.insert(0, str(ROOT))
    from perfgate.ncu.command import CaptureOptions, build_plan

    def plan(phase: str, **more: object) -> list[str]:
        options = CaptureOptions((str(ROOT / BASELINE),), ("./zoo",), phase=phase, **more)  # type: ignore[arg-type]
        return list(build_plan(options, "REPORT", "LOG").metrics)

    from perfgate.metrics.catalog import ncu_metrics

    return {
        "catalog": ncu_metrics("9.0"),
        "full": plan("full"),
        "gate": plan("gate"),
        "diagnosis": plan("diagnosis", diagnose=("zoo_coalesced",)),
    }


def passes_per_kernel(log: str) -> dict[str, int]:
    """Kernel name: the most replay passes any of its launches took, from ncu's log."""
    out: dict[str, int] = {}
    for line in log.splitlines():
        m = _PASSES.match(line.strip())
        if m:
            out[m.group(1)] = max(int(m.group(2)), out.get(m.group(1), 0))
    return out


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"doc_figures.py: error: {name} not found on PATH (run on a GPU machine)")
    return path


def measure(lists: dict[str, list[str]], out: Path) -> dict[str, object]:
    ncu, nvcc, smi = _tool("ncu"), _tool("nvcc"), _tool("nvidia-smi")
    work = Path(os.environ.get("W", "/tmp/doc-figures"))
    work.mkdir(parents=True, exist_ok=True)
    zoo = work / "zoo_good"
    subprocess.run(
        [nvcc, "-O3", "-arch=sm_90", "-o", str(zoo), str(ROOT / "tests/zoo/zoo.cu")], check=True
    )
    gpu = (
        subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[0]
    )
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip()
    result: dict[str, object] = {
        "gpu": gpu,
        "ncu": version.splitlines()[-1],
        "program": "tests/zoo/zoo.cu (every zoo_ launch)",
        "lists": {},
    }
    runs: dict[str, list[str]] = {name: ["--metrics", ",".join(m)] for name, m in lists.items()}
    runs["set-full"] = ["--set", "full"]
    for name, selection in runs.items():
        log = work / f"{name}.log"
        cmd = [
            ncu,
            "--clock-control",
            "none",
            "--cache-control",
            "all",
            *selection,
            "-k",
            "regex:^zoo_",
            "-f",
            "-o",
            str(work / name),
            "--log-file",
            str(log),
            str(zoo),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        per_kernel = passes_per_kernel(log.read_text() if log.exists() else "")
        entry: dict[str, object] = {"rc": proc.returncode, "passes_per_kernel": per_kernel}
        if name in lists:
            entry["metrics"] = lists[name]
        if per_kernel:
            entry["passes"] = max(per_kernel.values())
        result["lists"][name] = entry  # type: ignore[index]
        print(
            f"{name}: rc={proc.returncode} passes={entry.get('passes')} kernels={len(per_kernel)}"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "doc-figures.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def main(argv: list[str]) -> int:
    if argv[:1] == ["lists"]:
        print(json.dumps(metric_lists(), indent=1))
        return 0
    if argv[:1] == ["measure"] and len(argv) == 2:
        measure(json.loads(Path(argv[1]).read_text()), Path(os.environ.get("OUT", "/tmp/out")))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
