"""Knobs that bias what `fuzz.strategies.kernels()` generates."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from tlinterp.lang import ir
from tlinterp.lang.types import V03_SCALARS, ScalarType

MEMREF_TYPES = tuple(t for t in ScalarType  # i1 has no storage type; v0.4 types: not v0.3
                     if not t.is_bool and t in V03_SCALARS)


# the generator's name of each collective (its class name in lower case: `hadamard`), the keys
# of `collective_weights`; every declared collective is generated, gemm the most often
COLLECTIVE_KINDS: dict[str, type] = {cls.__name__.lower(): cls for cls in ir.BLAS}


def _collective_weights() -> dict[str, int]:
    return {"gemm": 5, **{k: 2 for k in COLLECTIVE_KINDS if k != "gemm"}}


def _weights(**kw: int) -> dict[str, int]:
    return dict(kw)


@dataclass
class GenParams:
    """Size limits, type choices and weights (0 disables a kind; larger is more frequent).

    statement_weights: store, collective, foreach, for, if, alloca, barrier, scalar
    collective_weights: one per COLLECTIVE_KINDS (axpby, gemm, gemv, ger, hadamard, sum)
    scalar_weights: const, value, load, special (group_id/size/...), binary, unary, cast,
    cmp, if (an `if` yielding the value)
    """

    max_groups: int = 4
    max_size: int = 6  # largest mode size of arguments and allocas
    max_order: int = 3  # largest order of argument memrefs
    max_k: int = 6  # largest reduction length
    max_depth: int = 2  # nesting depth of if/for/foreach
    max_statements: int = 5  # statements per region
    max_view_chain: int = 2  # expand/fuse steps before a subview
    max_trips: int = 3  # trip count of generated for loops
    max_inputs: int = 3
    max_outputs: int = 2
    memref_types: tuple[ScalarType, ...] = MEMREF_TYPES
    scalar_types: tuple[ScalarType, ...] = V03_SCALARS
    int_data_max: int = 3  # integer argument data lies in [-3, 3] ([0, 3] unsigned)
    float_data_max: float = 2.0
    nonfinite_percent: int = 3  # chance of NaN/Inf in float inputs (scalar-float functions)
    float_collective_percent: int = 75  # float functions that use collectives
    edge_percent: int = 30  # constants and scalar arguments drawn from the type's edges
    edge_input_percent: int = 20  # integer inputs whose data mixes small values and edges
    equal_compare_percent: int = 35  # compares of a value with itself
    dynamic_bound_percent: int = 35  # for/foreach bounds taken from visible values
    big_shape_percent: int = 25  # functions whose sizes come from shape_edges
    # f64 functions more often: gemms of more than 8 rows take 16-row tensor-core tiles
    f64_big_shape_percent: int = 50
    # sizes around the work-group sizes the lowering may choose (1..32, powers of two) and
    # their register tiles: wg - 1, wg, wg + 1, primes, 1
    shape_edges: tuple[int, ...] = (1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17)
    max_step: int = 4  # largest step of generated for loops
    witness_percent: int = 100  # computed scalars also stored to a witness output
    # local memory: allocas copied whole into an output of their own at the end of their
    # region (after later allocas were written: overlapping placement shows), allocas drawn
    # in pairs, and fills whose values depend on the position and differ between allocas
    dump_percent: int = 70
    alloca_pair_percent: int = 60
    position_fill_percent: int = 75
    # functions whose work-group size attribute lies below a collective's static row count
    # and does not divide it: the rows exceed one pass of the work-group and its tiles
    wg_below_rows_percent: int = 70
    # work-group size attributes of whole NVIDIA warps (32x1, 32x2, 64x1): the lowering's
    # warp-level paths (FP64 tensor cores) need them, and most other attributes are smaller
    whole_warps_percent: int = 12
    wide_rows_percent: int = 75  # collective outputs with 3 rows or more
    wide_cols_percent: int = 60  # of those (2-D), also 2 columns or more
    matrix_output_percent: int = 50  # 2-D outputs with 3 rows or more and 2 columns or more
    # gemm chains: a gemm that wrote all of its output with beta 0 is followed by a gemm
    # reading that output as A (compilers fuse such pairs, keeping it in registers); allocas
    # initialised by a collective (2-D) use a gemm this often
    gemm_chain_percent: int = 75
    alloca_gemm_percent: int = 70
    # functions with an f64 gemm take whole-warp work-group sizes this often instead
    f64_gemm_whole_warps_percent: int = 60
    # f64 gemms of static shape whose K >= 8 operands are streamed from arguments of their
    # own, contiguous along K and mostly 16-byte aligned (application kernels' shape; the
    # tensor cores load such operands two K steps at a time); near misses are misaligned
    streamed_gemm_percent: int = 30
    streamed_near_miss_percent: int = 25
    store_after_parallel_percent: int = 35  # stores into the view a collective/foreach wrote
    lifetime_stop_percent: int = 50  # allocas whose lifetime ends explicitly
    work_group_size_multiple: int = 1  # work_group_size attributes: W0 a multiple of it
    # v0.4 only (kernels(lang="v0.4")): the percentage of cases drawn from the SPMD kernel
    # generator (fuzz.gen.spmd.spmd_cases(**spmd_params): parallel regions, sub-groups,
    # cooperative matrices) where that module exists; the rest come from the builder here
    spmd_weight: int = 30
    spmd_params: dict = field(default_factory=dict)  # knobs of spmd_cases (its SpmdParams)
    # v0.4 only: the statement "v04" (weight in statement_weights) picks one of these
    v04_weights: dict[str, int] = field(default_factory=lambda: _weights(
        lowp=4, math=2, abs=1, foreach_nd=2, cumsum=4, atomic=2))
    lowp_types: tuple[ScalarType, ...] = (ScalarType.f16, ScalarType.bf16, ScalarType.c32,
                                          ScalarType.c64)
    # functions (without float collectives) whose body ends with f16/bf16 operations on NaN,
    # infinities, signed zeros, subnormals and full significands (V04Generator.gen_block)
    lowp_special_percent: int = 40
    # functions ending with a narrowing integer cast of a value around the narrower type's
    # maximum (V04Generator.gen_wrapping_cast)
    wrapping_cast_percent: int = 30
    grid_percent: int = 40  # 3-D grids (x, y, z) instead of a group count
    loop_carried_percent: int = 40  # for loops with init(...) -> (...)
    unroll_percent: int = 25  # for loops with an unroll attribute
    attribute_percent: int = 30  # memref arguments with alignment/shape_gcd/stride_gcd
    subgroup_size_percent: int = 25  # functions with a subgroup_size attribute
    subgroup_sizes: tuple[int, ...] = (4, 8, 16, 32)  # its values (a profile may narrow them)
    # the target's profile (fuzz.profiles.Profile): its features the generator avoids
    profile: Optional[Any] = None
    statement_weights: dict[str, int] = field(default_factory=lambda: _weights(
        collective=6, store=3, foreach=3, alloca=3, for_=2, if_=2, barrier=1, scalar=5))
    collective_weights: dict[str, int] = field(default_factory=_collective_weights)
    scalar_weights: dict[str, int] = field(default_factory=lambda: _weights(
        const=3, value=3, load=4, special=2, binary=8, unary=1, cast=3, cmp=4, if_=1))

    def with_(self, **changes) -> GenParams:
        return replace(self, **changes)
