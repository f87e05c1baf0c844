"""Device experiment 1 (helper 13): ncu pass costs per metric list, and real ncu texts in the
-o/--log-file mode perfgate capture uses. Writes everything under $OUT."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


class _Failed(Exception):
    """One line for the maintainer: what is missing or broke, no traceback."""


def _fail(message: str) -> None:
    raise _Failed(message)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        _fail(f"{name} not found on PATH: run this on the device machine (docs/capture.md)")
    return str(path)


def _lists(path: Path) -> dict:
    try:
        lists = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        _fail(f"{path}: cannot read the metric lists: {e}")
    if not isinstance(lists, dict) or not {"nonstall", "fams", "alts"} <= lists.keys():
        _fail(f"{path}: not the metric lists (keys nonstall, fams, alts expected)")
    return lists


def _run() -> None:
    L = _lists(Path(__file__).with_name("lists.json"))
    NCU = _tool("ncu")
    _tool("nvcc")
    _tool("nvidia-smi")
    OUT = Path(os.environ.get("OUT", "/tmp/out"))
    OUT.mkdir(parents=True, exist_ok=True)
    W = Path(os.environ.get("W", "/tmp/w13"))
    W.mkdir(exist_ok=True)
    FIX = W / "fixtures"
    FIX.mkdir(exist_ok=True)
    ROOT = Path(__file__).resolve().parents[2]
    res: dict = {"env": {}, "passes": {}, "walls": {}}

    def sh(name, cmd, **kw):
        p = subprocess.run(cmd, capture_output=True, text=True, **kw)
        (FIX / f"{name}.stdout").write_text(p.stdout)
        (FIX / f"{name}.stderr").write_text(p.stderr)
        (FIX / f"{name}.rc").write_text(str(p.returncode))
        return p

    sh("ncu-version", [NCU, "--version"])
    sh(
        "nvidia-smi-query",
        [
            "nvidia-smi",
            "--query-gpu=index,name,compute_cap,driver_version,mig.mode.current,uuid",
            "--format=csv,noheader",
        ],
    )
    sh(
        "nvidia-smi-query-header",
        [
            "nvidia-smi",
            "--query-gpu=index,name,compute_cap,driver_version,mig.mode.current",
            "--format=csv",
        ],
    )
    sh("nvidia-smi-L", ["nvidia-smi", "-L"])
    sh("nvidia-smi", ["nvidia-smi"])
    sh("nvcc-version", ["nvcc", "--version"])
    sh("ncu-list-sets", [NCU, "--list-sets"])
    zoo = W / "zoo_good"
    p = subprocess.run(
        ["nvcc", "-O3", "-arch=sm_90", "-o", str(zoo), str(ROOT / "tests/zoo/zoo.cu")],
        capture_output=True,
        text=True,
    )
    print("nvcc rc", p.returncode, p.stderr[-500:], flush=True)
    if p.returncode != 0:
        _fail(f"nvcc could not build {zoo} (exit {p.returncode}); its error is above")

    PASS_RE = re.compile(r"- (\d+) pass")

    def prof(
        tag,
        metrics=None,
        extra=(),
        prog=None,
        keep=False,
        filt=("-k", "regex:^zoo_coalescing", "-c", "1"),
    ):
        rep = W / f"r_{tag}"
        log = W / f"l_{tag}.log"
        cmd = [NCU, "--clock-control", "none", "-f", "-o", str(rep), "--log-file", str(log), *filt]
        if metrics is not None:
            cmd += ["--metrics", ",".join(metrics)]
        cmd += list(extra)
        cmd += prog or [str(zoo), "--launches", "1"]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        wall = time.time() - t0
        text = log.read_text() if log.exists() else ""
        passes = [int(m.group(1)) for m in PASS_RE.finditer(text)]
        res["passes"][tag] = {
            "passes": passes,
            "rc": p.returncode,
            "wall": round(wall, 2),
            "n": len(metrics or []),
        }
        if keep:
            shutil.copy(log, FIX / f"{tag}.log") if log.exists() else None
            (FIX / f"{tag}.stdout").write_text(p.stdout)
            (FIX / f"{tag}.stderr").write_text(p.stderr)
            (FIX / f"{tag}.rc").write_text(str(p.returncode))
            if Path(str(rep) + ".ncu-rep").exists():
                q = subprocess.run(
                    [
                        NCU,
                        "--import",
                        str(rep) + ".ncu-rep",
                        "--csv",
                        "--page",
                        "raw",
                        "--print-units",
                        "base",
                    ],
                    capture_output=True,
                    text=True,
                )
                (FIX / f"{tag}.import.csv").write_text(q.stdout)
                (FIX / f"{tag}.import.stderr").write_text(q.stderr)
        print(tag, passes[:3], p.returncode, round(wall, 1), flush=True)
        return passes

    non = L["nonstall"]
    fams = L["fams"]
    counted = [m for m in non if not m.startswith("launch__")]
    prof("default_pwa", non + fams["per_warp_active"], keep=True)
    prof("nonstall", non)
    for f, ms in fams.items():
        prof(f"stalls_{f}", ms)
        prof(f"default_{f}", non + ms)
    for m in counted:
        prof(f"alone:{m}", [m])
        prof(f"loo:{m}", [x for x in non if x != m])
    for k in (2, 4, 6, 8, 10, 12, 14, 16, 19):
        prof(f"pwa_first{k}", fams["per_warp_active"][:k])
        prof(f"count_first{k}", fams["count"][:k])
    for name, alt in L["alts"].items():
        prof(f"alt:{name}", alt)
    prof(
        "nonstall_wee_ratio",
        [m for m in non if m not in ("smsp__thread_inst_executed.sum",)] + L["alts"]["wee_ratio"],
    )
    for s in ("full", "basic", "detailed"):
        prof(f"set_{s}", None, extra=("--set", s))
    (OUT / "exp1.json").write_text(json.dumps(res, indent=1))

    # Real texts in the -o + --log-file mode
    prof("err_nokernels", non, filt=("-k", "regex:^no_such_kernel$"), keep=True)
    prof(
        "err_exit3",
        non,
        prog=[str(zoo), "--launches", "1", "--fail"],
        filt=("-k", "regex:^zoo_co", "-c", "2"),
        keep=True,
    )
    prof(
        "err_bogus",
        [
            "launch__registers_per_thread",
            "fb__bytes_read.sum",
            "no_such__metric.sum",
            "dram__bytes_op_read.sum",
        ],
        keep=True,
    )
    abort_py = "import os, sys, torch; x = torch.ones(1 << 20, device='cuda'); y = (x * 2).sum(); torch.cuda.synchronize(); print('args', sys.argv[1:], flush=True); os.abort()"
    prof(
        "err_abort",
        ["gpu__time_duration.sum"],
        prog=[sys.executable, "-c", abort_py, "a b", 'it\'s "q"', "$HOME;ls"],
        filt=(),
        keep=True,
    )
    segv = "import ctypes, torch; x = torch.ones(1 << 20, device='cuda'); (x * 2).sum().item(); ctypes.string_at(0)"
    prof(
        "err_segv",
        ["gpu__time_duration.sum"],
        prog=[sys.executable, "-c", segv],
        filt=(),
        keep=True,
    )
    prof("err_noprog", ["gpu__time_duration.sum"], prog=["/nonexistent/prog"], filt=(), keep=True)
    prof("err_badopt", ["gpu__time_duration.sum"], extra=("--replay-mode", "bogus"), keep=True)
    prof(
        "ok_python_args",
        ["gpu__time_duration.sum"],
        prog=[
            sys.executable,
            "-c",
            "import sys, torch; print(sys.argv[1:]); (torch.ones(8, device='cuda') + 1).sum().item()",
            "a b",
            'it\'s "q"',
            "$HOME;ls",
        ],
        filt=(),
        keep=True,
    )

    # live csv for comparison of wall times (zoo, all kernels, 1 launch each)
    def wall(tag, cmd):
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
        w = time.time() - t0
        res["walls"][tag] = {"wall": round(w, 2), "rc": p.returncode, "bytes": len(p.stdout)}
        print(tag, round(w, 1), p.returncode, flush=True)
        return p

    wall("plain_zoo", [str(zoo), "--launches", "1"])
    wall(
        "full_csv_zoo",
        [
            NCU,
            "--clock-control",
            "none",
            "--csv",
            "--page",
            "raw",
            "--set",
            "full",
            str(zoo),
            "--launches",
            "1",
        ],
    )
    wall(
        "default_csv_zoo",
        [
            NCU,
            "--clock-control",
            "none",
            "--csv",
            "--page",
            "raw",
            "--metrics",
            ",".join(non + fams["per_warp_active"]),
            str(zoo),
            "--launches",
            "1",
        ],
    )
    wall(
        "default_o_zoo",
        [
            NCU,
            "--clock-control",
            "none",
            "-f",
            "-o",
            str(W / "dz"),
            "--metrics",
            ",".join(non + fams["per_warp_active"]),
            str(zoo),
            "--launches",
            "1",
        ],
    )
    wall(
        "import_dz",
        [NCU, "--import", str(W / "dz.ncu-rep"), "--csv", "--page", "raw", "--print-units", "base"],
    )
    (OUT / "exp1.json").write_text(json.dumps(res, indent=1))
    subprocess.run(["tar", "czf", str(OUT / "fixtures.tar.gz"), "-C", str(W), "fixtures"])
    print("done")


def main(argv: list[str]) -> int:
    if argv:
        sys.stderr.write(f"exp1.py: error: takes no arguments (got {' '.join(argv)}); set OUT\n")
        return 2
    try:
        _run()
    except _Failed as e:
        sys.stderr.write(f"exp1.py: error: {e}\n")
        return 2
    except (OSError, subprocess.SubprocessError) as e:
        sys.stderr.write(f"exp1.py: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
