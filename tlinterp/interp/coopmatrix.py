"""v0.4 cooperative matrices: the register layout and the instructions' semantics, in NumPy.

A coopmatrix value of one sub-group is held as its *padded matrix*: an M x J array (J >= N,
leading axes for work-groups and sub-groups) whose columns N..J-1 are the layout's padding.
Every component of every lane is one entry of it, so `extract`/`insert` are exact, and the
padding takes part in component-wise operations as it does on a device. The layout (which
lane holds which entry in which component) follows tinytc v0.4.0's coopmatrix layout
document, restated in docs/semantics.md ("v0.4 cooperative matrices"):

    I = min(M, S), J = ceil(I N / S) S / I, K = M / I = K1 K2,
    K1 = max(1, 2 / size(ty)) for matrix_b with K > 1, else 1,
    lane p, component v:  L = p + v S;  i = L mod I,  k1 = (L / I) mod K1,
                          j = (L / (I K1)) mod J,  k2 = L / (I K1 J);
                          row = i + k1 I + k2 I K1,  column = j,   V = I K J / S components.

(matrix_a's VNNI packing of low-precision types is a storage detail: it does not change
which entry a component index names.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

import numpy as np

from tlinterp.interp import lowp
from tlinterp.interp.spmd import UBFinding

USES = ("matrix_a", "matrix_b", "matrix_acc")
CHECKED = ("", "rows", "cols", "both")


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@dataclass(frozen=True)
class Layout:
    """The distribution of an M x N coopmatrix of type `ty` and `use` over a sub-group of S."""

    M: int
    N: int
    ty: str
    use: str
    S: int

    def __post_init__(self) -> None:
        if self.use not in USES:
            raise ValueError(f"unknown matrix use {self.use}")
        if self.ty not in lowp.NUMBER:
            raise ValueError(f"coopmatrix component type {self.ty} is not a number type")
        if not (_pow2(self.M) and _pow2(self.S)) or self.N < 1:
            raise ValueError(f"coopmatrix {self.M}x{self.N} with sub-group size {self.S}: "
                             "the rows and the sub-group size must be powers of two, the "
                             "columns positive")

    @property
    def I(self) -> int:  # noqa: E743 - the layout document's name
        return min(self.M, self.S)

    @property
    def J(self) -> int:
        return -(-self.I * self.N // self.S) * self.S // self.I

    @property
    def K(self) -> int:
        return self.M // self.I

    @property
    def K1(self) -> int:
        if self.use == "matrix_b" and self.K > 1:
            return max(1, 2 // lowp.SIZE[self.ty])
        return 1

    @property
    def K2(self) -> int:
        return self.K // self.K1

    @property
    def V(self) -> int:
        """Components per lane (the valid `extract`/`insert` indices are 0..V-1)."""
        return self.I * self.K * self.J // self.S

    def position(self, p, v) -> tuple[np.ndarray, np.ndarray]:
        """(row, column) of the padded matrix held by lane p in component v."""
        L = np.asarray(p) + np.asarray(v) * self.S
        i = L % self.I
        k1 = (L // self.I) % self.K1
        j = (L // (self.I * self.K1)) % self.J
        k2 = L // (self.I * self.K1 * self.J)
        return i + k1 * self.I + k2 * self.I * self.K1, j

    @cached_property
    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, columns), each S x V: where every (lane, component) lives."""
        p = np.arange(self.S)[:, None]
        v = np.arange(self.V)[None, :]
        return self.position(p, v)

    def logical(self) -> np.ndarray:
        """M x J bool: the entries that are matrix entries (False: padding)."""
        return np.broadcast_to(np.arange(self.J) < self.N, (self.M, self.J))


def pad(layout: Layout, full) -> np.ndarray:
    """(..., M, N) matrix -> (..., M, J) padded matrix, padding zero (as a load leaves it)."""
    a = np.asarray(full, dtype=lowp.dtype(layout.ty))
    out = np.zeros(a.shape[:-1] + (layout.J,), a.dtype)
    out[..., :layout.N] = a
    return out


