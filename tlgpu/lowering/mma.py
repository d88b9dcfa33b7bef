"""Static-shape f64 GEMM on NVIDIA's FP64 tensor cores: `mma.sync` m16n8k4 or m8n8k4 through
inline PTX, one warp per block of 16 x 8 or 8 x 8 tiles of C (knob `tensor_cores`: the rows).

Why: on an H100 the ADER chain is bound by the L1 data pipe, not by the FP64 units (see
tiles.py): every warp load of 64-bit values costs two cycles of that pipe, and a 4 x 3 register
tile issues 7 loads per 12 multiply-adds of a work-item. One m8n8k4 mma does 256 multiply-adds
of the warp from one 64-bit load of A and one of B per lane; a warp holding bm x bn tiles
loads bm + bn values per lane for bm * bn mmas each K step of 4. On an H100 both shapes issue
at the same rate, so m16n8k4 (compute capability 9.0) does twice the multiply-adds of m8n8k4
(8.0): 65 against 33 TFLOP/s in a loop of independent mmas.

Fragments (PTX ISA, "Matrix fragments for mma.m8n8k4 / mma.m16n8k4 with .f64"): lane
l = 4 g + q holds A[g + 8 s][q] of the A tile (TM x 4), B[q][g] of the 4 x 8 B tile, and
C[g + 8 s][2q], C[g + 8 s][2q + 1] of the TM x 8 accumulator, for the halves s < TM / 8.
Warps are 32 consecutive linear local ids, so the path needs a work-group size that is a
multiple of 32; blocks of tiles are dealt to the warps by `tiles.plan` (its element tiles are
tiles here, its work-items warps). mma.sync must be reached by the whole warp: a collective
runs in work-group-uniform control flow, and the block loop is uniform per warp. Rows of A and
columns of B past the edge of C load the last in-range one (they only feed outputs that are
not stored); the K steps past K load zeros in both operands. The sums are reassociated and
fused, as with `fused_multiply_add` (docs/semantics.md).

A last tile column of at most `narrow_columns` columns (N = 9: one column of 8) runs on the FP64
units instead: each lane multiplies the A values it loaded anyway by B[k][column] at its own K
indices, and the 4 lanes of each row add up their sums with two butterfly shuffles. The mmas of
that tile column would be 7/8 padding, with a B load each step and 2 accumulators per row half.
Only gemms outside pairs take it (a pair's accumulators feed the next gemm as they are).

An operand contiguous along K in global memory, 16-byte aligned (knob `k_pairs`), is loaded
two K steps at a time: K runs in blocks of 8 where lane q takes indices 8 t + 2 q and
8 t + 2 q + 1, so one `double2` load gives both, and the warp's load touches the cache lines
of two steps once. Any order of the K indices is the same sum, as long as A and B agree.
"""

from __future__ import annotations

from tlgpu.lowering import tiles
from tlinterp.lang import ir
from tlinterp.lang.types import ScalarType

WARP = 32
# tile rows -> the C macro for one mma (d: the accumulators, updated in place); `volatile`:
# the compiler must not sink an mma into a branch that only part of the warp takes
_PTX = "mma.sync.aligned.m{m}n8k4.row.col.f64.f64.f64.f64"
MACROS = {
    8: ("TL_DMMA8", "#define TL_DMMA8(d0, d1, a0, b) asm volatile(\"" + _PTX.format(m=8)
        + " {%0,%1}, {%2}, {%3}, {%4,%5};\" : \"=d\"(d0), \"=d\"(d1) : \"d\"(a0), "
        "\"d\"(b), \"d\"(d0), \"d\"(d1))\n"),
    16: ("TL_DMMA16", "#define TL_DMMA16(d0, d1, d2, d3, a0, a1, b) asm volatile(\""
         + _PTX.format(m=16) + " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\" : "
         "\"=d\"(d0), \"=d\"(d1), \"=d\"(d2), \"=d\"(d3) : \"d\"(a0), \"d\"(a1), "
         "\"d\"(b), \"d\"(d0), \"d\"(d1), \"d\"(d2), \"d\"(d3))\n"),
}


