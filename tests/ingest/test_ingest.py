"""The capture reader on real ncu output (tests/data/h100, written by tests/zoo/capture.sh)
and on files derived from it. Expected values come from reading the same files with the csv
module, not from perfgate."""

from __future__ import annotations

import builtins
import gzip
import re
from pathlib import Path

import pytest

from perfgate.common.errors import CaptureError
from perfgate.ingest import MetricSelection, read_capture
from tests.conftest import data, raw_rows


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def test_live_stdout_with_program_output_and_prof_lines() -> None:
    header, units, rows = raw_rows("zoo-good-short-run1.csv")
    cap = read_capture(data("zoo-good-short-run1.csv"))
    assert len(cap.launches) == len(rows) == 27
    regs = header.index("launch__registers_per_thread")
    dur = header.index("gpu__time_duration.sum")
    assert units[dur] == "ns"
    for launch, row in zip(cap.launches, rows):
        assert launch.name == row[header.index("Kernel Name")]
        assert launch.metrics["launch__registers_per_thread"] == _num(row[regs])
        assert launch.metrics["gpu__time_duration.sum"] == _num(row[dur])
        assert launch.block == tuple(
            int(x) for x in re.findall(r"\d+", row[header.index("Block Size")])
        )
        assert launch.cc == "9.0"
        assert launch.device == "NVIDIA H100 80GB HBM3"


def test_registers_match_what_ptxas_reported() -> None:
    # ptxas-good.txt / ptxas-bad.txt are nvcc's own resource reports for the captured builds.
    def ptxas(name: str) -> dict[str, int]:
        text = data(name).read_text()
        out = {}
        for m in re.finditer(
            r"Compiling entry function '_Z\d+(\w+?)P.*?Used (\d+) registers", text, re.S
        ):
            out[m.group(1)] = int(m.group(2))
        return out

    for variant in ("good", "bad"):
        expected = ptxas(f"ptxas-{variant}.txt")
        cap = read_capture(data(f"zoo-{variant}-short-run1.csv"))
        launch = next(la for la in cap.launches if la.function == "zoo_registers")
        assert launch.metrics["launch__registers_per_thread"] == expected["zoo_registers"]
    assert (
        ptxas("ptxas-good.txt")["zoo_registers"] == 32
        and ptxas("ptxas-bad.txt")["zoo_registers"] == 40
    )


def test_log_file_form_reads_like_stdout() -> None:
    cap = read_capture(data("zoo-good-short-logfile.csv"))
    assert len(cap.launches) == 27
    assert {la.function for la in cap.launches} >= {"zoo_coalescing", "zoo_tensor_cores"}


def test_import_of_report_auto_scales_units_and_perfgate_normalises_them() -> None:
    header, units, rows = raw_rows("zoo-good-short-import.csv")
    dur = header.index("gpu__time_duration.sum")
    smem = header.index("launch__shared_mem_per_block_static")
    assert units[dur] == "us" and units[smem] == "Kbyte/block"
    cap = read_capture(data("zoo-good-short-import.csv"))
    for launch, row in zip(cap.launches, rows):
        assert launch.metrics["gpu__time_duration.sum"] == pytest.approx(float(row[dur]) * 1000)
        assert launch.units["gpu__time_duration.sum"] == "ns"
        assert launch.metrics["launch__shared_mem_per_block_static"] == pytest.approx(
            float(row[smem]) * 1000
        )


def test_ncu_rep_reads_the_same_values_as_its_csv_export() -> None:
    pytest.importorskip("ncu_report", reason="the ncu-rep extra is part of the test extra")
    rep = read_capture(data("zoo-good-short.ncu-rep"))
    csv_ = read_capture(data("zoo-good-short-import.csv"))
    assert [la.name for la in rep.launches] == [la.name for la in csv_.launches]
    compared = 0
    for a, b in zip(rep.launches, csv_.launches):
        assert a.block == b.block and a.grid == b.grid and a.cc == b.cc and a.device == b.device
        for name, value in b.metrics.items():
            if isinstance(value, float) and name in a.metrics:
                # The CSV export rounds (6 decimals of scaled units, 2 for some); the report is exact.
                assert a.metrics[name] == pytest.approx(value, rel=1e-5, abs=0.006), name
                compared += 1
    assert compared > 500