def unpad(layout: Layout, padded) -> np.ndarray:
    """(..., M, J) -> the (..., M, N) matrix."""
    return np.asarray(padded)[..., :layout.N]


def to_components(layout: Layout, padded) -> np.ndarray:
    """(..., M, J) padded matrix -> (..., S, V): lane p's component vector W^p."""
    r, c = layout.positions
    return np.asarray(padded)[..., r, c]


def from_components(layout: Layout, comps) -> np.ndarray:
    """(..., S, V) component vectors -> the (..., M, J) padded matrix (inverse of
    to_components: the layout is a bijection)."""
    a = np.asarray(comps)
    out = np.empty(a.shape[:-2] + (layout.M, layout.J), a.dtype)
    r, c = layout.positions
    out[..., r, c] = a
    return out


def check_index(layout: Layout, v: int) -> None:
    """The component index of extract/insert is one of the lane's V components (ValueError
    if not); the v0.4 checker applies it when the function fixes subgroup_size."""
    if not 0 <= v < layout.V:
        raise ValueError(f"component index {v} is outside 0..{layout.V - 1} for "
                         f"coopmatrix<{layout.ty}x{layout.M}x{layout.N},{layout.use}> with "
                         f"sub-group size {layout.S}")


def extract(layout: Layout, padded, v: int) -> np.ndarray:
    """cooperative_matrix_extract %m[v]: (..., S), lane p's component v."""
    check_index(layout, v)
    r, c = layout.positions
    return np.asarray(padded)[..., r[:, v], c[:, v]]


def insert(layout: Layout, padded, values, v: int) -> np.ndarray:
    """cooperative_matrix_insert %x, %m[v]: a copy with lane p's component v set to values[p]
    (values: (..., S), one per lane)."""
    check_index(layout, v)
    r, c = layout.positions
    out = np.array(padded, copy=True)
    out[..., r[:, v], c[:, v]] = np.asarray(values, dtype=out.dtype)
    return out


def construct(layout: Layout, value) -> np.ndarray:
    """cooperative_matrix_construct: every component, padding included, is the value
    (value: (...,), one per sub-group; its uniformity is the caller's check)."""
    a = np.asarray(value, dtype=lowp.dtype(layout.ty))
    return np.broadcast_to(a[..., None, None], a.shape + (layout.M, layout.J)).copy()


