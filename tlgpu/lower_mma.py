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
"""

from __future__ import annotations

from tlinterp.types import ScalarType

from . import tiles

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


def eligible(config, size: int, ct: ScalarType, M, N, K) -> bool:
    """Whether a gemm takes this path: the knob on (the runtime lowers it to what the device
    has), f64 arithmetic, static shapes, whole warps."""
    return config.tensor_cores in MACROS and ct == ScalarType.f64 and size % WARP == 0 \
        and None not in (M, N, K) and min(M, N, K) >= 1


def lower(lw, w, I: str, M: int, N: int, K: int, fa, fb, store) -> None:  # noqa: E741
    """Emit the gemm; fa(r, k) / fb(k, c) are C expressions of op(A) and op(B), `store` the
    collective's store of one element (alpha, beta, atomics)."""
    TM = lw.config.tensor_cores  # rows of a tile: 8 (m8n8k4) or 16 (m16n8k4)
    halves = TM // 8  # A values per lane and K step of a tile; accumulators: 2 per half
    macro, code = MACROS[TM]
    lw.helpers.setdefault(macro, code)
    warps = lw.geo.size // WARP
    plan = tiles.plan(-(-M // TM), -(-N // 8), warps, lw.config.max_tile)
    bm, bn, g0, g1 = plan.rm, plan.rn, plan.g0, plan.g1
    lane, warp, tt = lw.fresh("lane"), lw.fresh("warp"), lw.fresh("tt")
    bi, bj, k = lw.fresh("bi"), lw.fresh("bj"), lw.fresh("k")
    row, col = lw.fresh("row"), lw.fresh("col")
    acc, av, bv = lw.fresh("acc"), lw.fresh("a"), lw.fresh("b")
    w.line(f"const int {lane} = (int)(tl_lid & {WARP - 1}), {warp} = (int)(tl_lid / {WARP});")
    g, q = f"({lane} >> 2)", f"({lane} & 3)"
    if g0 * g1 <= warps:
        w.open(f"if ({warp} < {g0 * g1})")
        w.line(f"const int {tt} = {warp};")
    else:
        w.open(f"for (int {tt} = {warp}; {tt} < {g0 * g1}; {tt} += {warps})")
    w.line(f"const int {bj} = {tt} / {g0}, {bi} = {tt} - {bj} * {g0};")

    def rows(r: int, s: int) -> str:  # row of C (and A) of tile row r, half s, for this lane
        return f"(({bi} + {r * g0}) * {TM} + {8 * s} + {g})"

    for r in range(bm):
        for s in range(halves):
            w.line(f"const {I} {row}_{r}_{s} = min(({I}){rows(r, s)}, ({I}){M - 1});")
    for c in range(bn):
        w.line(f"const {I} {col}_{c} = min(({I})(({bj} + {c * g1}) * 8 + {g}), ({I}){N - 1});")
    outs = [(r, c, s, h) for r in range(bm) for c in range(bn) for s in range(halves)
            for h in (0, 1)]
    w.line("double " + ", ".join(f"{acc}_{r}_{c}_{s}_{h} = 0" for r, c, s, h in outs) + ";")

    def loads(kk: str, guarded: bool) -> None:
        def load(name: str, x: str) -> None:
            w.line(f"const double {name} = " + (f"{kk} < {K} ? {x} : 0.0;" if guarded
                                                  else f"{x};"))
        for r in range(bm):
            for s in range(halves):
                load(f"{av}_{r}_{s}", f"(double){fa(f'{row}_{r}_{s}', kk)}")
        for c in range(bn):
            load(f"{bv}_{c}", f"(double){fb(kk, f'{col}_{c}')}")

    def mmas() -> None:
        for r in range(bm):
            for c in range(bn):
                d = [f"{acc}_{r}_{c}_{s}_{h}" for s in range(halves) for h in (0, 1)]
                a = [f"{av}_{r}_{s}" for s in range(halves)]
                w.line(f"{macro}({', '.join(d + a)}, {bv}_{c});")

    # (loading the next K step's operands before this step's mmas measured no faster on an
    # H100: 1.96 ms either way for ADER f64 N=5, and 121 registers with `volatile`)
    whole = K // 4 * 4
    if whole:
        if lw.config.unroll_k > 1:
            w.line(f"#pragma unroll {lw.config.unroll_k}")
        w.open(f"for ({I} {k} = {q}; {k} < {whole}; {k} += 4)")
        loads(k, False)
        mmas()
        w.close()
    if K % 4:
        w.open("")
        w.line(f"const {I} {k} = {whole} + {q};")
        loads(k, True)
        mmas()
        w.close()
    for r, c, s, h in outs:
        i, j = rows(r, s), f"(({bj} + {c * g1}) * 8 + 2 * {q} + {h})"
        lines: list[str] = []
        store(lines, i, j, f"{acc}_{r}_{c}_{s}_{h}")
        guard = []
        if g0 * bm * TM > M:
            guard.append(f"{i} < {M}")
        if g1 * bn * 8 > N:
            guard.append(f"{j} < {N}")
        cond = f"if ({' && '.join(guard)}) " if guard else ""
        w.line(cond + (lines[0] if len(lines) == 1 else "{ " + " ".join(lines) + " }"))
    w.close()
