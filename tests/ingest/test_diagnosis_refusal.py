"""A diagnosis capture of another GPU or another build is refused at check (issue 31): one
error naming the file, exit 2, never its counters lent to the gate capture's verdicts.

Real captures: the gate captures tests/data/field/gate/h100-j/hf-encoder-run{1,2,3} (H100,
with their sidecars) and the real `--phases auto` pair tests/data/field/twophase (H100, the
fp32 decoder). The diagnosis captures are SYNTHETIC, cut from real full captures
(tests/twophase_data.diagnosis_capture: a real capture restricted to some kernels' launches,
with the sidecar perfgate capture writes for a diagnosis): of the H200 (h200-a hf-encoder), of
the H100 (h100-a hf-encoder, the same GPU and program), and of another build of the decoder
(h100-a hf-decoder, bf16, beside the fp32 build's gate capture).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.common.errors import CaptureError
from perfgate.ingest import read_capture, read_captures
from perfgate.ingest.names import unqualified
from perfgate.ingest.phases import same_program
from tests.conftest import ROOT
from tests.twophase_data import diagnosis_capture, sidecar

FIELD = ROOT / "tests" / "data" / "field"
GATE_RUNS = [FIELD / "gate" / "h100-j" / f"hf-encoder-run{i}.csv.gz" for i in (1, 2, 3)]
NVJET = "nvjet_sm90_hsh_96x64_64x10_1x2_h_bz_bias_TNN"
PAIR = FIELD / "twophase"
DECODER_GATE = PAIR / "hf-decoder-regressed.csv"
# What the real diagnosis capture of the pair profiled: ncu's --kernel-name regex, by function.
DECODER_FAILING = (
    "vectorized_gather_kernel<",
    "unrolled_elementwise_kernel<",
    "::elementwise_kernel<",
)


def perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("b") / "hf-encoder-gate.yaml"
    proc = perfgate("baseline", "record", *(f"-c{r}" for r in GATE_RUNS), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _diagnosis(source: Path, out: Path, kernels: tuple[str, ...], gpu: str) -> Path:
    path = diagnosis_capture(source, out, kernels)
    sidecar(path, "diagnosis", gpu=gpu, command=[
        "ncu", "--cache-control", "all", "--clock-control", "none", "--launch-count", "4",
        "--kernel-name-base", "function", "--kernel-name", "regex:^(x)$", "python3",
    ])  # fmt: skip
    return path


def test_an_h200_diagnosis_capture_beside_an_h100_gate_capture_is_refused(
    encoder: Path, tmp_path: Path
) -> None:
    h200 = FIELD / "h200" / "h200-a" / "hf-encoder-run1.csv.gz"
    diag = _diagnosis(h200, tmp_path / "h200.diagnosis.csv", (NVJET,), "NVIDIA H200")
    assert read_capture(str(diag)).devices == ("NVIDIA H200",)
    proc = perfgate("check", "-b", str(encoder), "-c", str(GATE_RUNS[0]), "-c", str(diag))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"perfgate: error: {diag}: a diagnosis capture of another GPU: it ran on NVIDIA H200 "
        "(compute capability 9.0), the gate capture "
    ), proc.stderr
    assert "on NVIDIA H100 80GB HBM3 (compute capability 9.0)" in proc.stderr
    assert proc.stdout == ""


def test_the_same_kernels_on_the_gate_captures_gpu_are_merged(
    encoder: Path, tmp_path: Path
) -> None:
    """The control: the same program's full H100 capture, cut the same way, is accepted."""
    h100 = FIELD / "h100" / "h100-a" / "hf-encoder-run1.csv.gz"
    diag = _diagnosis(h100, tmp_path / "h100.diagnosis.csv", (NVJET,), "NVIDIA H100 80GB HBM3")
    proc = perfgate("check", "-b", str(encoder), "-c", str(GATE_RUNS[0]), "-c", str(diag))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = read_captures([GATE_RUNS[0], diag])
    assert merged.diagnosis_paths == (str(diag),)
    lent = [la for la in merged.launches if la.name == NVJET]
    assert lent and all("lts__t_sectors.sum" in la.metrics for la in lent)


