"""Register-tile plans for static-shape GEMMs and when 32-bit index arithmetic is safe.

A plan cuts an M x N output into g0 x g1 tiles of rm x rn elements, g0 = ceil(M / rm) and
g1 = ceil(N / rn); tile (bi, bj) holds rows bi + r * g0 and columns bj + c * g1, so neighbouring
work-items read neighbouring rows. Tile t = bi + bj * g0 goes to work-item t % size of the
group, which keeps it in registers; a work-item takes a second tile when there are more tiles
than work-items (a pass). The cost of a plan is the work-item's chain per K step (passes x
(rm*rn multiply-adds + rm + rn loads)): the work-group waits for its slowest work-item at the
next barrier, and a kernel of many small GEMMs is bound by that latency. Ties go to fewer
loads per step, then to more tiles. Registers are not in the model: `max_tile` caps rm * rn
and the tuner searches it with the K-loop unrolling (on an H100, ADER chain, 32 work-items:
4 x 3 tiles took 4.8 ms with the K loop unrolled 4 times and 2.7 ms without, 3 x 2 tiles in
two passes 3.3 ms either way).

What bounds such chains on an H100 (Nsight Compute on the ADER chain, one element per 32x1
work-group): the L1 data pipe, at 90 % busy, while the FP64 units are 26 % busy. Every warp
load of 64-bit values, from global or local memory and however few distinct addresses it
reads, takes two cycles of that pipe, the time of four warp FMAs; a 4 x 3 tile issues 7 loads
per 12 FMAs. With one element's 35 x 9 output per warp, 4 x 3 is the tiling with the fewest
loads per K step (fewer, larger tiles leave lanes idle), so going faster needs outputs of
several work-groups' elements per warp, or operands that stay in registers across K steps.
Hand-written variants of the f64 N = 5 chain measured against the lowering's 2.63 ms: one
work-item per column of C with K read as a whole column (the K index the same in the whole
work-group, 3-8 elements per work-group): 5.1-5.6 ms, the same with K in `constant` memory,
and 9-15 ms with the K loop fully unrolled (constant-bank operands, but the code no longer
fits the instruction cache); two elements per work-item sharing the loads of K: 2.37 ms
(f32: 1.63 -> 2.00 ms), three or four: 2.96-3.72 ms (registers). Static f64 gemms now run on
the FP64 tensor cores where the device has them (lower_mma.py): 2.63 -> 1.96 ms. There the
K-by-dq gemms take 1.08 ms of the 1.96 and every other step 0.61 ms (measured by deleting
their loads and mmas); m16n8k4 instead of m8n8k4 (twice the multiply-adds per instruction),
loading the next K step's operands first, and unrolling K by 2 change it by 3 % at most, so
those gemms are bound neither by the tensor pipe nor by load latency but most likely by the
L1 wavefronts of their fragment loads (a fragment of K spans 4 columns, one of dq 8).
Nsight Compute on that kernel (translated to CUDA) confirms it: the L1 data pipe 81-87 % busy,
the tensor pipe 52 %, and a global fragment load costs about 4 wavefronts (one per cache line:
its 4 columns of K, or 8 of dq, lie in as many lines), against 2 for a 64-bit load of 32
consecutive values. Gemm pairs (chains.py: tmp stays in registers), an m8n8k4 tile for a last
tile of at most 8 rows, and unrolling the tensor-core K loop by 2 took it to 1.56 ms. Keeping
dq_n in registers across the three pairs that add into it cost registers (144: 1.80 ms);
staging dq0 in local memory with a conflict-free leading dimension gained 1 % without the
unrolling and lost 8 % with it. What is left is the uncoalesced loads of K: sharing them
between several elements (element packing) is the lever that remains.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

INT_LIMIT = 2**30  # each index * stride term below this, so sums of two stay in int32


@dataclass(frozen=True)
class TilePlan:
    g0: int  # tiles along M (planned) or work-items along M (the group's grid)
    g1: int  # tiles along N, or work-items along N
    rm: int  # rows of C per tile
    rn: int  # columns of C per tile
    planned: bool  # False: the work-group's (wg0, wg1) grid, indexed by get_local_id


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def cost(M: int, N: int, size: int, rm: int, rn: int) -> int:
    """Chain length per work-item and K step of a plan (see the module docstring)."""
    passes = _ceil(_ceil(M, rm) * _ceil(N, rn), size)
    return passes * (rm * rn + rm + rn)


def grid_tiles(M: int, N: int, wg0: int, wg1: int, max_tile: int) -> tuple[int, int]:
    """(rm, rn) on the work-group's own grid: as many rows as cover M, then columns."""
    rm = min(_ceil(M, wg0), max_tile)
    rn = max(1, min(_ceil(N, wg1), max_tile // rm))
    return rm, rn


@lru_cache(maxsize=4096)
def plan(M: int, N: int, size: int, max_tile: int) -> TilePlan:
    """The cheapest tiling of an M x N output for a work-group of `size` work-items."""
    best, best_key = TilePlan(M, N, 1, 1, True), None
    for rm in range(1, min(M, max_tile) + 1):
        for rn in range(1, min(N, max_tile // rm) + 1):
            g0, g1 = _ceil(M, rm), _ceil(N, rn)
            key = (cost(M, N, size, rm, rn), rm + rn, -g0 * g1)
            if best_key is None or key < best_key:
                best, best_key = TilePlan(g0, g1, rm, rn, True), key
    return best


def fits_int(extents: list[int], strides: list[str]) -> bool:
    """True when every index below max(extents) times every static stride fits INT_LIMIT;
    a run-time stride is a `long` in C and promotes the product to 64 bits by itself."""
    top = max(extents, default=1)
    for s in strides:
        try:
            value = abs(int(s))
        except ValueError:
            continue
        if top * max(value, 1) >= INT_LIMIT:
            return False
    return top < INT_LIMIT
