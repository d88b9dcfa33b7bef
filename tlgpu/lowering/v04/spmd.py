"""v0.4's SPMD regions in OpenCL C: `parallel` (one work-item per lane), `foreach_tile` (tiles
dealt round-robin to the sub-groups) and the sub-group builtins.

The kernel's work-group is the function's (program.choose_geometry: `work_group_size`, else
one sub-group, [subgroup_size, 1], as the interpreter's `spmd_exec.work_group`), so work-item
(lx, ly) = (get_local_id(0), get_local_id(1)) is the interpreter's, with linear id
l = lx + wx·ly (`tl_lid`). The builtins are computed from it as docs/semantics.md ("Work-items
and sub-groups") defines them, on every device: a device's own sub-groups (Intel's with
`intel_reqd_sub_group_size(S)`) are formed from consecutive linear ids too, so the sub-group
operations (subgroups.py) see the same lanes.

Inside an SPMD region every work-item runs the code for itself: stores are not guarded by
`tl_lid == 0`, and no barrier is inserted (the program's own barriers order its accesses;
unordered ones are a race the interpreter reports). Before the region, a barrier orders it
after the collectives that touch the same memory, as for v0.3's `foreach`.
"""

from __future__ import annotations

from tlgpu.lowering.barriers import Pending
from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.views import Scalar
from tlinterp.lang import ir


def subgroup_size(lw, inst) -> int:
    """The function's `subgroup_size`, which every SPMD construct needs (the interpreter
    refuses a run without it as well)."""
    s = lw.fn.subgroup_size
    if s is None:
        raise lw.error(f"@{lw.fn.name} uses work-items or sub-groups but gives no "
                       "subgroup_size: add attributes{subgroup_size=S}", inst.span)
    return s


def spmd_body(lw, w, build) -> None:
    """Lower an SPMD region's code (`build(body_writer)`) in SPMD mode and write it into `w`
    after a barrier against the pending collective accesses it conflicts with."""
    outer, was = lw.pending, lw.spmd
    lw.pending = Pending()
    lw.spmd = True
    body = w.scratch()
    body.depth += 1
    try:
        build(body)
    finally:
        lw.spmd = was
    inner, lw.pending = lw.pending, outer
    lw.access(w, inner.reads, inner.writes)
    return body


def lower_parallel(lw, w, inst: ir.Parallel) -> None:
    subgroup_size(lw, inst)
    # the instructions every work-item reaches (subgroups.setup: the local-memory emulation)
    lw.parallel_top = getattr(lw, "parallel_top", frozenset()) | {
        id(i) for i in inst.body.instructions}
    body = spmd_body(lw, w, lambda b: lw.region(b, inst.body))
    w.open("/* parallel: this work-item */")
    w.extend(body)
    w.close()


def lower_foreach_tile(lw, w, inst: ir.ForeachTile) -> None:
    """Tile t (linear order, first mode fastest) runs on sub-group t mod num_subgroups, each
    sub-group taking its tiles in order with all its work-items (spmd_exec._foreach_tile)."""
    S = subgroup_size(lw, inst)
    t = inst.type
    T = ctype(t)
    nsg = lw.geo.size // S
    names = []
    for a, b, k in zip(inst.starts, inst.stops, inst.tile_shape):
        lo, hi, c = lw.fresh("tlo"), lw.fresh("thi"), lw.fresh("tcount")
        w.line(f"const long {lo} = (long){lw.operand(a, t)}, {hi} = (long){lw.operand(b, t)};")
        w.line(f"const long {c} = {hi} > {lo} ? ({hi} - {lo} + {k - 1}L) / {k}L : 0;")
        names.append((lo, hi, c, k))
    total = lw.fresh("ntiles")
    w.line(f"const long {total} = " + (" * ".join(c for _, _, c, _ in names) or "1") + ";")
    tile, rest = lw.fresh("tile"), lw.fresh("rest")

    def build(body):
        body.line(f"long {rest} = {tile};")
        for var_, size_var, (lo, hi, c, k) in zip(inst.vars, inst.sizes, names):
            off = lw.fresh("toff")
            body.line(f"const long {off} = {lo} + ({rest} % {c}) * {k}L;")
            body.line(f"{rest} /= {c};")
            for v, e in ((var_, off), (size_var, f"min((long){k}L, {hi} - {off})")):
                n = f"v_{v.name}"
                body.line(f"const {T} {n} = ({T})({e});")
                lw.env[v.name] = Scalar(n, t)
        lw.region(body, inst.body)

    body = spmd_body(lw, w, build)
    w.open(f"for (long {tile} = {quot('tl_lid', S)}; {tile} < {total}; {tile} += {nsg})")
    w.extend(body)
    w.close()


def quot(x: str, d: int) -> str:
    """x / d for x >= 0: a shift for a power of two. Neither this nor `rem` writes `/` beside
    `%` (clang pairs them and inserts `freeze`, which Oclgrind cannot run)."""
    return f"(({x}) >> {d.bit_length() - 1})" if d & (d - 1) == 0 else f"(({x}) / {d})"


def rem(x: str, d: int) -> str:
    """x mod d for x >= 0 (a mask for a power of two)."""
    return f"(({x}) & {d - 1})" if d & (d - 1) == 0 else f"(({x}) - ({x}) / {d} * {d})"


LX = "(long)get_local_id(0)"


# builtin name -> C expression of the value (of type long) from the work-item's ids
def _builtin_expr(name: str, comp: str, S: int, wx: int, wy: int) -> str:
    if name == "subgroup_size":
        return str(S)
    if name == "num_subgroups":
        return str({"x": wx // S, "y": wy, "z": 1}[comp])
    if name == "subgroup_id":
        return {"x": quot(LX, S), "y": "(long)get_local_id(1)",
                "z": "0"}[comp]
    if name == "subgroup_linear_id":
        return quot("tl_lid", S)
    assert name == "subgroup_local_id", name
    return rem(LX, S)


def lower_builtin(lw, w, inst: ir.Builtin) -> None:
    """The grid builtins (FunctionLowerer.lower_builtin) and the sub-group builtins."""
    if inst.name in ("group_id", "num_groups"):
        lw.lower_builtin(w, inst)
        return
    S = subgroup_size(lw, inst)
    e = _builtin_expr(inst.name, inst.comp or "x", S, lw.geo.wg0, lw.geo.wg1)
    lw.define(w, inst.result, inst.type, f"({ctype(inst.type)}){e}")


def uses_spmd(fn: ir.Function) -> bool:
    """Whether the function has SPMD constructs whose meaning depends on the work-group
    shape (then the work-group is the function's, never a tuning choice)."""
    return any(isinstance(i, (ir.Parallel, ir.ForeachTile)) for i in ir.walk(fn.body))


__all__ = ["lower_parallel", "lower_foreach_tile", "lower_builtin", "uses_spmd",
           "subgroup_size"]
