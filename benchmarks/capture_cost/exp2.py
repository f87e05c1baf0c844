"""Device experiment 2 (helper 13): passes of the default gated set with each stall family
(17 reasons + selected, no not_selected), and each metric's marginal cost (leave one out)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

OUT = Path(os.environ.get("OUT", "/tmp/out"))
OUT.mkdir(parents=True, exist_ok=True)
W = Path("/tmp/w13")
W.mkdir(exist_ok=True)
ROOT = Path(__file__).resolve().parents[2]
L = json.loads(Path(__file__).with_name("lists.json").read_text())
NCU = shutil.which("ncu")
zoo = W / "zoo_good"
subprocess.run(
    ["nvcc", "-O3", "-arch=sm_90", "-o", str(zoo), str(ROOT / "tests/zoo/zoo.cu")], check=True
)
res = {}
PASS_RE = re.compile(r"- (\d+) pass")


def prof(tag, metrics):
    log = W / "l.log"
    cmd = [
        NCU,
        "--clock-control",
        "none",
        "-f",
        "-o",
        str(W / "r"),
        "--log-file",
        str(log),
        "-k",
        "regex:^zoo_coalescing",
        "-c",
        "1",
        "--metrics",
        ",".join(metrics),
        str(zoo),
        "--launches",
        "1",
    ]
    subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    p = [int(m.group(1)) for m in PASS_RE.finditer(log.read_text())]
    res[tag] = p[0] if p else None
    print(tag, res[tag], flush=True)
    return res[tag]


non = L["nonstall"]
fams = {k: [m for m in v if "not_selected" not in m] for k, v in L["fams"].items()}
for f, S in fams.items():
    prof(f"stalls18_{f}", S)
    prof(f"default18_{f}", non + S)
nob = [m for m in non if "bank_conflicts" not in m]
issued = [m for m in fams["count"] if "selected" not in m] + ["smsp__inst_issued.sum"]
prof("count17+inst_issued", issued)
prof("non+count17+inst_issued", non + issued)
prof("nobank+count18", nob + fams["count"])
prof("nobank+pwa18", nob + fams["per_warp_active"])
prof(
    "non_dram_bytes_sum+count18",
    [m for m in non if not m.startswith("dram__bytes_")] + ["dram__bytes.sum"] + fams["count"],
)
for f in ("count", "per_warp_active"):
    full = non + fams[f]
    for m in full:
        if m.startswith("launch__"):
            continue
        prof(f"loo_{f}:{m}", [x for x in full if x != m])
(OUT / "exp2.json").write_text(json.dumps(res, indent=1))
subprocess.run(
    [
        "nvidia-smi",
        "--query-gpu=index,name,compute_cap,driver_version,mig.mode.current",
        "--format=csv,noheader",
    ]
)
