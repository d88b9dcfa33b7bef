"""Collective BLAS instructions: axpby, gemm, gemv, ger, hadamard, sum.

Lanes (work-groups) are grouped by operand shapes; each group runs one batched NumPy call.
Arithmetic happens in the type C's usual arithmetic conversions give for alpha, beta and the
element types; the result is converted to the output's element type. beta == 0 (per lane) does
not read the output. `.atomic` outputs touched by several work-groups are updated per element
in ascending group id: beta == 1 adds all contributions, beta == 0 keeps the last written value,
any other beta is order dependent and reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from tlinterp.interp import memory as mem
from tlinterp.interp.memory import View
from tlinterp.interp.scalar import cast, usual_type
from tlinterp.interp.ub import Collector, groups_text
from tlinterp.interp.values import Lanes, is_var
from tlinterp.lang import ir
from tlinterp.lang.types import ScalarType


def operands(inst: ir.Blas) -> tuple[list[str], str]:
    """Names of the input memref fields and of the output field of a BLAS instruction."""
    return list(inst.inputs()), inst.output()


def _compute(inst: ir.Blas, ins: list[np.ndarray], ct: np.dtype) -> np.ndarray:
    """alpha-free product for every lane: ins are (n, *shape) arrays in the compute type."""
    return _PRODUCTS[type(inst)](inst, ins, ct)


def _axpby(inst: ir.Axpby, ins, ct):
    a = ins[0]
    return a.swapaxes(-1, -2) if inst.trans and a.ndim == 3 else a


def _sum(inst: ir.Sum, ins, ct):
    a = ins[0]
    if a.ndim == 3:
        a = a.swapaxes(-1, -2) if inst.trans else a
        return a.sum(axis=-1, dtype=ct)
    return a.sum(axis=-1, dtype=ct)


def _gemm(inst: ir.Gemm, ins, ct):
    a, b = ins
    a = a.swapaxes(-1, -2) if inst.trans_a else a
    b = b.swapaxes(-1, -2) if inst.trans_b else b
    return np.matmul(a, b)


def _gemv(inst: ir.Gemv, ins, ct):
    a, b = ins
    a = a.swapaxes(-1, -2) if inst.trans_a else a
    return np.matmul(a, b[..., None])[..., 0]


def _ger(inst: ir.Ger, ins, ct):
    a, b = ins
    return a[:, :, None] * b[:, None, :]


def _hadamard(inst: ir.Hadamard, ins, ct):
    a, b = ins
    return a * b


_PRODUCTS: dict[type, Callable[..., np.ndarray]] = {
    ir.Axpby: _axpby, ir.Gemm: _gemm, ir.Gemv: _gemv, ir.Ger: _ger, ir.Hadamard: _hadamard,
    ir.Sum: _sum,
}


def _partition(views: list[View], n: int):
    """Lane selections (None = all) on which every view has a uniform shape."""
    if all(v.uniform_shape for v in views):
        return [None]
    cols = [np.broadcast_to(np.asarray(s, np.int64), (n,)) for v in views for s in v.shape]
    keys = np.stack(cols, axis=1)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return [np.flatnonzero(inv == u) for u in range(int(inv.max()) + 1)]


def execute(inst: ir.Blas, views: dict[str, View], alpha, beta, lanes: Lanes, check: bool,
            col: Collector) -> None:
    in_names, out_name = operands(inst)
    order = [*in_names, out_name]
    for sel in _partition([views[k] for k in order], lanes.n):
        if sel is None:
            part_views, ln, al, be = views, lanes, alpha, beta
        else:
            part_views = {k: _fixed_shape(v.select(sel)) for k, v in views.items()}
            ln = lanes.select(sel)
            al = alpha[sel] if is_var(alpha) else alpha
            be = beta[sel] if is_var(beta) else beta
        _run_part(inst, part_views, in_names, out_name, al, be, ln, check, col)


def _is_one(x) -> bool:
    return np.ndim(x) == 0 and x == 1


def _scaled(factor, arr, ct, n, k, fresh=False):
    """factor * arr in the compute type, skipping the multiplication by a uniform 1; a `fresh`
    array (a temporary of ours) is scaled in place."""
    if _is_one(factor):
        return arr.astype(ct, copy=False)
    f = _lanes_col(np.asarray(factor).astype(ct), n, k)
    if fresh and arr.dtype == ct and arr.flags.writeable and arr.base is None:
        return np.multiply(arr, f, out=arr)
    return (f * arr).astype(ct, copy=False)


def _fixed_shape(v: View) -> View:
    """Within one partition every lane has the same shape: make it uniform."""
    return replace(v, shape=tuple(int(s[0]) if is_var(s) else s for s in v.shape))


def _check_shapes(inst: ir.Blas, views: dict[str, View], lanes: Lanes, col: Collector) -> None:
    """The size relations that the checker could not decide (dynamic sizes), on this
    partition's shapes (the same for all its lanes)."""
    op = {}
    for r in inst.ROLES:
        shape = tuple(int(s[0]) if is_var(s) else int(s) for s in views[r.field].shape)
        op[r.field] = shape[::-1] if inst.transposed(r.field) else shape
    bad = [f"{label} ({op[fi][mi]} vs {op[fj][mj]})"
           for label, (fi, mi), (fj, mj) in inst.size_relations() if op[fi][mi] != op[fj][mj]]
    if bad:
        shapes = ", ".join(f"{'op(' + r.label + ')' if r.trans else r.label} is "
                           f"{'x'.join(map(str, op[r.field])) or 'a scalar'}" for r in inst.ROLES)
        message = f"{inst.MNEMONIC} on incompatible shapes: {shapes}: {', '.join(bad)} differ"
        col.add_lanes("shape-mismatch", True, lanes, inst.span,
                      lambda lane, g: (None, f"{groups_text([g])}: {message}"), count_rest=False)


