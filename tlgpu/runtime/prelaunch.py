"""Checks before an OpenCL launch, for what can be decided from the arguments alone.

The OpenCL backend does not detect undefined behaviour: a kernel that goes out of bounds on
the device may crash the driver or write memory it does not own. Two mistakes are common enough
and cheap enough to catch before launching:

- a work-group count the device cannot launch (more work-items than `size_t` holds; pyopencl
  would fail with a bare `std::bad_cast`);
- a load of a group member that does not exist, when the function body (outside any `if`,
  `for` or `foreach`, so it runs in every work-group) loads member `group_id` or a constant
  member. The report is the interpreter's: kind `out-of-bounds`, exit status 1.
"""

from __future__ import annotations

from typing import Union

from tlinterp.interp.ub import Collector, raise_reports
from tlinterp.io.args import BoundArgs, GroupArg
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ArgumentError
from tlinterp.lang.types import GroupType

__all__ = ["check_launch"]


def check_group_count(groups: int, items_per_group: int, address_bits: int) -> None:
    """ArgumentError unless `groups` work-groups fit the device's global size (`size_t`)."""
    limit = (1 << address_bits) - 1
    if groups * items_per_group > limit:
        raise ArgumentError(
            f"{groups} work-groups of {items_per_group} work-item(s) exceed what the device "
            f"can launch (at most {limit // items_per_group} work-groups: its global size is a "
            f"{address_bits}-bit size_t)")


def _member_loads(function: ir.Function):
    """(load, member index) for every top-level load of a group argument whose member index
    is `group_id` (index None) or a constant."""
    groups = {a.value.name for a in function.args if isinstance(a.type, GroupType)}
    group_ids: set[str] = set()
    for inst in function.body.instructions:
        if isinstance(inst, ir.GroupId):
            group_ids.add(inst.result.name)
        elif isinstance(inst, ir.Load) and inst.operand.name in groups and inst.indices:
            idx = inst.indices[0]
            if isinstance(idx, ir.Value) and idx.name in group_ids:
                yield inst, None
            elif isinstance(idx, ir.Const) and not idx.is_float:
                yield inst, int(idx.value)


def check_member_loads(program: ir.Program, function: ir.Function, bound: BoundArgs,
                       groups: int) -> None:
    """UndefinedBehaviour when some work-group surely loads a member that does not exist."""
    if groups == 0:
        return
    col = Collector(program.filename, program.source)
    for load, const in _member_loads(function):
        g = bound.values.get(load.operand.name)
        if not isinstance(g, GroupArg):
            continue
        count = len(g.members)
        name = "%" + load.operand.name
        if const is None and groups > count:
            # the interpreter's wording; it reports the first offending work-groups
            for gid in range(count, min(groups, count + 4)):
                col.add("out-of-bounds", load.span, (gid,), (gid,),
                        f"work-group {gid} loads member {gid} of {name}, which has "
                        f"{count} members")
            if groups > count + 4:
                col.drop("out-of-bounds", groups - count - 4, "")  # work-groups
        elif const is not None and not 0 <= const < count:
            col.add("out-of-bounds", load.span, (0,), (const,),
                    f"every work-group loads member {const} of {name}, which has "
                    f"{count} members")
    raise_reports(col)


def check_launch(program: ir.Program, function: ir.Function, bound: BoundArgs,
                 groups: Union[int, tuple[int, int, int]], items_per_group: int,
                 address_bits: int) -> None:
    """Both checks above, for a count or a grid (x, y, z) of work-groups (members are loaded
    at group_id.x, which runs to x); raises ArgumentError (exit 2) or UndefinedBehaviour
    (exit 1)."""
    x, y, z = groups if isinstance(groups, tuple) else (groups, 1, 1)
    check_group_count(x * y * z, items_per_group, address_bits)
    check_member_loads(program, function, bound, x)