def test_ncu_rep_without_the_module_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_ncu_report(name: str, *args: object, **kwargs: object) -> object:
        if name == "ncu_report":
            raise ImportError("No module named 'ncu_report'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_ncu_report)
    with pytest.raises(CaptureError, match=r"pip install 'perfgate\[ncu-rep\]'"):
        read_capture(data("zoo-good-short.ncu-rep"))


def test_nvtx_columns_are_kept_apart_from_metrics() -> None:
    header, _, _ = raw_rows("torch-short-run1.csv")
    assert header.index("Kernel Name") > 4  # --nvtx put its columns before the kernel name
    cap = read_capture(data("torch-short-run1.csv"))
    assert all(any("perfgate" in n for n in la.nvtx) for la in cap.launches)
    assert not any(c.startswith(("thread Domain", "Id:Domain")) for c in cap.columns)


def test_gzip_capture_reads_like_the_plain_file(tmp_path: Path) -> None:
    plain = tmp_path / "full.csv"
    plain.write_bytes(gzip.decompress(data("zoo-good-full-run1.csv.gz").read_bytes()))
    a = read_capture(data("zoo-good-full-run1.csv.gz"))
    b = read_capture(plain)
    assert [la.metrics for la in a.launches] == [la.metrics for la in b.launches]
    assert len(a.columns) > 2000  # --set full
    assert any("Unable to access the following 6 metrics" in w for w in a.warnings)


def test_selection_reads_only_the_wanted_columns() -> None:
    cap = read_capture(
        data("zoo-good-full-run1.csv.gz"), MetricSelection({"launch__registers_per_thread"})
    )
    assert set(cap.launches[0].metrics) == {
        "launch__registers_per_thread",
        "device__attribute_display_name",
    }
    assert "gpu__time_duration.sum" in cap.columns  # what the file holds is still known


def _rewrite_numbers(text: str, swap: bool) -> str:
    """Synthetic, derived from a real capture: numbers as a European locale writes them
    (NCU_FACTS: '27.595.520', '65,77')."""

    def fix(m: re.Match[str]) -> str:
        v = m.group(1)
        if not re.fullmatch(r"-?[\d,]+(\.\d+)?", v) or not any(ch.isdigit() for ch in v):
            return m.group(0)
        return (
            '"' + v.replace(",", "_").replace(".", ",").replace("_", ".") + '"'
            if swap
            else m.group(0)
        )

    return re.sub(r'"([^"]*)"', fix, text)


def test_european_number_format_is_read_correctly(tmp_path: Path) -> None:
    text = data("zoo-good-short-run1.csv").read_text()
    eu = tmp_path / "eu.csv"
    eu.write_text(_rewrite_numbers(text, swap=True))
    assert '"65.536"' in eu.read_text() or '"131.072"' in eu.read_text()
    a, b = read_capture(data("zoo-good-short-run1.csv")), read_capture(eu)
    assert [la.metrics for la in a.launches] == [la.metrics for la in b.launches]


def test_mixed_number_formats_are_refused(tmp_path: Path) -> None:
    lines = data("zoo-good-short-run1.csv").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    mixed = lines[: at + 3] + [_rewrite_numbers(line, swap=True) for line in lines[at + 3 :]]
    path = tmp_path / "mixed.csv"
    path.write_text("".join(mixed))
    with pytest.raises(CaptureError, match="two different formats"):
        read_capture(path)


@pytest.mark.parametrize("transform", ["crlf", "bom"])
def test_crlf_and_byte_order_mark_read_the_same(tmp_path: Path, transform: str) -> None:
    raw = data("zoo-good-short-run2.csv").read_bytes()
    changed = raw.replace(b"\n", b"\r\n") if transform == "crlf" else b"\xef\xbb\xbf" + raw
    path = tmp_path / f"{transform}.csv"
    path.write_bytes(changed)
    a, b = read_capture(data("zoo-good-short-run2.csv")), read_capture(path)
    assert [la.metrics for la in a.launches] == [la.metrics for la in b.launches]
    assert [la.name for la in a.launches] == [la.name for la in b.launches]


def _derived(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("maker", "message"),
    [
        (lambda t: "", "empty"),
        (lambda t: t[: len(t) - 700], "cut off"),  # cut in the middle of the last row
        (lambda t: t[: len(t) - 703], "cut off"),  # ... inside a quoted field
        (lambda t: t[: t.index('"0","')], "no kernel launches"),  # header and units only
        (lambda t: '{"kernels": []}\n', "not an ncu raw-page CSV"),
        (lambda t: b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4, "binary"),
    ],
    ids=["empty", "truncated", "truncated-in-quotes", "header-only", "json", "binary"],
)
def test_unusable_captures_are_refused_with_one_message(
    tmp_path: Path, maker, message: str
) -> None:
    text = data("zoo-good-short-run1.csv").read_text()
    path = _derived(tmp_path, "capture.csv", maker(text))
    with pytest.raises(CaptureError, match=message) as err:
        read_capture(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no-kernels-profiled.txt", r"profiled no kernels.*zoo_atomics"),
        ("app-error-code.csv", r"The application returned an error code \(3\)"),
        ("nonroot-user.csv", "Failed to parse options"),
        ("zoo-good-details-page.csv", "details page"),
        ("zoo-good-short-summary.csv.gz", "per-kernel summary"),
        ("zoo-good-short-rep.stdout", "not an ncu raw-page CSV"),
    ],
)
def test_real_ncu_errors_and_other_pages_are_refused(name: str, message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        read_capture(data(name))


def test_silently_dropped_metrics_are_simply_absent() -> None:
    # ncu 2025.3 drops unknown names without a word (fb__bytes_read.sum does not exist on sm_90).
    cap = read_capture(data("unknown-metric.csv"))
    assert "launch__registers_per_thread" in cap.columns
    assert "fb__bytes_read.sum" not in cap.columns and "no_such__metric.sum" not in cap.columns


def test_missing_files_and_directories(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no such file"):
        read_capture(tmp_path / "nope.csv")
    with pytest.raises(CaptureError, match="directory"):
        read_capture(tmp_path)


def test_broken_report_file(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report", reason="the ncu-rep extra is part of the test extra")
    path = _derived(tmp_path, "broken.ncu-rep", b"NVR\x00" + b"\x00" * 64)
    with pytest.raises(CaptureError):
        read_capture(path)


def test_n_a_and_empty_values_are_absent_not_zero(tmp_path: Path) -> None:
    # Synthetic, derived from a real capture: ncu writes n/a (or nothing) for values it could
    # not collect. Here zoo_coalescing's duration is n/a in every launch, its registers empty.
    header, _, _ = raw_rows("zoo-good-short-run1.csv")
    dur, regs = header.index("gpu__time_duration.sum"), header.index("launch__registers_per_thread")
    lines = data("zoo-good-short-run1.csv").read_text().splitlines(keepends=True)
    out = []
    for line in lines:
        if line.startswith('"') and "zoo_coalescing(" in line:
            fields = next(iter(__import__("csv").reader([line])))
            fields[dur], fields[regs] = "n/a", ""
            line = ",".join(f'"{f}"' for f in fields) + "\n"
        out.append(line)
    path = tmp_path / "na.csv"
    path.write_text("".join(out))
    launches = [la for la in read_capture(path).launches if la.function == "zoo_coalescing"]
    assert len(launches) == 3
    assert all(la.metrics["gpu__time_duration.sum"] is None for la in launches)
    assert all(la.metrics["launch__registers_per_thread"] is None for la in launches)

    from perfgate.baseline.load import load_baseline
    from perfgate.judge.comparison import State
    from perfgate.judge.states import KernelState
    from perfgate.verdicts.check import check
    from tests.conftest import ROOT

    result = check(load_baseline(ROOT / "baselines/h100/zoo.yaml"), read_capture(path))
    verdicts = {v.kernel: v for v in result.verdicts}
    coalescing = verdicts["zoo_coalescing"]
    # A metric that is n/a in the capture cannot be judged: the kernel is incomplete, not
    # passed, and not regressed on a zero that was never measured.
    assert coalescing.state is KernelState.INCOMPLETE
    states = {c.metric: c for c in coalescing.comparisons}
    missing = states["duration"]
    assert missing.state is State.MISSING_METRIC and "n/a" in missing.message
    assert states["registers_per_thread"].state is State.MISSING_METRIC
    atomics = {c.metric: c for c in verdicts["zoo_atomics"].comparisons}
    assert atomics["duration"].state is State.PASS
    assert verdicts["zoo_atomics"].state is KernelState.PASS


# Issue 23: one file, one raw page. Two ncu outputs appended to one file (`>>` twice), or ncu's
# --import output twice, were read as the first page only (live stdout: the second page was
# taken for ncu's log after the rows) or as one page with the second header and units row for
# launches (--import form, no log between the pages).
@pytest.mark.parametrize("name", ["zoo-good-short-run1.csv", "zoo-good-short-import.csv"])
def test_two_raw_pages_in_one_file_are_refused(tmp_path: Path, name: str) -> None:
    text = data(name).read_text()
    path = tmp_path / "two.csv"
    path.write_text(text + text)
    second = len(text.splitlines()) + text[: text.index("Kernel Name")].count("\n") + 1
    with pytest.raises(CaptureError, match=rf"line {second}: a second ncu raw-page header") as e:
        read_capture(path)
    assert str(path) in str(e.value)


def test_a_kernel_name_holding_the_words_kernel_name_is_a_launch(tmp_path: Path) -> None:
    text = data("zoo-good-short-import.csv").read_text()
    path = tmp_path / "named.csv"
    path.write_text(text.replace("zoo_coalescing", "zoo_Kernel Name_ID", 1))
    assert len(read_capture(path).launches) == len(
        read_capture(data("zoo-good-short-import.csv")).launches
    )


@pytest.mark.parametrize("name", ["zoo-good-short-run1.csv", "zoo-good-short-import.csv"])
def test_the_programs_own_csv_table_before_ncus_page_is_not_the_header(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "table-first.csv"
    path.write_text("step,loss\n1,0.5\n2,0.25\nname,ID,value\nx,1,2\n" + data(name).read_text())
    ours, real = read_capture(path), read_capture(data(name))
    assert [(a.index, a.name, a.metrics) for a in ours.launches] == [
        (b.index, b.name, b.metrics) for b in real.launches
    ]