def test_a_diagnosis_capture_of_another_build_is_refused(tmp_path: Path) -> None:
    """The fp32 decoder's gate capture with a diagnosis capture of the bf16 build (the same
    kernel functions, as ncu's filter of the failing kernels would profile them): its
    elementwise kernels are other instantiations (BFloat16), never launched by the fp32 build."""
    bf16 = FIELD / "h100" / "h100-a" / "hf-decoder-run1.csv.gz"
    diag = _diagnosis(
        bf16, tmp_path / "bf16.diagnosis.csv", DECODER_FAILING, "NVIDIA H100 80GB HBM3"
    )
    baseline = tmp_path / "b.yaml"
    proc = perfgate("baseline", "record", f"-c{bf16}", "-o", str(baseline))
    assert proc.returncode == 0, proc.stderr
    gate = tmp_path / "pr.csv"  # the gate capture alone: its sidecar links the real diagnosis
    gate.write_bytes(DECODER_GATE.read_bytes())
    Path(f"{gate}.meta.json").write_bytes(Path(f"{DECODER_GATE}.meta.json").read_bytes())
    proc = perfgate("check", "-b", str(baseline), "-c", str(gate), "-c", str(diag))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"perfgate: error: {diag}: a diagnosis capture of another build or program: "
    ), proc.stderr
    assert "never ran in the gate capture" in proc.stderr and "BFloat16" in proc.stderr


def test_the_real_pair_is_one_build_though_ncu_printed_its_names_bare() -> None:
    """Every kernel of the real diagnosis capture is one of the gate capture's, qualifiers
    aside, including `at::<unnamed>::CompareEqFunctor`, which ncu printed `unnamed>::...`."""
    gate = read_capture(str(DECODER_GATE))
    diag = read_capture(str(PAIR / "hf-decoder-regressed.diagnosis.csv"))
    same_program(gate, diag, diag.paths[0])
    held = {unqualified(la.name) for la in gate.launches}
    assert all(unqualified(la.name) in held for la in diag.launches)
    odd = [la for la in diag.launches if "unnamed>::CompareEqFunctor" in la.name]
    assert odd and "<unnamed>::CompareEqFunctor" not in odd[0].name
    merged = read_captures([DECODER_GATE])  # its sidecar links the diagnosis capture
    compare = [
        la for la in merged.launches
        if la.name.startswith("void at::elementwise_kernel<") and "CompareEqFunctor" in la.name
    ]  # fmt: skip
    assert compare and all("lts__t_sectors.sum" in la.metrics for la in compare)


def test_a_gate_capture_cut_by_a_launch_count_compares_kernel_functions() -> None:
    """SYNTHETIC, from the real pair: the gate capture without its CompareEqFunctor launch,
    as a --launch-count could have cut it. By name the diagnosis holds a kernel the gate
    capture does not; where the gate capture was cut by a count, the diagnosis (its count spent
    on fewer kernels) may reach further, so the rule compares functions: elementwise_kernel."""
    gate = read_capture(str(DECODER_GATE))
    diag = read_capture(str(PAIR / "hf-decoder-regressed.diagnosis.csv"))
    cut = replace(
        gate, launches=tuple(la for la in gate.launches if "CompareEqFunctor" not in la.name)
    )
    with pytest.raises(CaptureError) as refused:
        same_program(cut, diag, diag.paths[0])
    assert "1 kernel it holds never ran in the gate capture" in str(refused.value)
    same_program(cut, diag, diag.paths[0], cut=True)
    # A function the gate capture never ran is another build even then.
    other = replace(
        cut, launches=tuple(la for la in cut.launches if "vectorized_gather" not in la.name)
    )
    with pytest.raises(CaptureError, match="kernel function it holds never ran"):
        same_program(other, diag, diag.paths[0], cut=True)
