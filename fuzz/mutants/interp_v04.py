"""Planted bugs in a v0.4 implementation: the reference interpreter as a `python:` plug-in with
one rule changed (`python bench/mutants.py --lang v0.4`, docs/fuzzing.md "Mutation bench").

    tlfuzz --lang v0.4 --impl python:fuzz.mutants.interp_v04:sg-scan-exclusive
    tlconform --lang v0.4 --impl python:fuzz.mutants.interp_v04:reference

Every name of MUTATIONS is a plug-in function of this module (`python:MODULE:NAME`, served by
the module's `__getattr__`), and so is `reference`, the same plug-in with no rule changed. A
mutant is one small change of the kind a compiler bug makes, in one rule of the interpreter's
v0.4 layer (sub-groups, cooperative matrices, loop-carried values, grids, low-precision
rounding, atomics): a patched module function, a patched entry of the interpreter's dispatch
table, or an instruction rewritten before its handler sees it.

The reference itself never changes: the plug-in runs in the same process as the reference it
is compared with (tlfuzz's sandbox child, tlconform), so every patch is gated. It is installed
once per process and takes its wrong branch only in the thread running a plug-in call of its
own mutant (a thread-local name set for the call); everywhere else it calls the original rule.
While a mutant is active the interpreter's single-lane fast path for `for` loops is off, so
that a changed scalar rule reaches loops too (the fast path computes the same results as the
general walker). A program nested deeper than `tlinterp.lang.deepstack.SHALLOW` runs on a thread of
its own, where the mutant is not active: such a run is the reference's.

`fuzz.mutants.lowering_v03.HITS[0]` counts the wrong branches taken, the counter the v0.3
mutants use: the sandbox reports it, and a mutant that never applied cannot have been detected
(the bench says "not applicable").
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from fuzz.mutants.lowering_v03 import HITS, Mutation
from tlinterp.lang import ir

_LOCAL = threading.local()  # .name: the mutant of the plug-in call running in this thread
_INSTALLED: set[str] = set()
_INSTALL_LOCK = threading.Lock()


def active() -> Optional[str]:
    """The mutant whose plug-in call runs in this thread (None: the reference)."""
    return getattr(_LOCAL, "name", None)


def _hit() -> None:
    HITS[0] += 1


def _gate(name: str, orig: Callable, wrong: Callable) -> Callable:
    """`wrong` in a plug-in call of mutant `name`, `orig` everywhere else."""

    def gated(*a: Any, **k: Any) -> Any:
        if getattr(_LOCAL, "name", None) == name:
            return wrong(*a, **k)
        return orig(*a, **k)

    gated.__wrapped__ = orig  # type: ignore[attr-defined]
    return gated


def _patch(name: str, owner: Any, attr: str, make: Callable[[Callable], Callable]) -> None:
    """owner.attr (a module function, a method, or a dict entry when owner is a dict) gated
    between its original and `make(original)`."""
    if isinstance(owner, dict):
        owner[attr] = _gate(name, owner[attr], make(owner[attr]))
    else:
        orig = getattr(owner, attr)
        setattr(owner, attr, _gate(name, orig, make(orig)))


def _rewrite(name: str, cls: type, change: Callable[[Any], Any]) -> Callable[[], None]:
    """A mutant that hands the handler of `cls` a changed instruction: `change(inst)` -> the
    wrong instruction, or None where the bug does not apply. The changed instruction is
    remembered per original for the run (on its executor), so that the walker's caches keyed
    by identity stay valid and nothing outlives the run."""

    def install() -> None:
        from tlinterp.interp import execute

        def make(orig: Callable) -> Callable:
            def wrong(ex, inst, env, lanes, col):
                made = ex.__dict__.setdefault(f"_mutant_{name}", {})
                hit = made.get(id(inst))
                if hit is None or hit[0] is not inst:
                    hit = made[id(inst)] = (inst, change(inst))
                if hit[1] is None:
                    return orig(ex, inst, env, lanes, col)
                _hit()
                return orig(ex, hit[1], env, lanes, col)

            return wrong

        _patch(name, execute.DISPATCH, cls, make)

    return install


# --- sub-group operations ----------------------------------------------------------------------


def _scan_exclusive(inst):
    """subgroup_inclusive_scan_<op> computed as the exclusive scan."""
    if not inst.op.startswith("inclusive_scan_"):
        return None
    return dataclasses.replace(inst, op=inst.op.replace("inclusive", "exclusive"))


def _reduce_prefix(inst):
    """subgroup_reduce_<op> gives each lane its inclusive prefix (the broadcast of the last
    lane's value is missing)."""
    if not inst.op.startswith("reduce_"):
        return None
    return dataclasses.replace(inst, op=inst.op.replace("reduce", "inclusive_scan"))


def _identity_zero(name: str) -> Callable[[], None]:
    """The identity of max and min (lane 0 of an exclusive scan) taken as 0."""

    def install() -> None:
        from tlinterp.interp import lowp

        def make(orig):
            def wrong(op, ty):
                if op == "add":
                    return orig(op, ty)
                _hit()
                return lowp.dtype(ty).type(0)

            return wrong

        _patch(name, lowp, "identity", make)

    return install


def _broadcast_lane0(inst):
    """subgroup_broadcast ignores its index: every lane gets lane 0's value."""
    if isinstance(inst.index, ir.Const) and int(inst.index.value) == 0:
        return None
    return dataclasses.replace(inst, index=ir.Const(0))


# --- cooperative matrices ----------------------------------------------------------------------


def _layout_lane_major(name: str) -> Callable[[], None]:
    """The coopmatrix register layout numbers the (lane p, component v) pairs lane-major,
    L = p V + v, instead of component-major, L = p + v S: for an M x N matrix with M = S the
    rows and columns of extract/insert/apply are swapped. Loads, stores and arithmetic use the
    same wrong layout, so only instructions that name a component show it."""

    def install() -> None:
        from tlinterp.interp import coopmatrix as cm

        def make(orig):
            def wrong(self, p, v):
                if self.V == 1:
                    return orig(self, p, v)
                _hit()
                L = np.asarray(p) * self.V + np.asarray(v)
                return orig(self, L % self.S, L // self.S)

            return wrong

        _patch(name, cm.Layout, "position", make)

    return install


def _load_untransposed(inst):
    """cooperative_matrix_load.t reads the matrix untransposed."""
    return dataclasses.replace(inst, trans=False) if inst.trans else None


def _apply_ij_swapped(inst):
    """cooperative_matrix_apply hands the entry's column as %i and its row as %j."""
    return dataclasses.replace(inst, row=inst.col, col=inst.row)


def _mul_add_low(name: str) -> Callable[[], None]:
    """cooperative_matrix_mul_add of low-precision A and B (f16, bf16, integers narrower than
    C) accumulates in A's and B's type, not in C's: C is converted down, every product and sum
    is rounded to the low type, and the result converted back."""

    def install() -> None:
        from tlinterp.interp import coopmatrix as cm
        from tlinterp.interp import execute, lowp
        from tlinterp.interp import spmd_exec as se

        def make(orig):
            def wrong(ex, inst, env, lanes, col):
                a, b, c = (env.get(v.name) for v in (inst.a, inst.b, inst.c))
                ta, tb, tc = a.layout.ty, b.layout.ty, c.layout.ty
                low = lowp.promote(ta, tb)
                if low is None or low == tc or tc in lowp.COMPLEX or low in lowp.COMPLEX:
                    return orig(ex, inst, env, lanes, col)
                _hit()
                st = se._state(ex, inst)
                layout = se._layout(st, inst.type)
                pa, _ = se._padded(ex, st, lanes, a, inst, col)
                pb, _ = se._padded(ex, st, lanes, b, inst, col)
                pc, _ = se._padded(ex, st, lanes, c, inst, col)
                K = a.layout.N
                with np.errstate(all="ignore"):
                    c_low = lowp.cast(pc, tc, low)[0]
                    d = cm.mul_add(pa[..., :K], pb[..., :K, :], c_low, ta, tb, low, low)
                    d = lowp.cast(d, low, layout.ty)[0]
                env.set(inst.result.name, se._coop_out(st, lanes, layout, d))

            return wrong

        _patch(name, execute.DISPATCH, ir.CoopMulAdd, make)

    return install


# --- control flow, collectives, grids ----------------------------------------------------------


def _for_stale(inst):
    """A `for` with loop-carried values returns the values carried INTO its last iteration
    (the last yield is lost, as when a lowering reads the loop header's phi after a
    bottom-tested loop). Rewritten as the same loop carrying one more copy of each value, the
    previous iteration's, whose results then stand for the real ones (`_for_stale_install`)."""
    if not _for_stale_applies(inst):
        return None
    y = inst.body.instructions[-1]
    prev = tuple(ir.Value(f"{v.name}.stale") for v, _ in inst.inits)
    body = dataclasses.replace(inst.body, instructions=[
        *inst.body.instructions[:-1],
        dataclasses.replace(y, values=y.values + tuple(v for v, _ in inst.inits),
                            types=y.types + y.types)])
    return dataclasses.replace(
        inst, body=body,
        inits=inst.inits + tuple((p, init) for p, (_, init) in zip(prev, inst.inits)),
        results=inst.results + tuple(ir.Value(f"{r.name}.stale") for r in inst.results),
        result_types=inst.result_types + inst.result_types)


def _for_stale_applies(inst) -> bool:
    body = inst.body.instructions
    return bool(inst.inits) and bool(body) and isinstance(body[-1], ir.Yield)


def _for_stale_install() -> None:
    from tlinterp.interp import execute

    _rewrite("for-yield-stale", ir.For, _for_stale)()

    def make(orig):
        def wrong(ex, inst, env, lanes, col):
            orig(ex, inst, env, lanes, col)  # the rewrite above, then: the stale copies
            if _for_stale_applies(inst):
                for r in inst.results:
                    env.set(r.name, env.get(f"{r.name}.stale"))

        return wrong

    _patch("for-yield-stale", execute.DISPATCH, ir.For, make)


def _cumsum_exclusive(name: str) -> Callable[[], None]:
    """cumsum is exclusive: element k gets the sum of the elements before it."""

    def install() -> None:
        from tlinterp.interp import collectives, exec_v04

        def make(orig):
            def wrong(inst, ins, ct):
                r = orig(inst, ins, ct)
                axis = inst.mode + 1
                if r.shape[axis] == 0:
                    return r
                _hit()
                out = np.zeros_like(r)
                src = np.moveaxis(r, axis, -1)
                np.moveaxis(out, axis, -1)[..., 1:] = src[..., :-1]
                return out

            return wrong

        _patch(name, collectives._PRODUCTS, exec_v04._CumsumOp, make)

    return install


def _group_id_yz(inst):
    """group_id.y and group_id.z swapped (the 3-D grid decomposed in the wrong order)."""
    if inst.name != "group_id" or inst.comp not in ("y", "z"):
        return None
    return dataclasses.replace(inst, comp="z" if inst.comp == "y" else "y")


# --- low-precision rounding, min/max, atomics --------------------------------------------------


def _rounding(name: str, dtype_name: str,
              narrow: Callable[[np.ndarray], np.ndarray]) -> Callable[[], None]:
    """Every rounding of an f32 value to the type `dtype_name` (arithmetic, casts, constants,
    the math functions) done by `narrow(x_f32)` instead of the correctly rounded conversion."""

    def install() -> None:
        from tlinterp.interp import lowp, scalar_v04

        t = lowp.dtype(dtype_name)
        fns = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}

        def narrowed(x32) -> np.ndarray:
            x32 = np.asarray(x32, np.float32)
            r = narrow(x32)
            with np.errstate(all="ignore"):
                right = x32.astype(t).astype(np.float32)
            got = r.astype(np.float32)
            if np.any((got != right) & ~(np.isnan(got) & np.isnan(right))):
                _hit()
            return r

        def arith(orig):
            def wrong(op, a, b, ty):
                if ty != dtype_name:
                    return orig(op, a, b, ty)
                with np.errstate(all="ignore"):
                    return narrowed(fns[op](np.asarray(a, t).astype(np.float32),
                                            np.asarray(b, t).astype(np.float32)))

            return wrong

        def float_to_float(orig):
            def wrong(a, src, dst):
                if dst != dtype_name:
                    return orig(a, src, dst)
                return narrowed(lowp._odd_f32(a) if src == "f64" else a.astype(np.float32))

            return wrong

        def to_narrow(orig):
            def wrong(x, dst):
                return narrowed(lowp._odd_f32(x)) if dst == t else orig(x, dst)

            return wrong

        def round_(orig):
            def wrong(ty, r):
                if ty.dtype != t:
                    return orig(ty, r)
                return narrowed(np.asarray(r).astype(np.float32))

            return wrong

        _patch(name, lowp, "arith", arith)
        _patch(name, lowp, "_float_to_float", float_to_float)
        _patch(name, lowp, "_to_narrow_float", to_narrow)
        _patch(name, scalar_v04, "_round", round_)

    return install


def _bf16_truncate(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 by dropping the low 16 bits (round toward zero)."""
    import ml_dtypes

    a = np.asarray(x, np.float32)
    bits = a.reshape(-1).view(np.uint32) >> 16  # reshape: a 0-d value too, kept 0-d below
    return bits.astype(np.uint16).view(ml_dtypes.bfloat16).reshape(a.shape)


def _f16_flush(x: np.ndarray) -> np.ndarray:
    """f32 -> f16 correctly rounded, then subnormal results flushed to zero (sign kept)."""
    with np.errstate(all="ignore"):
        h = x.astype(np.float16)
    return np.where(np.abs(h) < np.float16(2.0 ** -14), np.copysign(np.float16(0), h), h) \
        .astype(np.float16)


def _minmax_nan(name: str) -> Callable[[], None]:
    """Floating min and max return NaN when an operand is NaN (IEEE minimum/maximum) instead of
    the other operand (minNum/maxNum, OpenCL's fmin/fmax)."""

    def install() -> None:
        from tlinterp.interp import scalar, scalar_v04
        from tlinterp.lang.ops import FLOAT

        def make(orig):
            def wrong(*a):
                *_, x, y = a
                r = orig(*a)
                nan = np.isnan(np.asarray(x, np.float64)) | np.isnan(np.asarray(y, np.float64))
                if not np.any(nan):
                    return r
                _hit()
                if isinstance(r, tuple):  # scalar.py's (result, faults)
                    return (np.where(nan, np.asarray(r[0]).dtype.type(np.nan), r[0]), r[1])
                return np.where(nan, np.asarray(r).dtype.type(np.nan), r)

            return wrong

        for op in ("min", "max"):
            _patch(name, scalar.BINARY[FLOAT], op, make)
            _patch(name, scalar_v04._FLOAT_BINARY, op, make)

    return install


def _atomic_exchange(name: str) -> Callable[[], None]:
    """atomic_max and atomic_min store their operand without comparing (an atomic exchange);
    the returned old value stays right."""

    def install() -> None:
        from tlinterp.interp import exec_v04

        def make(orig):
            def wrong(op, t, a, b):
                if op == "add":
                    return orig(op, t, a, b)
                _hit()
                return np.broadcast_to(np.asarray(b, t.dtype), np.shape(orig(op, t, a, b)))

            return wrong

        _patch(name, exec_v04, "atomic_combine", make)

    return install


# --- the registry ------------------------------------------------------------------------------


def _rw(name: str, cls_name: str, change: Callable) -> Callable[[], None]:
    def install() -> None:
        _rewrite(name, getattr(ir, cls_name), change)()

    return install


_M = [  # name, category, doc, install
    ("sg-scan-exclusive", "subgroup", "subgroup_inclusive_scan computes the exclusive scan",
     _rw("sg-scan-exclusive", "SubgroupOp", _scan_exclusive)),
    ("sg-reduce-prefix", "subgroup", "subgroup_reduce gives each lane its inclusive prefix",
     _rw("sg-reduce-prefix", "SubgroupOp", _reduce_prefix)),
    ("sg-identity-zero", "subgroup", "exclusive scan max/min: lane 0 gets 0, not the identity",
     _identity_zero("sg-identity-zero")),
    ("sg-broadcast-lane0", "subgroup", "subgroup_broadcast ignores its index (reads lane 0)",
     _rw("sg-broadcast-lane0", "SubgroupBroadcast", _broadcast_lane0)),
    ("coop-layout-lane-major", "coopmatrix",
     "coopmatrix layout numbered lane-major (extract/insert rows and columns swapped)",
     _layout_lane_major("coop-layout-lane-major")),
    ("coop-load-trans-ignored", "coopmatrix", "cooperative_matrix_load.t loads untransposed",
     _rw("coop-load-trans-ignored", "CoopLoad", _load_untransposed)),
    ("coop-apply-ij-swapped", "coopmatrix", "cooperative_matrix_apply's %i and %j swapped",
     _rw("coop-apply-ij-swapped", "CoopApply", _apply_ij_swapped)),
    ("coop-mul-add-low", "coopmatrix",
     "mixed-precision mul_add accumulates in A's/B's type, not C's",
     _mul_add_low("coop-mul-add-low")),
    ("for-yield-stale", "control", "for returns the values carried into its last iteration",
     _for_stale_install),
    ("cumsum-exclusive", "collective", "cumsum is exclusive (element k misses x[k])",
     _cumsum_exclusive("cumsum-exclusive")),
    ("group-id-yz", "grid", "group_id.y and group_id.z swapped",
     _rw("group-id-yz", "Builtin", _group_id_yz)),
    ("bf16-truncate", "lowp", "f32 -> bf16 rounds toward zero (truncation)",
     _rounding("bf16-truncate", "bf16", _bf16_truncate)),
    ("f16-flush-subnormals", "lowp", "f16 results flush subnormals to zero",
     _rounding("f16-flush-subnormals", "f16", _f16_flush)),
    ("minmax-nan", "scalar", "float min/max propagate NaN instead of ignoring it",
     _minmax_nan("minmax-nan")),
    ("atomic-minmax-exchange", "atomic", "atomic_max/min store the operand without comparing",
     _atomic_exchange("atomic-minmax-exchange")),
]

MUTATIONS: dict[str, Mutation] = {n: Mutation(n, c, d, f) for n, c, d, f in _M}
CATEGORIES = ("subgroup", "coopmatrix", "control", "collective", "grid", "lowp", "scalar",
              "atomic")
REFERENCE = "reference"  # the plug-in with no rule changed
MODULE = __name__


def plugin_spec(name: str) -> str:
    """The `--impl` spec of mutant `name` (or of REFERENCE)."""
    return f"python:{MODULE}:{name}"


def _no_fast_path() -> None:
    """While any mutant is active the single-lane `for` fast path is off (module doc)."""
    from tlinterp.interp import fastpath

    orig = fastpath.eligible

    def eligible(*a: Any, **k: Any) -> bool:
        return False if getattr(_LOCAL, "name", None) is not None else orig(*a, **k)

    eligible.__wrapped__ = orig  # type: ignore[attr-defined]
    fastpath.eligible = eligible


def install(name: str) -> None:
    """Install mutant `name`'s gated patches in this process, once (KeyError: unknown)."""
    m = MUTATIONS[name]
    with _INSTALL_LOCK:
        if name in _INSTALLED:
            return
        if not _INSTALLED:
            _no_fast_path()
        m.install()
        _INSTALLED.add(name)


def run(name: Optional[str], source: str, args: dict, func: Optional[str] = None,
        groups=None) -> dict:
    """The interpreter on `source` with mutant `name` active in this thread (None: none)."""
    from tlinterp.interp import run as interp_run

    if name is not None:
        install(name)
    saved = getattr(_LOCAL, "name", None)
    _LOCAL.name = name
    try:
        return interp_run(source, args, func=func, groups=groups)
    finally:
        _LOCAL.name = saved


def plugin(name: Optional[str]) -> Callable[..., dict]:
    """The `python:` plug-in function of mutant `name` (None: the reference)."""
    if name is not None and name not in MUTATIONS:
        raise KeyError(name)

    def fn(source: str, args: dict, func: Optional[str] = None, groups=None) -> dict:
        return run(name, source, args, func=func, groups=groups)

    fn.__name__ = fn.__qualname__ = name or REFERENCE
    fn.__doc__ = MUTATIONS[name].doc if name is not None else "the unmutated interpreter"
    return fn


def __getattr__(attr: str) -> Callable[..., dict]:
    """`python:fuzz.mutants.interp_v04:NAME` resolves NAME here (mutant names have '-')."""
    if attr == REFERENCE:
        return plugin(None)
    if attr in MUTATIONS:
        return plugin(attr)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
