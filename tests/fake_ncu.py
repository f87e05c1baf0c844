#!/usr/bin/env python3
"""A stand-in for ncu in CI (no GPU): replays real ncu texts recorded on an H200
(tests/data/h200/capture/) in the mode perfgate capture runs ncu in.

FAKE_NCU_LOG names the log to replay into --log-file, FAKE_NCU_CSV the import output
(FAKE_NCU_CSV_DIAGNOSIS that of a diagnosis capture, OUTPUT.diagnosis.csv),
FAKE_NCU_RC the exit code, FAKE_NCU_STDOUT text printed on stdout before the log opens (an
option error), FAKE_NCU_SIGNAL a signal ncu dies of after its log (11: the segmentation fault
seen under JAX). A census run (perfgate.ncu.census: a kernel filter matching nothing) writes
FAKE_NCU_CENSUS into its log (a real census text) and its argv to FAKE_NCU_CENSUS_ARGV, and
is no profile run for FAKE_NCU_ARGV(_ALL). The program is run for real, so its output and
arguments can be checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _exit_code(default: str) -> int:
    """FAKE_NCU_RC as an exit code; text there is one line and exit code 2, no traceback."""
    text = os.environ.get("FAKE_NCU_RC", default)
    try:
        return int(text)
    except ValueError:
        sys.stderr.write(f"fake_ncu: FAKE_NCU_RC must be an integer exit code, not {text!r}\n")
        return 2


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        sys.stdout.write(Path(os.environ["FAKE_NCU_VERSION"]).read_text())
        return 0
    if argv[:1] == ["--import"]:
        # A diagnosis capture's report lies in a folder named after OUTPUT.diagnosis.csv.
        diagnosis = "diagnosis" in Path(argv[1]).parent.name
        csv = os.environ.get("FAKE_NCU_CSV_DIAGNOSIS") if diagnosis else None
        sys.stdout.write(Path(csv or os.environ["FAKE_NCU_CSV"]).read_text())
        return 0
    if "regex:^perfgate-census-matches-nothing$" in argv:
        return _census(argv)
    Path(os.environ.get("FAKE_NCU_ARGV", os.devnull)).write_text("\n".join(argv))
    if "FAKE_NCU_ARGV_ALL" in os.environ:  # every profile run's, one run a line
        with Path(os.environ["FAKE_NCU_ARGV_ALL"]).open("a") as fh:
            fh.write("\x1f".join(argv) + "\n")
    if "FAKE_NCU_STDOUT" in os.environ:
        sys.stdout.write(Path(os.environ["FAKE_NCU_STDOUT"]).read_text())
        return _exit_code("1")
    options_with_value = {
        "--cache-control", "--clock-control", "--target-processes", "--replay-mode", "--metrics",
        "--kernel-name-base", "--kernel-name", "--launch-skip", "--launch-count",
        "--nvtx-include", "--export", "--log-file",
    }  # fmt: skip
    values: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] in options_with_value:
            values[argv[i]] = argv[i + 1]
            i += 2
        else:
            i += 1
    program = argv[i:]
    subprocess.run(program, check=False)
    Path(values["--log-file"]).write_text(Path(os.environ["FAKE_NCU_LOG"]).read_text())
    Path(values["--export"] + ".ncu-rep").write_bytes(b"NVIDIA-report")
    if "FAKE_NCU_SIGNAL" in os.environ:  # as ncu died under JAX: the shell said 139
        os.kill(os.getpid(), int(os.environ["FAKE_NCU_SIGNAL"]))
    return _exit_code("0")


def _census(argv: list[str]) -> int:
    """ncu's census: the program runs, nothing is profiled, the log lists its kernels."""
    Path(os.environ.get("FAKE_NCU_CENSUS_ARGV", os.devnull)).write_text("\n".join(argv))
    log = argv[argv.index("--log-file") + 1]
    program = argv[argv.index("--log-file") + 2 :]
    subprocess.run(program, check=False)
    census = os.environ.get("FAKE_NCU_CENSUS")
    text = Path(census).read_text() if census else "==WARNING== No kernels were profiled.\n"
    Path(log).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