def _lanes_col(x, n, k):
    x = np.asarray(x)
    return x.reshape((n,) + (1,) * k) if x.ndim == 1 else x


def _run_part(inst, views, in_names, out_name, alpha, beta, lanes, check, col):
    n, span = lanes.n, inst.span
    with col.checks():  # also with checks off: NumPy cannot combine mismatched operands
        _check_shapes(inst, views, lanes, col)
    out = views[out_name]
    fps = {k: mem.footprint(views[k], n) for k in [*in_names, out_name]}
    beta_zero = np.asarray(beta) == 0
    k_out = len(fps[out_name].shape)
    with col.checks():  # reports so far make the addresses below meaningless
        if check:
            for k, fp in fps.items():
                v = views[k]
                mem.check_root(v, fp, lanes, col, span, "touches")
                mem.check_lifetime(v, lanes, col, span)
        for k, fp in fps.items():  # memory safety, also with checks off
            if not col and not mem.safe_bounds(views[k].buf, fp):
                col.add("out-of-bounds", span, (int(lanes.gid[0]),), None,
                        f"operand %{getattr(inst, k).name} reaches outside its memory")
    if check:
        with col.checks():
            for k in in_names:
                mem.check_init(views[k], fps[k], lanes, col, span)
            if not beta_zero.all():
                _check_out_init(out, fps[out_name], lanes, beta_zero, col, span)
            _check_overlap(inst, views, fps, in_names, out_name, lanes, col)
            for k in in_names:
                mem.record(views[k], fps[k], lanes, "r", col, span)
            mem.record(out, fps[out_name], lanes, "a" if inst.atomic else "w", col, span)
    ct_type = usual_type(inst.alpha_type, inst.beta_type, *(views[k].elem for k in in_names),
                         out.elem)
    ct = ct_type.dtype
    if _in_slices(inst, views, fps, in_names, out_name):
        with np.errstate(all="ignore"):
            _axpby_sliced(inst, views[in_names[0]], fps[in_names[0]], out, fps[out_name],
                          alpha, beta, beta_zero, ct_type, lanes, check, col)
        if check:
            mem.mark_init(out, fps[out_name])
        return
    with np.errstate(all="ignore"):
        ins = [fps[k].take(views[k].buf.data).astype(ct, copy=False) for k in in_names]
        prod = _compute(inst, ins, ct)
        contrib = _scaled(alpha, prod, ct, n, k_out, fresh=True)
        fp_out = fps[out_name]
        if inst.atomic and not fp_out.disjoint:
            b_ = _lanes_col(np.asarray(beta).astype(ct), n, k_out)
            _atomic(inst, out, fp_out, contrib, b_, lanes, ct_type, check, col)
        elif beta_zero.all():
            fp_out.put(out.buf.data, _convert(contrib, ct_type, out.elem, lanes, check, col,
                                              span))
        elif _is_one(beta) and out.elem.dtype == ct and isinstance(fp_out, mem.StridedFP) \
                and fp_out.disjoint:
            fp_out.take(out.buf.data)[...] += contrib  # in place through the strided view
        else:
            old = fp_out.take(out.buf.data).astype(ct, copy=False)
            res = contrib + _scaled(beta, old, ct, n, k_out)
            if beta_zero.any():
                res = np.where(_lanes_col(beta_zero, n, k_out), contrib, res)
            fp_out.put(out.buf.data, _convert(res, ct_type, out.elem, lanes, check, col, span))
    if check:
        mem.mark_init(out, fp_out)


