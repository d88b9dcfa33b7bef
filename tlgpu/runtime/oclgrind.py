"""Oclgrind's checks as results: `--device oclgrind` switches on its data-race, out-of-bounds,
uninitialised-value and API checks, and every report it prints during a launch becomes an
`OclgrindReport` (exit status 1) naming the kernel and, through the line table, the
tensor-language instruction. A fatal error of the simulator ("OCLGRIND FATAL ERROR ...
Unsupported instruction") is a report too: the numbers of such a run are meaningless.

Oclgrind reads its settings from the environment when a context is created and writes its
reports to the process's stderr (file descriptor 2), so both are handled here.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

from tlinterp.lang.diagnostics import Diagnostic, ExecutionError
from tlinterp.lang.ir import Span

CHECKS = {"OCLGRIND_CHECK_API": "1", "OCLGRIND_DATA_RACES": "1", "OCLGRIND_UNINITIALIZED": "1"}

# pyopencl asks every device for OpenCL 2/3 properties; Oclgrind (1.2) answers with
# CL_INVALID_VALUE and its API checker reports that. It is not about the kernel.
_NOISE = re.compile(r"Function: clGetDeviceInfo\s+Error:\s+CL_INVALID_VALUE")
_LINE = re.compile(r"At line (\d+)(?: \(column (\d+)\))? of")
_KERNEL = re.compile(r"Kernel: (\S+)")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class OclgrindReport(ExecutionError):
    """Oclgrind found undefined behaviour (or failed) while running the generated code."""


@dataclass(frozen=True)
class Report:
    what: str  # first line, addresses blanked ("Invalid read of size 8 at global memory ...")
    kernel: Optional[str]
    line: Optional[int]  # 1-based line of the generated OpenCL C
    text: str  # the whole block as Oclgrind printed it
    fatal: bool = False


def is_oclgrind(device) -> bool:
    """True for a pyopencl device of the Oclgrind platform."""
    return "oclgrind" in device.platform.name.lower()


def enable_checks() -> None:
    """Switch the checks on for contexts created from now on (explicit user settings win)."""
    for key, value in CHECKS.items():
        os.environ.setdefault(key, value)


class Capture:
    """What the process wrote to file descriptor 2 inside `captured_stderr()`."""

    text: str = ""


@contextmanager
def captured_stderr() -> Iterator[Capture]:
    """Redirect fd 2 (where Oclgrind's C++ runtime writes) into a temporary file."""
    cap = Capture()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield cap
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            cap.text = tmp.read().decode("utf-8", "replace")


def parse(text: str) -> list[Report]:
    """Every report in Oclgrind's output, in order (blocks are separated by blank lines)."""
    reports = []
    blocks = re.split(r"\n\s*\n(?=\S)", text.strip("\n"))
    for block in blocks:
        block = block.strip("\n")
        if not block.strip() or _NOISE.search(block):
            continue
        first = block.strip().splitlines()[0].strip()
        fatal = "OCLGRIND FATAL ERROR" in block
        if fatal:
            lines = [ln.strip() for ln in block.strip().splitlines()]
            first = next((ln for ln in lines[1:] if ln), first)
            first = f"fatal error of the simulator: {first}"
        elif not block[:1].strip():  # an indented continuation, not a report
            continue
        m = _LINE.search(block)
        k = _KERNEL.search(block)
        reports.append(Report(_ADDRESS.sub("0x…", first), k.group(1) if k else None,
                              int(m.group(1)) if m else None, block, fatal))
    return reports


def diagnostics(reports: list[Report], line_spans: list[Optional[Span]],
                filename: str) -> list[Diagnostic]:
    """One diagnostic per distinct report (same kind at the same line), with a count."""
    groups: dict[tuple, list[Report]] = {}
    for r in reports:
        groups.setdefault((r.what, r.kernel, r.line), []).append(r)
    out = []
    for (what, kernel, line), rs in groups.items():
        span = None
        if line is not None and 0 < line <= len(line_spans):
            span = line_spans[line - 1]
        where = f" in kernel {kernel}" if kernel else ""
        at = f", generated line {line}" if line is not None else ""
        times = f" ({len(rs)} times)" if len(rs) > 1 else ""
        out.append(Diagnostic(f"Oclgrind: {what}{where}{at}{times}", span, filename))
    return out


def raise_reports(text: str, line_spans: list[Optional[Span]], filename: str,
                  source: str = "") -> None:
    """OclgrindReport if the captured output holds any report; its text is kept in `.log`."""
    reports = parse(text)
    if reports:
        err = OclgrindReport(diagnostics(reports, line_spans, filename), source)
        err.log = text
        raise err


@contextmanager
def without_query_noise(active: bool = True) -> Iterator[None]:
    """Drop the API checker's reports about pyopencl's device queries (see _NOISE); anything
    else written meanwhile is passed on to stderr."""
    if not active:
        yield
        return
    with captured_stderr() as cap:
        yield
    blocks = re.split(r"(\n\s*\n)", cap.text)
    kept = "".join(b for b in blocks if not _NOISE.search(b)).strip("\n")
    if kept.strip():
        os.write(2, (kept + "\n").encode())
