"""Register-tile plans for static-shape GEMMs and when 32-bit index arithmetic is safe.

A plan spreads an M x N output over a g0 x g1 grid of work-items (work-item t of the group is
(t % g0, t / g0); those with t >= g0 * g1 sit out), each keeping an rm x rn tile of C in
registers; blocks of g0*rm x g1*rn repeat when the grid cannot cover C at once. The cost of a
plan is first the work-item's chain per K step (blocks x (rm*rn multiply-adds + rm + rn
loads)): the work-group waits for its slowest work-item at the next barrier, and a kernel of
many small GEMMs is bound by that latency (measured on an H100: a plan with fewer, busier
work-items lost 14% on the ADER chain). Ties go to fewer SIMD issue slots (idle lanes of a
partly used NVIDIA warp cost as much as busy ones), then to more work-items. The work-group's
own (wg0, wg1) grid is kept unless a plan is clearly cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

SIMD_WIDTH = 32  # lanes issued together on NVIDIA GPUs; wider CPUs vectorise work-items anyway
PLAN_GAIN = 0.75  # use a plan only when it costs at most this fraction of the group's grid
INT_LIMIT = 2**30  # each index * stride term below this, so sums of two stay in int32


@dataclass(frozen=True)
class TilePlan:
    g0: int  # work-items along M
    g1: int  # work-items along N
    rm: int  # rows of C per work-item
    rn: int  # columns of C per work-item
    planned: bool  # False: the work-group's (wg0, wg1) grid, indexed by get_local_id


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def cost(M: int, N: int, g0: int, g1: int, rm: int, rn: int) -> tuple[int, int]:
    """(chain length per work-item, SIMD issue slots) per K step (see the module docstring)."""
    blocks = _ceil(M, g0 * rm) * _ceil(N, g1 * rn)
    chain = blocks * (rm * rn + rm + rn)
    return chain, chain * _ceil(g0 * g1, SIMD_WIDTH)


def grid_tiles(M: int, N: int, wg0: int, wg1: int, max_tile: int) -> tuple[int, int]:
    """(rm, rn) on the work-group's own grid: as many rows as cover M, then columns."""
    rm = min(_ceil(M, wg0), max_tile)
    rn = max(1, min(_ceil(N, wg1), max_tile // rm))
    return rm, rn


@lru_cache(maxsize=4096)
def plan(M: int, N: int, wg0: int, wg1: int, max_tile: int) -> TilePlan:
    """The cheapest grid and tile for an M x N output on a wg0 x wg1 work-group."""
    size = wg0 * wg1
    rm, rn = grid_tiles(M, N, wg0, wg1, max_tile)
    fallback = TilePlan(wg0, wg1, rm, rn, False)
    base = cost(M, N, wg0, wg1, rm, rn)
    best, best_key = fallback, None
    for rm in range(1, min(M, max_tile) + 1):
        for rn in range(1, min(N, max_tile // rm) + 1):
            for g0 in range(1, min(size, _ceil(M, rm)) + 1):
                g1 = max(1, min(size // g0, _ceil(N, rn)))
                key = (*cost(M, N, g0, g1, rm, rn), -g0 * g1, -g0)
                if best_key is None or key < best_key:
                    best, best_key = TilePlan(g0, g1, rm, rn, True), key
    if best_key is None or best_key[0] > PLAN_GAIN * base[0]:
        return fallback
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
