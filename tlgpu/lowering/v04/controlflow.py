"""v0.4 control flow and the small v0.4 instructions in OpenCL C: `for` with loop-carried
values (init(...) -> (...)), multi-dimensional `foreach` and `associated` (docs/semantics.md
"v0.4 instructions on the OpenCL backend"). Scalar `constant`s never reach the lowering: the
v0.3 form folds them into literals (tlinterp/front/migrate.py); coopmatrix ones are SPMD code.

`for` shares FunctionLowerer.lower_for (trip count, barrier fixpoint); this module adds the
carried values: each lives in a C variable declared before the loop, the body sees it as a
scalar, its `yield` writes fresh variables that become the carried ones at the end of the
iteration (so `yield (%b, %a)` swaps), and the results are the carried variables after the
loop (the inits for an empty loop)."""

from __future__ import annotations

from typing import Union

from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.views import Scalar, View, var
from tlinterp.lang import ir
from tlinterp.lang.types import CoopMatrixType, ScalarType

# (C variable, type) per loop-carried value
Carried = list[tuple[str, Union[ScalarType, CoopMatrixType]]]


def _carried_types(lw, inst: ir.For) -> tuple[Union[ScalarType, CoopMatrixType], ...]:
    """Scalars, and coopmatrix values: a work-item's components are a struct (coopmatrix.py),
    which a C variable carries like a scalar."""
    for t in inst.result_types:
        if not isinstance(t, (ScalarType, CoopMatrixType)):
            raise lw.error(f"not yet lowered: a loop carrying a value of type {t}", inst.span)
    return tuple(inst.result_types)  # type: ignore[return-value]


def carried_prologue(lw, w, inst: ir.For) -> Carried:
    """Declare the carried variables with their initial values (before the loop)."""
    carried: Carried = []
    for (_, init), t in zip(inst.inits, _carried_types(lw, inst)):
        name = lw.fresh("carry")
        w.line(f"{ctype(t)} {name} = {lw.operand(init, t)};")
        carried.append((name, t))
    return carried


def carried_body(lw, w, inst: ir.For, carried: Carried) -> None:
    """Run the body with the carried values bound; its final `yield` advances them."""
    for (v, _), (name, t) in zip(inst.inits, carried):
        lw.env[v.name] = Scalar(name, t)
    nxt = [lw.fresh("next") for _ in carried]
    for n, (_, t) in zip(nxt, carried):
        w.line(f"{ctype(t)} {n};")
    lw.branch(w, inst.body, nxt)
    for n, (name, _) in zip(nxt, carried):
        w.line(f"{name} = {n};")


def carried_results(lw, w, inst: ir.For, carried: Carried) -> None:
    """The loop's results: the carried values after the last iteration."""
    for r, (name, t) in zip(inst.results, carried):
        lw.define(w, r, t, name)


def lower_foreach_nd(lw, w, inst: ir.ForeachNd) -> None:
    """Every point of the box, one work-item per point in turn: the linear point number is
    split into the coordinates with the first variable fastest (the interpreter's order; no
    result may depend on it)."""
    t = inst.type
    lo = [lw.fresh("lo") for _ in inst.vars]
    n = [lw.fresh("n") for _ in inst.vars]
    prologue = []
    for k, (a, b) in enumerate(zip(inst.starts, inst.stops)):
        prologue.append(f"const long {lo[k]} = (long){lw.operand(a, t)};")
        prologue.append(f"const long {n[k]} = (long){lw.operand(b, t)} - {lo[k]} > 0 ? "
                        f"(long){lw.operand(b, t)} - {lo[k]} : 0;")
    total = " * ".join(n)

    def bind(body, it: str) -> None:
        rest = it
        for k, v in enumerate(inst.vars):
            coord = rest
            if k + 1 < len(inst.vars):
                # no `%` beside the `/`: clang pairs them into a `freeze` Oclgrind cannot run
                nxt = lw.fresh("rest")
                body.line(f"const long {nxt} = {rest} / {n[k]};")
                coord, rest = f"{rest} - {nxt} * {n[k]}", nxt
            body.line(f"const {ctype(t)} {var(v.name)} = ({ctype(t)})({lo[k]} + {coord});")
            lw.env[v.name] = Scalar(var(v.name), t)

    lw.spmd_loop(w, prologue, total, bind, inst.body)


def lower_associated(lw, w, inst: ir.Associated) -> None:
    """True for every memref and group the runtime passes (each is a buffer of at least 8
    bytes, never a null pointer) and for allocas: the interpreter's answer, computed from the
    pointer where there is one in global memory."""
    val = lw.env[inst.operand.name]
    if isinstance(val, View):
        expr = f"({val.ptr} != 0)" if val.space == "global" else "true"
    else:
        expr = f"({val.ptrs} != 0)"
    lw.define(w, inst.result, ScalarType.i1, expr)
