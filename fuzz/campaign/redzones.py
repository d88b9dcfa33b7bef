"""Red-zone reports: which argument buffer was written outside its view, where, and which
instructions of the kernel could have done it.

The guards themselves live in `tlinterp.io.args.red_zones` (both backends bind arguments there);
this module turns `RedZones.damaged()` into a finding message.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from tlinterp.io.args import RedZones
from tlinterp.lang import ir
from tlinterp.lang.effects import written_arguments

__all__ = ["writers", "describe"]


def writers(function: ir.Function) -> dict[str, list[tuple[str, Optional[ir.Span]]]]:
    """Argument name -> (instruction kind, span) of every instruction that may write it
    (`tlinterp.lang.effects.written_arguments`: stores and collective outputs in any region,
    through views of views and members of groups)."""
    return written_arguments(function)


def _where(idx: int, guard: int, covered_from: int, covered_to: int) -> str:
    if idx < guard:
        return f"{idx - guard} (before the buffer's first element)"
    if idx > covered_to:
        return f"+{idx - guard} (past the buffer's last element)"
    return f"+{idx - guard} (an element no view covers: stride gap, padding or group offset)"


def describe(zones: RedZones, function: ir.Function, side: str,
             filename: str = "<fuzz>") -> Optional[str]:
    """A finding message for every damaged guard/gap, or None when all sentinels held."""
    damaged = zones.damaged()
    if not damaged:
        return None
    who = writers(function)
    lines = [f"{side} wrote outside the logical views of its arguments (red zones):"]
    for name, guard, idx in damaged:
        covered = next(c for n, _, c, g in zones.buffers if n == name)
        on = np.flatnonzero(covered)
        lo, hi = (int(on[0]), int(on[-1])) if on.size else (guard, guard - 1)
        shown = ", ".join(_where(int(i), guard, lo, hi) for i in idx[:4])
        more = f" and {len(idx) - 4} more" if len(idx) > 4 else ""
        lines.append(f"  %{name}: element offset {shown}{more}")
        cands = who.get(name, [])
        if cands:
            spans = ", ".join(f"{k} at {filename}:{s}" if s else k for k, s in cands[:4])
            lines.append(f"    instructions writing %{name}: {spans}"
                         + (" ..." if len(cands) > 4 else ""))
    return "\n".join(lines)