# Elements of an axpby's operand above which it is computed slice by slice: its temporaries
# in the compute type (an i8 axpby computes in i32, four times the data) then stay bounded
# instead of growing with the operand.
SLICE_ELEMENTS = 1 << 18


def _in_slices(inst, views, fps, in_names, out_name) -> bool:
    fp_out = fps[out_name]
    return (isinstance(inst, ir.Axpby) and not inst.atomic
            and len(fp_out.shape) >= 1 and fp_out.shape[0] > 1
            and fp_out.n * int(np.prod(fp_out.shape)) > SLICE_ELEMENTS
            and all(isinstance(fps[k], mem.StridedFP) for k in (*in_names, out_name))
            # distinct memory: slices of one buffer could read what an earlier slice wrote
            and all(views[k].buf is not views[out_name].buf for k in in_names))


def _axpby_sliced(inst: ir.Axpby, a_view: View, fp_a, out: View, fp_out, alpha, beta,
                  beta_zero, ct_type: ScalarType, lanes: Lanes, check: bool, col) -> None:
    """The same results as the whole-operand path, along the output's first mode in slices
    of about SLICE_ELEMENTS elements."""
    n, ct, span = lanes.n, ct_type.dtype, inst.span
    src = fp_a.take(a_view.buf.data)  # strided views on the buffers: no copies
    dst = fp_out.take(out.buf.data)
    k_out = len(fp_out.shape)
    per_row = n * int(np.prod(fp_out.shape[1:]))
    step = max(1, SLICE_ELEMENTS // max(per_row, 1))
    transposed = inst.trans and src.ndim == 3
    for lo in range(0, dst.shape[1], step):
        rows = slice(lo, lo + step)
        part = (src[:, :, rows] if transposed else src[:, rows]).astype(ct, copy=False)
        contrib = _scaled(alpha, _axpby(inst, [part], ct), ct, n, k_out)
        target = dst[:, rows]
        if beta_zero.all():
            res = contrib
        else:
            res = contrib + _scaled(beta, target.astype(ct, copy=False), ct, n, k_out)
            if beta_zero.any():
                res = np.where(_lanes_col(beta_zero, n, k_out), contrib, res)
        target[...] = _convert(res, ct_type, out.elem, lanes, check, col, span)


def _convert(res, ct_type: ScalarType, elem: ScalarType, lanes, check, col, span):
    if ct_type is elem or ct_type.dtype == elem.dtype:
        return res
    out, faults = cast(ct_type, elem, res)
    if check:
        with col.checks():
            for kind, mask, what in faults:
                m = np.asarray(mask).reshape(lanes.n, -1).any(axis=1) if np.ndim(mask) else \
                    mask
                col.add_lanes(kind, m, lanes, span,
                              lambda lane, g, what=what: (None, f"{groups_text([g])}: result "
                                                                f"{what}"), count_rest=False)
    return out


def _check_out_init(out: View, fp, lanes, beta_zero, col, span):
    if not isinstance(out.buf, mem.AllocaBuffer) or out.buf.init is None:
        return
    ok = fp.take(out.buf.init) | _lanes_col(beta_zero, lanes.n, len(fp.shape))
    if not ok.all():
        addr = fp.addr()
        mem._report_positions(col, "uninitialised-read", span, out, lanes, addr, ~ok,
                              lambda name, el: f"reads element {mem._fmt(el)} of {name} "
                                               "before any write (beta != 0)")


def _check_overlap(inst, views, fps, in_names, out_name, lanes, col):
    out = views[out_name]
    for k in in_names:
        v = views[k]
        if v.buf is not out.buf:
            continue
        n = lanes.n
        ao = fps[out_name].addr().reshape(n, -1)
        ai = fps[k].addr().reshape(n, -1)
        big = int(len(out.buf.data)) + 1
        lane_ids = np.arange(n, dtype=np.int64)[:, None] * big
        hit = np.isin(ao + lane_ids, ai + lane_ids)

        def shared(lane: int, g: int, k=k, ao=ao, hit=hit):
            name, el = out.buf.describe(int(ao[lane][hit[lane]][0]))
            return el, (f"{groups_text([g])}: input %{getattr(inst, k).name} and output "
                        f"%{getattr(inst, out_name).name} share element {mem._fmt(el)} of "
                        f"{name}")

        col.add_lanes("overlapping-operands", hit.any(axis=1), lanes, inst.span, shared,
                      count_rest=False)


def _atomic(inst, out: View, fp, contrib, beta, lanes, ct_type, check, col):
    """Atomic updates where lanes share output elements: ascending group id per element."""
    n = lanes.n
    k = len(fp.shape)
    addr = fp.addr().reshape(-1)
    reps = addr.size // max(n, 1)
    g = np.repeat(lanes.gid, reps)
    vals = np.broadcast_to(contrib, (n,) + fp.shape).reshape(-1)
    betas = np.broadcast_to(beta, (n,) + (1,) * k).reshape(n, -1)
    betas = np.broadcast_to(betas, (n, reps)).reshape(-1)
    order = np.lexsort((g, addr))
    addr, g, vals, betas = addr[order], g[order], vals[order], betas[order]
    start = np.r_[True, addr[1:] != addr[:-1]]
    seg = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    rank = np.arange(addr.size) - first[seg]
    if check:
        multi = np.bincount(seg)[seg] > 1
        odd = multi & (betas != 0) & (betas != 1)

        def racing(p: tuple):
            i = p[0]
            name, el = out.buf.describe(int(addr[i]))
            gs = g[seg == seg[i]]
            return tuple(gs[:2]), el, (
                f"{groups_text(gs)} atomically update element {mem._fmt(el)} of {name} with "
                f"beta = {betas[i]}: the result depends on their order (applied in "
                "ascending work-group order)")

        with col.checks():
            col.add_first("order-dependent-atomic", odd & (rank == 1), inst.span, racing,
                          count_rest=False)
    data = out.buf.data
    elem = out.elem
    ones = bool((betas == 1).all())
    if ones and ct_type.dtype == elem.dtype:
        np.add.at(data, addr, vals)
        return
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        s = rank == r
        a, b, v = addr[s], betas[s], vals[s]
        old = data[a].astype(ct_type.dtype)
        new = np.where(b == 0, v, v + b * old)
        data[a] = _convert(new, ct_type, elem, Lanes(g[s]), check, col, inst.span)
