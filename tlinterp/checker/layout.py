"""The layout rule of written memref types (both language versions state it): sizes and
strides are not negative, one stride per mode, the stride of mode 0 at least 1 and each other
stride at least the previous stride times the previous size (elements never overlap)."""

from __future__ import annotations

from tlinterp.lang.types import GroupType, MemrefType, Type, canonical_strides

__all__ = ["layout_problems", "written_layout_problems"]


def written_layout_problems(t: Type) -> list[str]:
    """The layout rule of any written type: a memref's, a group's memref's; none for others."""
    m = t.memref if isinstance(t, GroupType) else t
    return layout_problems(m) if isinstance(m, MemrefType) else []


def layout_problems(t: MemrefType) -> list[str]:
    """Violations of the spec's layout restriction 1 <= S_1, S_{i-1} s_{i-1} <= S_i (where
    static), plus malformed shapes (negative sizes, stride count != order). Modes count from 0
    as in the instructions."""
    problems = []
    if len(t.stride) != t.order:
        n = len(t.stride)
        return [f"strided layout has {n} entr{'y' if n == 1 else 'ies'} for a memref "
                f"of order {t.order}"]
    for k, size in enumerate(t.shape):
        if size is not None and size < 0:
            problems.append(f"mode {k} has negative size {size}")
    if problems and t.stride == canonical_strides(t.shape):
        return problems  # strides derived from the bad sizes: one mistake, one message
    for k, s in enumerate(t.stride):
        if s is not None and s < 0:
            problems.append(f"mode {k} has negative stride {s}")
    if problems:
        return problems
    if t.order and t.stride[0] is not None and t.stride[0] < 1:
        problems.append(f"the stride of mode 0 must be at least 1, got {t.stride[0]}")
    for k in range(1, t.order):
        prev, size, cur = t.stride[k - 1], t.shape[k - 1], t.stride[k]
        if None not in (prev, size, cur) and prev * size > cur:
            problems.append(
                f"layout restriction violated: stride {prev} x size {size} of mode {k - 1} "
                f"exceeds the stride {cur} of mode {k}")
    if problems:  # (malformed and negative entries returned above: no hint fits them)
        problems[-1] += _layout_hint(t)
    return problems


def _layout_hint(t: MemrefType) -> str:
    """How to write `t` within the layout rule: each stride raised to the least it may be."""
    fixed: list = []
    for k, s in enumerate(t.stride):
        least = 1 if k == 0 else (None if None in (fixed[-1], t.shape[k - 1])
                                  else fixed[-1] * t.shape[k - 1])
        fixed.append(s if s is None or least is None else max(s, least))
    good = MemrefType(t.element, t.shape, tuple(fixed))
    return (f"; hint: the spec's layout rule wants the stride of mode 0 at least 1 and each "
            f"other stride at least the previous stride times the previous size, so that "
            f"elements never overlap: write {good} (the least strides allowed), or a subview "
            f"of a larger memref for a block of one")
