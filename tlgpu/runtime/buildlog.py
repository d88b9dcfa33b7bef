"""Map an OpenCL compiler log back to tensor-language instructions via the line table."""

from __future__ import annotations

import os
import re
from typing import Optional

from tlinterp.lang.diagnostics import Diagnostic
from tlinterp.lang.ir import Span

# clang-style "<source>:12:5: error: ..." (pocl, Oclgrind, NVIDIA use this shape)
_LOCATION = re.compile(r"^(?:<[^>]*>|[^:\s]*):(\d+):(\d+):\s*(error|warning):\s*(.*)$")
# pocl 3: "error: /path/to/tempfile.cl:82:35: message"
_POCL = re.compile(r"^(error|warning):\s*[^:\s]*:(\d+):(\d+):\s*(.*)$")


def map_log(log: str, line_spans: list[Optional[Span]], filename: str) -> list[Diagnostic]:
    """One diagnostic per compiler error, at the span of the instruction that produced it."""
    diags = []
    for raw in log.splitlines():
        raw = raw.strip()
        m = _LOCATION.match(raw)
        if m:
            kind, line_no, message = m.group(3), m.group(1), m.group(4)
        elif (m := _POCL.match(raw)):
            kind, line_no, message = m.group(1), m.group(2), m.group(4)
        else:
            continue
        if kind != "error":
            continue
        line = int(line_no) - 1
        span = line_spans[line] if 0 <= line < len(line_spans) else None
        diags.append(Diagnostic(f"OpenCL C build error (generated line {line + 1}): "
                                f"{message}", span, filename))
    return diags


_SAVED = re.compile(r"\n?\(source saved as (\S+\.cl)\)")


def without_saved_source(message: str) -> str:
    """pyopencl writes the source of every failed build to a temporary file it never removes
    and names it in the message: remove the file (a campaign or a triage builds many that fail) and
    the line."""
    for path in _SAVED.findall(message):
        try:
            os.unlink(path)
        except OSError:
            pass
    return _SAVED.sub("", message)
