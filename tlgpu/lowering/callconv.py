"""The kernel parameters of a function under the calling convention (docs/semantics.md,
"OpenCL calling convention"), computed in one place: the lowering declares them in this order
and the runtime passes values in this order (for our kernels and for foreign OpenCL C alike),
so the two cannot disagree.

Two conventions, chosen by the program's language (`convention_of`):

- "v0.3", the one the original compiler (tinytc v0.3.1) uses: per argument, its value or data
  pointer, then for each mode in turn the mode's size if it is `?` and then the mode's stride
  if it is `?` (interleaved per mode, not all sizes before all strides); a group's `?` offset
  comes last.
- "v0.4" (tinytc v0.4.0): the data pointer, then every `?` size left to right, then every `?`
  stride left to right; a group then passes its `?` size (the member count), then its `?`
  offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ArgumentError
from tlinterp.lang.types import GroupType, MemrefType, Type

Role = Literal["value", "data", "shape", "stride", "size", "offset"]
Convention = Literal["v0.3", "v0.4"]
CONVENTIONS: tuple[Convention, ...] = ("v0.3", "v0.4")


def convention_of(program: ir.Program) -> Convention:
    """The convention a program's kernels follow: its language's (v0.3 when unknown)."""
    return "v0.4" if program.lang == "v0.4" else "v0.3"


@dataclass(frozen=True)
class Param:
    """One kernel parameter: `role` of argument `arg` (its name, without `%`); `mode` for a
    `shape` or `stride` parameter. For a group, `data` is the member pointer array,
    `shape`/`stride` are arrays with one entry per member and `size` (v0.4 only) is the
    member count."""

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


def dynamic_params(arg: str, m: MemrefType, convention: Convention = "v0.3") -> list[Param]:
    """The parameters of a memref's `?` sizes and strides: interleaved per mode (v0.3), or
    all sizes, then all strides (v0.4)."""
    if convention == "v0.4":
        return ([Param(arg, "shape", k) for k, s in enumerate(m.shape) if s is None]
                + [Param(arg, "stride", k) for k, s in enumerate(m.stride) if s is None])
    out: list[Param] = []
    for k, (size, stride) in enumerate(zip(m.shape, m.stride)):
        if size is None:
            out.append(Param(arg, "shape", k))
        if stride is None:
            out.append(Param(arg, "stride", k))
    return out


def argument_params(arg: str, t: Type, convention: Convention = "v0.3") -> list[Param]:
    """The parameters one argument of type `t` is passed in."""
    if isinstance(t, MemrefType):
        return [Param(arg, "data"), *dynamic_params(arg, t, convention)]
    if isinstance(t, GroupType):
        # a v0.3 group has no size of its own (the type says `?` there): only v0.4 passes it
        tail = [Param(arg, "size")] if convention == "v0.4" and t.size is None else []
        if t.offset is None:
            tail.append(Param(arg, "offset"))
        return [Param(arg, "data"), *dynamic_params(arg, t.memref, convention), *tail]
    return [Param(arg, "value")]


def parameters(fn: ir.Function, convention: Convention = "v0.3") -> list[Param]:
    """All parameters of `fn`'s kernel, in order (the local-memory slab argument, which only
    our lowering adds, excepted)."""
    return [p for a in fn.args for p in argument_params(a.value.name, a.type, convention)]


def launch_sizes(convention: Convention, work_group: tuple[int, int],
                 grid: tuple[int, int, int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(global size, local size) of a launch of `grid` work-groups of `work_group` work-items.
    v0.3 lays a 1-D grid along axis 2: global (wg0, wg1, N), the group id get_global_id(2);
    v0.4 launches the grid itself: global (wg0 x, wg1 y, z), the group id get_group_id(axis).
    A grid with y or z > 1 has no v0.3 launch: ArgumentError."""
    w0, w1 = work_group
    x, y, z = grid
    if convention == "v0.4":
        return (w0 * x, w1 * y, z), (w0, w1, 1)
    if (y, z) != (1, 1):
        raise ArgumentError(f"a grid of {x},{y},{z} work-groups needs the v0.4 calling "
                            "convention (a v0.4 program); the v0.3 launch is one-dimensional")
    return (w0, w1, x), (w0, w1, 1)