# the sum over lanes l and l ^ m of a double (two 32-bit butterfly shuffles; the whole warp
# takes part: these paths run in warp-uniform control flow)
SHUFFLE = ("tl_dshfl_xor", """static inline double tl_dshfl_xor(double x, int m) {
    uint2 v = as_uint2(x), r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r.x) : "r"(v.x), "r"(m));
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r.y) : "r"(v.y), "r"(m));
    return as_double(r);
}
""")


def eligible(config, size: int, ct: ScalarType, M, N, K) -> bool:
    """Whether a gemm takes this path: the knob on (the runtime lowers it to what the device
    has), f64 arithmetic, static shapes, whole warps."""
    return config.tensor_cores in MACROS and ct == ScalarType.f64 and size % WARP == 0 \
        and None not in (M, N, K) and min(M, N, K) >= 1


class _Warp:
    """One gemm's tiles on the warps: the block a warp holds, its clamped rows and columns,
    and its accumulators `{acc}_{r}_{c}_{s}_{h}` (C[row(r, s)][col(c, 2q + h)]); with a narrow
    last tile column, `{acc}_{r}_n_{s}_{j}`: this lane's part of C[row(r, s)][8 (bn - 1) + j]."""

    def __init__(self, lw, w, I: str, M: int, N: int, lane: str, bi: str, bj: str,  # noqa: E741
                 plan: tiles.TilePlan, narrow: int = 0):
        self.lw, self.w, self.I, self.M, self.N = lw, w, I, M, N
        self.TM = lw.config.tensor_cores  # rows of a tile: 8 (m8n8k4) or 16 (m16n8k4)
        self.bm, self.bn, self.g0, self.g1 = plan.rm, plan.rn, plan.g0, plan.g1
        # halves of 8 rows per tile row r: A values per lane and K step, 2 accumulators each;
        # a last tile of at most 8 rows takes m8n8k4 (one load of A per step, not two) when
        # the tile rows are static (one block along M)
        self.halves = [self.TM // 8] * self.bm
        if self.TM == 16 and self.g0 == 1 and 0 < M - 16 * (self.bm - 1) <= 8:
            self.halves[-1] = 1
        for h in set(self.halves):
            lw.helpers.setdefault(*MACROS[8 * h])
        self.bi, self.bj = bi, bj
        self.g, self.q = f"({lane} >> 2)", f"({lane} & 3)"
        self.row, self.col = lw.fresh("row"), lw.fresh("col")
        self.acc, self.av, self.bv = lw.fresh("acc"), lw.fresh("a"), lw.fresh("b")
        # the narrow tile column needs static column indices: one block along N
        last = N - 8 * (self.bn - 1)
        self.narrow = last if self.g1 == 1 and last <= narrow else 0
        self.mma_bn = self.bn - (1 if self.narrow else 0)  # tile columns on the tensor cores
        self.outs = [(r, c, s, h) for r in range(self.bm) for c in range(self.mma_bn)
                     for s in range(self.halves[r]) for h in (0, 1)]
        self.narrow_outs = [(r, s, j) for r in range(self.bm) for s in range(self.halves[r])
                            for j in range(self.narrow)]
        if self.narrow:
            lw.helpers.setdefault(*SHUFFLE)

    def narrow_acc(self, r: int, s: int, j: int) -> str:
        return f"{self.acc}_{r}_n_{s}_{j}"

    def narrow_col(self, j: int) -> str:  # column of C (and B) of the narrow tile column
        return str(8 * (self.bn - 1) + j)

    def rows(self, r: int, s: int) -> str:  # row of C (and A) of tile row r, half s
        return f"(({self.bi} + {r * self.g0}) * {self.TM} + {8 * s} + {self.g})"

    def cols(self, c: int, h: int) -> str:  # column of C of tile column c, for h = 0, 1
        return f"(({self.bj} + {c * self.g1}) * 8 + 2 * {self.q} + {h})"

    def declare(self) -> None:
        """Clamped rows of A and columns of B this lane loads, and zeroed accumulators."""
        w, I = self.w, self.I  # noqa: E741
        for r in range(self.bm):
            for s in range(self.halves[r]):
                w.line(f"const {I} {self.row}_{r}_{s} = "
                       f"min(({I}){self.rows(r, s)}, ({I}){self.M - 1});")
        for c in range(self.mma_bn):
            w.line(f"const {I} {self.col}_{c} = "
                   f"min(({I})(({self.bj} + {c * self.g1}) * 8 + {self.g}), ({I}){self.N - 1});")
        w.line("double " + ", ".join([f"{self.acc}_{r}_{c}_{s}_{h} = 0"
                                      for r, c, s, h in self.outs]
                                     + [f"{self.narrow_acc(*o)} = 0"
                                        for o in self.narrow_outs]) + ";")

    def step(self, a_value, b_value, narrow_b=None) -> None:
        """One K step: a_value(r, s) / b_value(c) are this lane's A and B values (C
        expressions), then the bm x bn mmas; narrow_b(j): B at this lane's own K index and
        column j of the narrow tile column, for its fma()s."""
        self.load(a_value, b_value, narrow_b)
        self.mmas()

    def load(self, a_value, b_value, narrow_b=None) -> None:
        """The values of one K step in `{av}_{r}_{s}`, `{bv}_{c}` and `{bv}_n_{j}`."""
        for r in range(self.bm):
            for s in range(self.halves[r]):
                self.w.line(f"const double {self.av}_{r}_{s} = {a_value(r, s)};")
        for c in range(self.mma_bn):
            self.w.line(f"const double {self.bv}_{c} = {b_value(c)};")
        for j in range(self.narrow):
            self.w.line(f"const double {self.bv}_n_{j} = {narrow_b(j)};")

    def mmas(self, tag: str = "") -> None:
        """The bm x bn mmas (and narrow fma()s) of the K step whose values are named with the
        suffix `tag` (the second K index of a pair: "_h")."""
        for r in range(self.bm):
            halves = self.halves[r]
            for c in range(self.mma_bn):
                d = [f"{self.acc}_{r}_{c}_{s}_{h}" for s in range(halves) for h in (0, 1)]
                a = [f"{self.av}_{r}_{s}{tag}" for s in range(halves)]
                self.w.line(f"{MACROS[8 * halves][0]}({', '.join(d + a)}, {self.bv}_{c}{tag});")
        for r, s, j in self.narrow_outs:
            acc = self.narrow_acc(r, s, j)
            self.w.line(f"{acc} = fma({self.av}_{r}_{s}{tag}, {self.bv}_n_{j}{tag}, {acc});")

    def k_loop(self, K: int, fa, fb, pairs=(None, None)) -> None:
        """op(A) x op(B) over K in steps of 4 (lane q takes index 4 t + q); the steps past K
        load zeros in both operands. pairs = (pa, pb): pa(row, k) / pb(col, k) load op(A) /
        op(B) at K indices k and k + 1 as one double2, where that is aligned (None where
        not): then K runs first in blocks of 8, lane q taking 8 t + 2 q and 8 t + 2 q + 1."""
        w, I, k = self.w, self.I, self.lw.fresh("k")  # noqa: E741
        start = self._paired_loop(K, fa, fb, pairs) if pairs != (None, None) else 0

        def step(guarded: bool) -> None:
            def val(x: str) -> str:
                return f"{k} < {K} ? {x} : 0.0" if guarded else x
            self.step(lambda r, s: val(f"(double){fa(f'{self.row}_{r}_{s}', k)}"),
                      lambda c: val(f"(double){fb(k, f'{self.col}_{c}')}"),
                      lambda j: val(f"(double){fb(k, self.narrow_col(j))}"))

        # (loading the next K step's operands before this step's mmas measured no faster on
        # an H100: 1.96 ms either way for ADER f64 N=5, and 121 registers with `volatile`)
        whole = start + (K - start) // 4 * 4
        if start and whole > start:  # one step of 4 after the blocks of 8
            w.open("")
            w.line(f"const {I} {k} = {start} + {self.q};")
            step(False)
            w.close()
        elif whole and not start:
            self._unroll()
            w.open(f"for ({I} {k} = {self.q}; {k} < {whole}; {k} += 4)")
            step(False)
            w.close()
        if K % 4:
            w.open("")
            w.line(f"const {I} {k} = {whole} + {self.q};")
            step(True)
            w.close()
        # the narrow column: the 4 lanes of a row (l ^ 1, l ^ 2) add up their K indices' sums;
        # a + b is commutative, so all 4 get the same total
        for o in self.narrow_outs:
            for m in (1, 2):
                w.line(f"{self.narrow_acc(*o)} += {SHUFFLE[0]}({self.narrow_acc(*o)}, {m});")

    def _unroll(self) -> None:
        if self.lw.config.unroll_mma > 1:
            self.w.line(f"#pragma unroll {self.lw.config.unroll_mma}")

    def _paired_loop(self, K: int, fa, fb, pairs) -> int:
        """The K indices below K // 8 * 8 as steps of two mma rounds, lane q taking K indices
        k = 8 t + 2 q and k + 1 (the 4 lanes' k cover the block of 8; A and B agree, so the
        sum is the same, reassociated); the aligned operands load both with one double2, and
        every load comes before the mmas. Returns where the plain steps start."""
        w, I, k, kb = self.w, self.I, self.lw.fresh("k"), self.lw.fresh("kb")  # noqa: E741
        whole = K // 8 * 8
        if not whole:
            return 0
        pa, pb = pairs
        self._unroll()
        w.open(f"for ({I} {kb} = 0; {kb} < {whole}; {kb} += 8)")
        w.line(f"const {I} {k} = {kb} + 2 * {self.q};")

        def values(name: str, pair, one) -> None:
            """`name` and `name`_h, the operand at k and k + 1: one double2 load where `pair`
            has it (aligned), else one(k) and one(k + 1)."""
            if pair is not None:
                w.line(f"const double2 {name}_v = {pair(k)};")
                w.line(f"const double {name} = {name}_v.x, {name}_h = {name}_v.y;")
            else:
                w.line(f"const double {name} = (double){one(k)};")
                w.line(f"const double {name}_h = (double){one(f'{k} + 1')};")

        for r in range(self.bm):
            for s in range(self.halves[r]):
                row = f"{self.row}_{r}_{s}"
                values(f"{self.av}_{r}_{s}",
                       None if pa is None else (lambda x, row=row: pa(row, x)),
                       lambda x, row=row: fa(row, x))
        cols = [(f"{self.bv}_{c}", f"{self.col}_{c}") for c in range(self.mma_bn)] \
            + [(f"{self.bv}_n_{j}", self.narrow_col(j)) for j in range(self.narrow)]
        for bv, col in cols:
            values(bv, None if pb is None else (lambda x, col=col: pb(col, x)),
                   lambda x, col=col: fb(x, col))
        self.mmas()
        self.mmas("_h")
        w.close()
        return whole

    def store(self, store) -> None:
        """Every accumulator through the collective's store, guarded at the edges of C."""
        for r, c, s, h in self.outs:
            i, j = self.rows(r, s), self.cols(c, h)
            guard = [f"{j} < {self.N}"] if not self.narrow and self.g1 * self.bn * 8 > self.N \
                else []
            self._guarded(store, i, j, f"{self.acc}_{r}_{c}_{s}_{h}", guard)
        for r, s, j in self.narrow_outs:  # every lane of the row has the total: lane j % 4
            self._guarded(store, self.rows(r, s), self.narrow_col(j), self.narrow_acc(r, s, j),
                          [f"{self.q} == {j % 4}"])

    def _guarded(self, store, i: str, j: str, value: str, guard: list[str]) -> None:
        lines: list[str] = []
        store(lines, i, j, value)
        if self.g0 * self.bm * self.TM > self.M:
            guard = [f"{i} < {self.M}"] + guard
        cond = f"if ({' && '.join(guard)}) " if guard else ""
        self.w.line(cond + (lines[0] if len(lines) == 1 else "{ " + " ".join(lines) + " }"))


def _plan(lw, M: int, N: int) -> tiles.TilePlan:
    TM = lw.config.tensor_cores
    return tiles.plan(-(-M // TM), -(-N // 8), lw.geo.size // WARP, lw.config.max_tile)


def _lane(lw, w) -> tuple[str, str]:
    lane, warp = lw.fresh("lane"), lw.fresh("warp")
    w.line(f"const int {lane} = (int)(tl_lid & {WARP - 1}), {warp} = (int)(tl_lid / {WARP});")
    return lane, warp


def lower(lw, w, I: str, M: int, N: int, K: int, fa, fb, store,  # noqa: E741
          pairs=(None, None)) -> None:
    """Emit the gemm; fa(r, k) / fb(k, c) are C expressions of op(A) and op(B), `store` the
    collective's store of one element (alpha, beta, atomics), `pairs` their double2 loads
    along K where aligned (_Warp.k_loop)."""
    warps = lw.geo.size // WARP
    plan = _plan(lw, M, N)
    lane, warp = _lane(lw, w)
    tt, bi, bj = lw.fresh("tt"), lw.fresh("bi"), lw.fresh("bj")
    if plan.g0 * plan.g1 <= warps:
        w.open(f"if ({warp} < {plan.g0 * plan.g1})")
        w.line(f"const int {tt} = {warp};")
    else:
        w.open(f"for (int {tt} = {warp}; {tt} < {plan.g0 * plan.g1}; {tt} += {warps})")
    w.line(f"const int {bj} = {tt} / {plan.g0}, {bi} = {tt} - {bj} * {plan.g0};")
    t = _Warp(lw, w, I, M, N, lane, bi, bj, plan, _narrow_columns(lw))
    t.declare()
    t.k_loop(K, fa, fb, pairs)
    t.store(store)
    w.close()


def _narrow_columns(lw) -> int:
    """The knob, or when it is None: 1 in a function with one gemm (a stream, bound by memory
    bandwidth), 0 in a chain of gemms (see LoweringConfig.narrow_columns)."""
    if lw.config.narrow_columns is not None:
        return lw.config.narrow_columns
    return int(sum(isinstance(i, ir.Gemm) for i in ir.walk(lw.fn.body)) == 1)


def one_warp(lw, M: int, N: int) -> bool:
    """Whether one warp's block of tiles covers all of an M x N output."""
    plan = _plan(lw, M, N)
    return plan.g0 * plan.g1 == 1


def lower_pair(lw, w, I: str, first, second) -> None:  # noqa: E741
    """Two gemms where the output T (M x N1) of the first is op(A) of the second, both on one
    warp (`one_warp`): the second takes T from the first's accumulators instead of memory.
    first = (M, N1, K1, fa, fb, store or None, value, pairs): value(acc) is the C expression
    the first would store (alpha applied); store None: T is dead, never written; pairs as for
    `lower`.
    second = (N2, fb, store, mark): mark() says the C lines that follow come from the second.

    Lane l = 4 g + q holds T[row][8 c + 2 q + h] of the first's tiles; the second sums over K2
    = N1 in steps (c, h) where lane q takes index k = 8 c + 2 q + h (any order of the K
    indices is a valid sum as long as A and B agree, docs/semantics.md). Indices k >= N1
    (columns of the first's last tile past its edge, computed from clamped columns) take zeros
    in both operands; steps with no index below N1 are left out."""
    M, N1, K1, fa1, fb1, store1, value, pairs1 = first
    N2, fb2, store2, mark = second
    lane, warp = _lane(lw, w)
    w.open(f"if ({warp} == 0)")
    t1 = _Warp(lw, w, I, M, N1, lane, "0", "0", _plan(lw, M, N1))
    t1.declare()
    t1.k_loop(K1, fa1, fb1, pairs1)
    if store1 is not None:
        t1.store(store1)
    mark()
    t2 = _Warp(lw, w, I, M, N2, lane, "0", "0", _plan(lw, M, N2))
    t2.declare()
    assert (t1.bm, t1.halves) == (t2.bm, t2.halves)  # the same rows in the same lanes
    for c in range(t1.bn):
        for h in (0, 1):
            if 8 * c + h >= N1:
                continue
            k = f"(8 * {c} + 2 * {t1.q} + {h})"
            guarded = 8 * c + 6 + h >= N1

            def val(x: str, k=k, guarded=guarded) -> str:
                return f"({k} < {N1} ? {x} : 0.0)" if guarded else x
            w.open("")
            t2.step(lambda r, s, c=c, h=h, val=val: val(value(f"{t1.acc}_{r}_{c}_{s}_{h}")),
                    lambda c2, val=val, k=k: val(f"(double){fb2(k, f'{t2.col}_{c2}')}"))
            w.close()
    t2.store(store2)
    w.close()