def apply_indices(layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """cooperative_matrix_apply's (%i, %j) for every padded entry, as i32 M x J arrays. The
    region runs for the entries with j < N only (`layout.logical()`): see `apply_result`."""
    r = np.broadcast_to(np.arange(layout.M, dtype=np.int32)[:, None], (layout.M, layout.J))
    c = np.broadcast_to(np.arange(layout.J, dtype=np.int32)[None, :], (layout.M, layout.J))
    return r, c


def apply_result(layout: Layout, yielded) -> np.ndarray:
    """The coopmatrix cooperative_matrix_apply returns, from the values its region yielded for
    every padded entry: the padding components become 0, because tinytc v0.4.0 runs the region
    for matrix entries only and yields 0 elsewhere (so the region's undefined behaviour on
    padding never happens)."""
    y = np.asarray(yielded, dtype=lowp.dtype(layout.ty))
    return np.where(layout.logical(), y, y.dtype.type(0))


@dataclass(frozen=True)
class Access:
    """What a load or store of a padded matrix touches: memref indices (i0, i1), each
    (..., M, J); `take` = the entries really read or written (not padding, not masked by a
    check); `oob` = taken entries outside the memref (undefined behaviour)."""

    i0: np.ndarray
    i1: np.ndarray
    take: np.ndarray
    oob: np.ndarray


def access(layout: Layout, x, y, shape: tuple, transpose: bool = False,
           checked: str = "") -> Access:
    """The entries of a cooperative_matrix_load/store at position (x, y) (arrays (...,), one per
    sub-group) of a memref of shape (s1, s2) (ints or (...,) arrays). Entry (i, j) is
    M[x + i, y + j], or M[x + j, y + i] with `.t`; `checked` masks entries whose row ("rows"),
    column ("cols") or both coordinates, measured in the memref mode they index, are outside
    [0, extent) (masked loads give 0, masked stores do nothing)."""
    if checked not in CHECKED:
        raise ValueError(f"unknown checked flag {checked!r}")
    x = np.asarray(x, dtype=np.int64)[..., None, None]
    y = np.asarray(y, dtype=np.int64)[..., None, None]
    s1 = np.asarray(shape[0], dtype=np.int64)[..., None, None]
    s2 = np.asarray(shape[1], dtype=np.int64)[..., None, None]
    i = np.arange(layout.M)[:, None]
    j = np.arange(layout.J)[None, :]
    if transpose:
        i0, i1 = x + j, y + i
        row_ok = (i1 >= 0) & (i1 < s2)
        col_ok = (i0 >= 0) & (i0 < s1)
    else:
        i0, i1 = x + i, y + j
        row_ok = (i0 >= 0) & (i0 < s1)
        col_ok = (i1 >= 0) & (i1 < s2)
    take = np.broadcast_to(j < layout.N, np.broadcast_shapes(i0.shape, i1.shape))
    if checked in ("rows", "both"):
        take = take & row_ok
    if checked in ("cols", "both"):
        take = take & col_ok
    oob = take & ~(row_ok & col_ok)
    shp = take.shape
    return Access(np.broadcast_to(i0, shp), np.broadcast_to(i1, shp), take, oob)


def oob_findings(acc: Access, what: str, groups=None) -> list[UBFinding]:
    """One "out-of-bounds" finding per work-group/sub-group whose access leaves the memref
    (leading axes of the access: (G, sub-groups) or (G,))."""
    out = []
    bad = acc.oob.any(axis=(-2, -1))
    for lead in np.argwhere(bad):
        lead = tuple(int(t) for t in lead)
        e = np.argwhere(acc.oob[lead])[0]
        g = lead[0] if lead else 0
        gid = g if groups is None else int(groups[g])
        i0, i1 = int(acc.i0[lead][tuple(e)]), int(acc.i1[lead][tuple(e)])
        out.append(UBFinding("out-of-bounds", (gid,), (i0, i1),
                             f"{what} of coopmatrix entry ({int(e[0])}, {int(e[1])}) reaches "
                             f"memref element ({i0}, {i1}), outside the memref"))
    return out


def load(layout: Layout, mem, x, y, transpose: bool = False,
         checked: str = "") -> tuple[np.ndarray, Access]:
    """cooperative_matrix_load from a 2-d array per sub-group (mem: (..., s1, s2), leading axes
    broadcasting with x, y): (padded matrix, access). Entries not taken are 0; out-of-bounds
    ones (acc.oob, undefined behaviour) are 0 here too, so that the caller reports them."""
    m = np.asarray(mem)
    acc = access(layout, x, y, m.shape[-2:], transpose, checked)
    ok = acc.take & ~acc.oob
    i0 = np.where(ok, acc.i0, 0)
    i1 = np.where(ok, acc.i1, 0)
    lead = np.broadcast_shapes(m.shape[:-2], ok.shape[:-2])
    mb = np.broadcast_to(m, lead + m.shape[-2:])
    vals = _gather(mb, np.broadcast_to(i0, lead + ok.shape[-2:]),
                   np.broadcast_to(i1, lead + ok.shape[-2:]))
    out = np.where(np.broadcast_to(ok, vals.shape), vals, 0).astype(lowp.dtype(layout.ty))
    return out, acc


def _gather(m: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """m[..., i0, i1] entry by entry (i0, i1 with m's leading axes)."""
    lead = m.shape[:-2]
    if not lead:
        return m[i0, i1]
    flat = m.reshape((-1,) + m.shape[-2:])
    b = np.arange(flat.shape[0]).reshape(lead + (1, 1))
    return flat[b, i0, i1]


def store(layout: Layout, padded, mem, x, y, transpose: bool = False,
          checked: str = "") -> tuple[np.ndarray, Access]:
    """cooperative_matrix_store into a copy of mem (..., s1, s2): (new mem, access). Only taken,
    in-bounds entries are written; the caller reports acc.oob before any effect."""
    m = np.array(mem, copy=True)
    acc = access(layout, x, y, m.shape[-2:], transpose, checked)
    ok = acc.take & ~acc.oob
    lead = m.shape[:-2]
    p = np.broadcast_to(np.asarray(padded), lead + ok.shape[-2:])
    okb = np.broadcast_to(ok, p.shape)
    i0 = np.broadcast_to(acc.i0, p.shape)
    i1 = np.broadcast_to(acc.i1, p.shape)
    idx = np.nonzero(okb)
    m[idx[:-2] + (i0[okb], i1[okb])] = p[okb]
    return m, acc


def _step(ty: str) -> Callable[[str, np.ndarray, np.ndarray], np.ndarray]:
    """One arithmetic instruction of type ty, rounded to ty (integers wrap)."""
    if ty in ("f16", "bf16"):
        return lambda op, a, b: lowp.arith(op, a, b, ty)
    fns = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    t = lowp.dtype(ty)
    return lambda op, a, b: fns[op](a, b).astype(t, copy=False)


def mul_add(a, b, c, ta: str, tb: str, tc: str, tr: str, n: Optional[int] = None,
            product: Optional[np.ndarray] = None) -> np.ndarray:
    """cooperative_matrix_mul_add: D = AB + C for A (..., M, K), B (..., K, >= n) (padded: the
    first K rows / n columns are used), C (..., M, J) padded, n its matrix columns (default
    J). Reference accumulation: for each entry (m, j < n), acc = C[m, j]; for k = 0..K-1 in
    order: acc = acc + A[m, k] B[k, j], where A and B are first converted (exactly:
    promotable) to C's type and the product and the sum are each rounded to C's type; then
    D = cast(acc) to the result's type. D's padding columns n..J-1 are C's, cast: the product
    has no entries there (docs/semantics.md; a checked program has none, its rows being a
    multiple of S). `product`: the entries already computed in another order within
    `mul_add_bound` (the executor's f32 BLAS path), given the same padding."""
    C = np.asarray(c, dtype=lowp.dtype(tc))
    n = C.shape[-1] if n is None else n
    if product is None:
        if lowp.promote(ta, tb) is None or not lowp.promotable(lowp.promote(ta, tb), tc):
            raise ValueError(f"mul_add of {ta} and {tb} into {tc}: not promotable")
        step = _step(tc)
        A = lowp.cast(a, ta, tc)[0]
        B = lowp.cast(np.asarray(b)[..., :n], tb, tc)[0]
        product = C[..., :n].copy()
        with np.errstate(all="ignore"):
            for k in range(A.shape[-1]):
                prod = step("mul", A[..., :, k:k + 1], B[..., k:k + 1, :])
                product = step("add", prod, product)
    acc = product if n == C.shape[-1] else np.concatenate([product, C[..., n:]], axis=-1)
    if tr == tc:
        return acc
    return lowp.cast(acc, tc, tr)[0]


def mul_add_bound(a, b, c, tc: str, tr: str) -> np.ndarray:
    """How far a conforming mul_add may be from the exact AB + C (entrywise):
    γ(K+1)(|A||B| + |C|) in C's unit roundoff (complex: √2 γ(K+3)), plus u_D |D| when D's
    type is narrower. A
    device that accumulates wider (dpas: exact products, f32 sums) is inside it; the
    reference is too, so two conforming results differ by at most twice this."""
    wide = np.complex128 if tc in lowp.COMPLEX else np.float64
    A = np.abs(np.asarray(a).astype(wide))
    B = np.abs(np.asarray(b).astype(wide))[..., :np.asarray(c).shape[-1]]
    C = np.abs(np.asarray(c).astype(wide))
    K = A.shape[-1]
    if tc in lowp.INTEGER:
        return np.zeros(C.shape)
    u = lowp.UNIT_ROUNDOFF[tc]
    n = K + 1 if tc not in lowp.COMPLEX else K + 3  # complex: each product is two roundings more
    g = n * u / (1 - n * u) * (np.sqrt(2) if tc in lowp.COMPLEX else 1)
    mag = A @ B + C
    extra = lowp.UNIT_ROUNDOFF.get(tr, 0.0) if tr != tc else 0.0
    return (g + extra * (1 + g)) * mag


def scale(alpha, padded, ty: str) -> np.ndarray:
    """cooperative_matrix_scale: alpha * every component (alpha: (...,), one per sub-group),
    rounded to ty."""
    al = np.asarray(alpha, dtype=lowp.dtype(ty))[..., None, None]
    with np.errstate(all="ignore"):
        return _step(ty)("mul", al, np.asarray(padded, dtype=lowp.dtype(ty)))


def componentwise(op: str, a, b, ty: str) -> np.ndarray:
    """add/sub/mul/div of two coopmatrices of one type, component by component (padding
    included), each result rounded to ty. Integer division and overflow checks are the
    scalar table's; only `layout.logical()` entries may report undefined behaviour."""
    with np.errstate(all="ignore"):
        return _step(ty)(op, np.asarray(a, dtype=lowp.dtype(ty)),
                         np.asarray(b, dtype=lowp.dtype(ty)))


def _fold(op: str, ty: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if op == "add":
        step = _step(ty)
        return lambda x, y: step("add", x, y)
    if ty in lowp.COMPLEX:
        raise ValueError(f"reduce {op} is not defined on {ty}")
    if ty in lowp.INTEGER:
        return np.maximum if op == "max" else np.minimum
    return np.fmax if op == "max" else np.fmin


def reduce(layout: Layout, padded, op: str, mode: str) -> np.ndarray:
    """cooperative_matrix_reduce_<op>.<mode> (M a multiple of S). Reference order, tinytc
    v0.4.0's: `row`: per row, a left fold over columns 0..N-1 -> (..., M, 1). `column`: lane p
    first folds its rows p, p+S, p+2S, … in order, then the S lane partials are combined as a
    pairwise tree (lanes 2q and 2q+1 first, lower lane on the left) -> (..., 1, J') padded
    for a 1 x N matrix, padding 0."""
    if layout.M % layout.S:
        raise ValueError(f"reduce needs the rows ({layout.M}) to be a multiple of the sub-group "
                         f"size ({layout.S})")
    f = _fold(op, layout.ty)
    a = np.asarray(padded, dtype=lowp.dtype(layout.ty))
    with np.errstate(all="ignore"):
        if mode == "row":
            if isinstance(f, np.ufunc) or layout.ty not in ("f16", "bf16"):
                # ufunc.accumulate is this very left fold (out[j] = out[j-1] ⋄ x[j]), in C
                u = f if isinstance(f, np.ufunc) else np.add
                return u.accumulate(a[..., :layout.N], axis=-1)[..., -1:]
            acc = a[..., :, 0]
            for j in range(1, layout.N):
                acc = f(acc, a[..., :, j])
            return acc[..., :, None]
        if mode != "column":
            raise ValueError(f"unknown reduce mode {mode}")
        S = layout.S
        blocks = a[..., :, :layout.N].reshape(a.shape[:-2] + (layout.M // S, S, layout.N))
        part = blocks[..., 0, :, :]
        for b in range(1, layout.M // S):
            part = f(part, blocks[..., b, :, :])
        while part.shape[-2] > 1:  # pairwise over lanes
            part = f(part[..., 0::2, :], part[..., 1::2, :])
        res = Layout(1, layout.N, layout.ty, layout.use, S)
        out = np.zeros(a.shape[:-2] + (1, res.J), a.dtype)
        out[..., 0, :layout.N] = part[..., 0, :]
        return out


def cast_use(src_use: str, dst_use: str) -> None:
    """A coopmatrix cast keeps the use, or turns matrix_acc into matrix_a or matrix_b
    (ValueError otherwise). The padded matrix is unchanged: every use of an M x N matrix with
    sub-group size S has the same J, and the cast maps entry (i, j) to entry (i, j)."""
    if src_use != dst_use and not (src_use == "matrix_acc" and dst_use != "matrix_acc"):
        raise ValueError(f"a coopmatrix cast from {src_use} to {dst_use} is not allowed")
