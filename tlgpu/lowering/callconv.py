"""The kernel parameters of a function under the calling convention (docs/semantics.md,
"OpenCL calling convention"), computed in one place: the lowering declares them in this order
and the runtime passes values in this order (for our kernels and for foreign OpenCL C alike),
so the two cannot disagree.

The order is the one the original compiler (tinytc v0.3.1) uses: per argument, its value or
data pointer, then for each mode in turn the mode's size if it is `?` and then the mode's
stride if it is `?` (interleaved per mode, not all sizes before all strides); a group's `?`
offset comes last."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from tlinterp import ir
from tlinterp.types import GroupType, MemrefType, Type

Role = Literal["value", "data", "shape", "stride", "offset"]


@dataclass(frozen=True)
class Param:
    """One kernel parameter: `role` of argument `arg` (its name, without `%`); `mode` for a
    `shape` or `stride` parameter. For a group, `data` is the member pointer array and
    `shape`/`stride` are arrays with one entry per member."""

    arg: str
    role: Role
    mode: Optional[int] = None

    @property
    def suffix(self) -> str:
        """What the C parameter's name adds to the argument's: `_shape1`, `_offset`, or
        nothing for the value or data pointer (the names tinytc gives them too)."""
        if self.role in ("value", "data"):
            return ""
        return f"_{self.role}" + ("" if self.mode is None else str(self.mode))


def dynamic_params(arg: str, m: MemrefType) -> list[Param]:
    """The parameters of a memref's `?` sizes and strides, interleaved per mode."""
    out: list[Param] = []
    for k, (size, stride) in enumerate(zip(m.shape, m.stride)):
        if size is None:
            out.append(Param(arg, "shape", k))
        if stride is None:
            out.append(Param(arg, "stride", k))
    return out


def argument_params(arg: str, t: Type) -> list[Param]:
    """The parameters one argument of type `t` is passed in."""
    if isinstance(t, MemrefType):
        return [Param(arg, "data"), *dynamic_params(arg, t)]
    if isinstance(t, GroupType):
        tail = [Param(arg, "offset")] if t.offset is None else []
        return [Param(arg, "data"), *dynamic_params(arg, t.memref), *tail]
    return [Param(arg, "value")]


def parameters(fn: ir.Function) -> list[Param]:
    """All parameters of `fn`'s kernel, in order (the local-memory slab argument, which only
    our lowering adds, excepted)."""
    return [p for a in fn.args for p in argument_params(a.value.name, a.type)]
