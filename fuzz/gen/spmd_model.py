"""What the SPMD kernel builder (`fuzz.gen.spmd`) knows about a value while it builds a kernel,
and its knobs.

Exactness instead of error bounds: every number a generated SPMD kernel computes is a small
dyadic rational, a multiple of 2^-grain of magnitude at most `mag` (per part for complex
values). Such a number is exact in a type with p significant bits when mag * 2^grain <= 2^p,
and sums, products, min/max, sub-group reductions and scans, coopmatrix products and
reductions of exact numbers stay exact as long as the model says the result fits too. So the
order in which an implementation associates a sub-group reduction or a coopmatrix product
cannot change any result: outputs compare bit for bit, and a wrong rule (a lane skipped, a
wrong identity, a transposed layout) shows. Integers use the same model with grain 0 and the
type's range: nothing overflows.

Uniformity: where a value is the same across work-items. WG (every work-item of the
work-group), SG (every work-item of a sub-group) or LANE (varies). Sub-group operations need
control flow uniform per sub-group; barriers need it uniform per work-group; the
`subgroup_broadcast` lane, coopmatrix positions and scalars need SG-uniform values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import CoopMatrixType, ScalarType

WG, SG, LANE = 0, 1, 2

T = ScalarType
NUMBER_TYPES = (T.i8, T.i16, T.i32, T.i64, T.f16, T.bf16, T.f32, T.f64, T.c32, T.c64)
# significant bits of the floating types (complex: of each part)
PRECISION = {T.f16: 11, T.bf16: 8, T.f32: 24, T.f64: 53, T.c32: 24, T.c64: 53}
MAX_GRAIN = 6


def int_max(t: ScalarType) -> int:
    return (1 << (t.bits - 1)) - 1


def fits(t: ScalarType, mag: float, grain: int) -> bool:
    """Every multiple of 2^-grain of magnitude <= mag is exact in t (integers: in range)."""
    if not math.isfinite(mag):
        return False
    if t.is_int:
        return grain == 0 and mag <= int_max(t)
    return grain <= MAX_GRAIN and mag * 2.0 ** grain <= 2.0 ** PRECISION[t]


def real_of(t: ScalarType) -> ScalarType:
    """The part type of a complex type (re, im, abs), else t."""
    return {T.c32: T.f32, T.c64: T.f64}.get(t, t)


@dataclass
class Val:
    """A scalar SSA value: its type, the model of its numbers and its uniformity. mag is inf
    for values that may be a type edge (the identity an exclusive max/min scan gives lane 0:
    -inf or the type's minimum): they are only stored, compared, min/max-ed or fed to
    sub-group max/min and broadcast."""

    op: Value
    type: ScalarType
    mag: float
    grain: int
    uni: int
    kind: str = "value"  # what made it (statistics, what to store at the end of a region)
    stored: bool = False


@dataclass
class CVal:
    """A coopmatrix SSA value and the model of its components (padding included)."""

    op: Value
    type: CoopMatrixType
    mag: float
    grain: int
    observed: bool = False  # stored, or a component extracted


@dataclass
class SpmdParams:
    """Knobs of `fuzz.gen.spmd.spmd_cases`; weights 0 disable a family.

    weights: statements of a parallel region: load, arith (binary), unary, cast, subgroup
    (reduce/scan), broadcast, exchange (local memory through a barrier), barrier, coop (a
    cooperative-matrix step), if_, for_, store, atomic (work-items of a work-group update one
    element).
    """

    subgroup_sizes: tuple[int, ...] = (8, 16, 16, 32)
    max_wx_subgroups: int = 2  # work_group_size[0] = S * k, k <= this
    # work_group_size[0] a multiple of this (a target's: tinytc takes multiples of the sub-group
    # size it picks, fuzz/profiles' work_group_size_multiple); S and k drawn among those
    # that make one (none: any)
    wx_multiple: int = 1
    max_wy: int = 2
    one_subgroup_percent: int = 35  # work-groups of one sub-group (else k and wy drawn)
    max_groups: int = 3  # work-groups in all (a grid of up to 3 dimensions)
    grid_percent: int = 40  # groups given as a 2-D/3-D grid
    max_statements: int = 10  # statements of the parallel region (nested: fewer)
    max_depth: int = 2  # if/for nesting inside the parallel region
    max_trips: int = 3
    types: tuple[ScalarType, ...] = NUMBER_TYPES
    data_max: int = 4  # input data: multiples of 2^-grain in [-data_max, data_max]
    max_data_grain: int = 2
    foreach_tile_percent: int = 30  # kernels with a foreach_tile after the parallel region
    coop_max_cols: int = 9
    # extract components that are padding (columns N..J-1 of the layout) in some lanes: the
    # reference defines them (0 after a load); off, only matrix entries are extracted
    extract_padding: bool = True
    # element types of atomics (scalar and coopmatrix); tinytc v0.4.0 compiles them for
    # i32 i64 f32 f64 c32 c64 only (and f16 except add)
    atomic_types: tuple[ScalarType, ...] = NUMBER_TYPES
    # `constant`s of bf16 (scalar or coopmatrix components); off, a bf16 value that would be
    # one is an f32 constant cast to bf16 (tinytc v0.4.0 miscompiles bf16 constants)
    bf16_constants: bool = True
    # casts between index and i64; off, such a cast goes through i32 (the values are small)
    index_i64_casts: bool = True
    # stores, atomic updates and padding extracts of matrices whose layout pads columns; off,
    # such a matrix is never stored or updated and only its entries are extracted (tinytc
    # v0.4.0 writes and reads the padding: coopmatrix-padding-columns-touch-memory)
    padded_columns: bool = True
    # casts bf16 -> f32, f16 -> bf16, f64 -> bf16 and mul_adds of bf16 into another type;
    # off, such a cast goes through f64 (from bf16) or f32 (to bf16), and no such mul_add is
    # made (tinytc v0.4.0's code for them does not build: bf16-casts-invalid-spirv)
    bf16_conversions: bool = True
    # transposed stores into memrefs whose first stride is not 1; off, a `.t` store's memref
    # is packed or padded (tinytc v0.4.0 ignores the stride: coopmatrix-transposed-store-
    # strided-rows-lost)
    transposed_strided_stores: bool = True
    weights: dict[str, int] = field(default_factory=lambda: dict(
        load=4, arith=6, unary=2, cast=2, subgroup=5, broadcast=3, exchange=3, barrier=1,
        coop=6, if_=2, for_=2, store=2, atomic=1))

    @classmethod
    def of(cls, knobs: dict[str, Any]) -> SpmdParams:
        """The defaults with `knobs` changed; weights given in part update the defaults; an
        unknown knob is a TypeError naming it."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(knobs) - names)
        if unknown:
            raise TypeError(f"spmd_cases: unknown knob(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(names))})")
        base = cls()
        for key in ("types", "atomic_types"):  # names ("f16") or ScalarTypes: number types
            if key not in knobs:
                continue
            names = {t.value: t for t in NUMBER_TYPES}
            types = tuple(names.get(t, t) if isinstance(t, str) else t for t in knobs[key])
            bad = [str(t) for t in types if t not in NUMBER_TYPES]
            if bad or (key == "types" and not types):
                raise ValueError(f"spmd_cases: {key} must be number types of v0.4 "
                                 f"({', '.join(map(str, NUMBER_TYPES))}), not {bad or 'none'}")
            knobs = {**knobs, key: types}
        if "weights" in knobs:
            knobs = {**knobs, "weights": {**base.weights, **knobs["weights"]}}
            bad = sorted(set(knobs["weights"]) - set(base.weights))
            if bad:
                raise TypeError(f"spmd_cases: unknown weight(s) {', '.join(bad)}")
        return replace(base, **knobs)


def literal(value, t: ScalarType) -> Const:
    """The literal of a `constant` of type t (complex: a Python complex)."""
    if t.is_complex:
        return Const(complex(value), True)
    if t.is_float:
        return Const(float(value), True)
    if t is ScalarType.i1:  # v0.4's true/false: the checker tells them from 1/0 by the bool
        return Const(bool(value))
    return Const(int(value))


def value_mag(value) -> float:
    return max(abs(complex(value).real), abs(complex(value).imag))


def value_grain(value) -> int:
    """The smallest g with value * 2^g integral (parts of a complex value)."""
    g = 0
    for x in (complex(value).real, complex(value).imag):
        while x * (1 << g) != int(x * (1 << g)):
            g += 1
    return g


__all__ = ["WG", "SG", "LANE", "NUMBER_TYPES", "PRECISION", "Val", "CVal", "SpmdParams",
           "fits", "int_max", "real_of", "literal", "value_mag", "value_grain"]
