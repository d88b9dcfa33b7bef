"""The generator reaches the edges (issue 10): values, control flow and shapes. Distribution
assertions over a few hundred kernels drawn with plain random sampling (fast; the same
generator as the Hypothesis strategies), and the interpreter's UB checker on edge-heavy ones."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from fuzz.gen.ranges import int_edges, type_range
from fuzz.strategies import sample_function, to_program
from tlgpu import LoweringConfig
from tlgpu.lowering.program import choose_geometry
from tlinterp.lang import ir
from tlinterp.lang.types import GroupType, MemrefType

N = 600


@pytest.fixture(scope="module")
def survey():
    """Counts over N kernels (seeds 0..N-1)."""
    c: Counter = Counter()
    shifts: dict = {}
    for seed in range(N):
        fn, args, groups, stats = sample_function(seed)
        c.update(stats)
        _kernel(fn, args, groups, c, shifts)
    return c, shifts


def _const(op):
    return op.value if isinstance(op, ir.Const) else None


def _local_memory(fn: ir.Function, c: Counter) -> None:
    """Allocas in program order: read back after another alloca was written (allocas that
    share memory by mistake show), and 2-D allocas read whole or with two run-time indices
    (swapped indices show)."""
    root: dict[str, ir.Alloca] = {}  # alloca and the views derived from it -> the alloca
    first_write: dict[int, int] = {}
    reads: list[tuple[int, int]] = []  # (position, alloca)
    whole_2d: set[int] = set()
    for pos, inst in enumerate(ir.walk(fn.body)):
        if isinstance(inst, ir.Alloca):
            root[inst.result.name] = inst
        elif isinstance(inst, (ir.Subview, ir.Expand, ir.Fuse)) and inst.operand.name in root:
            root[inst.result.name] = root[inst.operand.name]
        elif isinstance(inst, ir.Store) and inst.operand.name in root:
            first_write.setdefault(id(root[inst.operand.name]), pos)
        elif isinstance(inst, ir.Load) and inst.operand.name in root:
            a = root[inst.operand.name]
            reads.append((pos, id(a)))
            if a.result == inst.operand and a.type.order == 2 and \
                    all(isinstance(i, ir.Value) for i in inst.indices):
                whole_2d.add(id(a))
        elif isinstance(inst, ir.BLAS):
            for role in type(inst).ROLES:
                v = getattr(inst, role.field)
                if v.name not in root:
                    continue
                a = root[v.name]
                if role.field == inst.output():
                    first_write.setdefault(id(a), pos)
                else:
                    reads.append((pos, id(a)))
                    if a.result == v and a.type.order == 2:
                        whole_2d.add(id(a))
    allocas = {id(a): a for a in root.values()}
    c["alloca"] += len(allocas)
    c["alloca-2d"] += sum(a.type.order == 2 for a in allocas.values())
    c["alloca-2d-read-whole"] += len(whole_2d)
    if allocas:
        c["fn-with-alloca"] += 1
        c["fn-alloca-read-after-another-written"] += any(
            a in first_write and any(first_write[a] < w < pos for b, w in first_write.items()
                                     if b != a) for pos, a in reads)


def _kernel(fn: ir.Function, args: dict, groups: int, c: Counter, shifts: dict) -> None:
    geo = choose_geometry(fn, LoweringConfig())
    _local_memory(fn, c)
    inside_for: set[int] = set()
    for inst in ir.walk(fn.body):
        if isinstance(inst, ir.For):
            inside_for |= {id(i) for i in ir.walk(inst.body)}
    for inst in ir.walk(fn.body):
        if isinstance(inst, ir.For):
            c["for"] += 1
            start, stop = _const(inst.start), _const(inst.stop)
            step = 1 if inst.step is None else _const(inst.step)
            c["for-step!=1"] += step != 1
            if None in (start, stop):
                c["for-dynamic-bound"] += 1
            elif stop <= start:
                c["for-zero-trip"] += 1
            else:
                trips = -(-(stop - start) // step)
                c["for-one-trip"] += trips == 1
                c["for-partial-step"] += (stop - start) % step != 0
        elif isinstance(inst, ir.Foreach):
            c["foreach"] += 1
            c["foreach-dynamic-start"] += isinstance(inst.start, ir.Value)
            c["foreach-nonzero-start"] += _const(inst.start) not in (0, None)
        elif isinstance(inst, ir.If) and id(inst) in inside_for:
            c["if-in-for-with-results" if inst.results else "if-in-for-without-results"] += 1
        elif isinstance(inst, ir.Compare):
            c["compare"] += 1
            c["compare-equal-operands"] += inst.lhs == inst.rhs
        elif isinstance(inst, ir.Arith) and inst.op in ("shl", "shr") \
                and isinstance(inst.rhs, ir.Const):
            shifts.setdefault("amounts", []).append((inst.type.bits, inst.rhs.value))
        elif isinstance(inst, ir.Arith) and inst.type.is_int and not inst.type.is_bool:
            for op in (inst.lhs, inst.rhs):
                v = _const(op)
                if v is not None and abs(v) >= type_range(inst.type).hi // 2:
                    c["edge-constant"] += 1
        if isinstance(inst, ir.BLAS):
            out = inst.b_type if isinstance(inst, (ir.Axpby, ir.Sum)) else inst.c_type
            c["collective"] += 1
            sh = list(out.shape) + [None, None]
            near = {geo.wg0 - 1, geo.wg0 + 1}
            c["collective-rows-wg+-1"] += sh[0] in near
            c["collective-rows-15+"] += (sh[0] or 0) >= 15
            beta = _const(inst.beta)
            c["beta-" + ("other" if beta not in (0, 1) else str(int(beta)))] += 1
            if len(out.shape) == 2:
                c["collective-2d"] += 1
                c["collective-2d-matrix"] += min(sh[0] or 2, sh[1] or 2) >= 2
            if sh[0] is not None and sh[0] >= 3:
                # rows past one pass of the work-group that it does not divide (the last
                # pass of the work-items and of gemm's register tiles is partial)
                c["collective-rows>=3"] += 1
                c["collective-rows-past-wg"] += sh[0] > geo.wg0 and sh[0] % geo.wg0 != 0
            if isinstance(inst, ir.Gemm):
                c["gemm"] += 1
                c["gemm-rows-past-wg"] += sh[0] is not None and sh[0] > geo.wg0 \
                    and sh[0] % geo.wg0 != 0
                k = inst.a_type.shape[0 if inst.trans_a else 1]
                c["gemm-k1"] += k == 1
                c["gemm-k-odd"] += k is not None and k % 2 == 1
                c[f"gemm-trans-{int(inst.trans_a)}{int(inst.trans_b)}"] += 1
    for a in fn.args:
        if isinstance(a.type, GroupType) and None in a.type.memref.shape and groups >= 2:
            c["group-dynamic"] += 1  # members stored one by one when their shapes differ
            c["group-mixed"] += f"{a.value.name}.0" in args
        t = getattr(a.type, "memref", a.type)
        if not isinstance(t, MemrefType):
            continue
        data = [v for k, v in args.items() if k == a.value.name or
                k.startswith(a.value.name + ".") and k[len(a.value.name) + 1:].isdigit()]
        if not data:
            continue
        flat = np.concatenate([np.asarray(d).reshape(-1) for d in data])
        if t.element.is_int:
            c["int-arg"] += 1
            r = type_range(t.element)
            c["int-arg-with-min-or-max"] += bool(np.isin(flat, [r.lo, r.hi]).any())
        else:
            c["float-arg"] += 1
            c["float-arg-negative-zero"] += bool((np.signbit(flat) & (flat == 0)).any())
            tiny = np.finfo(t.element.dtype).tiny
            c["float-arg-subnormal"] += bool(((flat != 0) & (np.abs(flat) < tiny)).any())


def share(c: Counter, part: str, whole: str) -> float:
    assert c[whole] > 0, whole
    return c[part] / c[whole]


def test_values_at_the_edges(survey):
    c, shifts = survey
    # div/rem of signed types see negative dividends and negative divisors (never forced
    # positive), compares see equal operands, constants and data reach the type's edges
    assert share(c, "divrem-negative-dividend", "divrem") >= 0.3, c
    assert share(c, "divrem-negative-divisor", "divrem") >= 0.3, c
    assert share(c, "compare-equal-operands", "compare") >= 0.15, c
    assert c["edge-constant"] >= 20, c
    assert share(c, "compare-with-edge", "compare") >= 0.15, c
    assert share(c, "int-arg-with-min-or-max", "int-arg") >= 0.1, c
    assert c["float-arg-negative-zero"] >= 5 and c["float-arg-subnormal"] >= 5, c
    # shifts: constant amounts spread over the whole legal range of each width
    amounts = shifts["amounts"]
    assert all(0 <= a < bits for bits, a in amounts), amounts
    quarters = Counter(4 * a // bits for bits, a in amounts)
    assert min(quarters[q] for q in range(4)) >= 3, quarters
    assert sum(a >= bits - 4 for bits, a in amounts) >= 3, amounts  # the widest ones too


def test_control_flow_at_the_edges(survey):
    c, _ = survey
    assert share(c, "for-step!=1", "for") >= 0.3, c
    # (the alloca copy and fill loops, step 1 over a whole mode, count among the loops)
    assert share(c, "for-partial-step", "for") >= 0.08, c
    assert share(c, "for-zero-trip", "for") >= 0.05, c
    assert share(c, "for-one-trip", "for") >= 0.05, c
    assert share(c, "for-dynamic-bound", "for") >= 0.1, c
    assert share(c, "foreach-nonzero-start", "foreach") >= 0.08, c  # fills start at 0
    assert c["foreach-dynamic-start"] >= 5, c
    assert c["if-in-for-with-results"] >= 5 and c["if-in-for-without-results"] >= 3, c


def test_shapes_at_the_edges(survey):
    c, _ = survey
    # output rows one below/above the work-group size the lowering picks, and near 16
    assert share(c, "collective-rows-wg+-1", "collective") >= 0.05, c
    assert c["collective-rows-15+"] >= 3, c
    assert c["gemm-k1"] >= 3 and c["gemm-k-odd"] >= 5, c
    for tt in ("00", "01", "10", "11"):
        assert c[f"gemm-trans-{tt}"] >= 2, c
    for b in ("beta-0", "beta-1", "beta-other"):
        assert c[b] >= 10, c
    # 2-D outputs that are real matrices (a swapped index or a write past the last row or
    # column of a register tile shows), and groups whose members differ where the type has
    # `?` (54 % and 100 % of 600 kernels; 47 % and 95 % before they were dimensions)
    assert share(c, "collective-2d-matrix", "collective-2d") >= 0.5, c
    assert c["group-mixed"] == c["group-dynamic"] > 50, c


def test_local_memory_is_read_back(survey):
    c, _ = survey
    # several allocas alive at once, the first read after the next was written
    assert share(c, "fn-alloca-read-after-another-written", "fn-with-alloca") >= 0.15, c
    # 2-D allocas read whole or at two run-time indices, filled by position (differently
    # for each alloca)
    assert share(c, "alloca-2d-read-whole", "alloca-2d") >= 0.35, c
    assert share(c, "position-fill", "alloca") >= 0.3, c


def test_collective_rows_past_the_work_group(survey):
    c, _ = survey
    assert share(c, "collective-rows-past-wg", "collective-rows>=3") >= 0.2, c
    # replicated stores right after the parallel step that wrote their view
    assert share(c, "store-after-parallel", "collective") >= 0.05, c
    assert share(c, "gemm-rows-past-wg", "gemm") >= 0.1, c


def test_gemm_chains_and_the_tensor_core_paths():
    """Gemm chains (the generator's `gemm_chain_percent`): a gemm reading as A the output
    that the gemm before it wrote whole, the pattern compilers fuse (tlgpu keeps it in
    registers: chains.py). Whole-warp work-groups (`whole_warps_percent`, more often with an
    f64 gemm) let static f64 gemms take the FP64 tensor-core path, which NVIDIA campaigns
    check: 16-row tiles for more than 8 rows (more f64 functions have big shapes), 8-row ones
    otherwise, and fused pairs. Counts over 1000 kernels (before chains: no pair, 2 fused
    with 16-row tiles, 0 fused pairs)."""
    from tlgpu.lowering import chains
    from tlgpu.lowering.program import lower_program

    c: Counter = Counter()
    for seed in range(1000):
        f, _, _, stats = sample_function(seed)
        c["chain"] += stats["gemm-chain"]
        bs = chains.bases(f)
        for insts in _regions(f.body):
            for k in range(len(insts)):
                pair = chains.gemm_pair(insts, k, bs)
                if pair is not None:
                    c["pair"] += 1
                    c["pair-dead"] += not pair.keep
                    c["pair-between"] += bool(pair.between)
                    c["pair-f64"] += pair.first.c_type.element.name == "f64"
        source = lower_program(to_program([f]), None, LoweringConfig(tensor_cores=16)).source
        body = source.split("#define")[-1]
        c["m16"] += "TL_DMMA16(" in body
        c["m8"] += "TL_DMMA8(" in body
        c["fused"] += "passed in registers" in source
    assert c["chain"] >= 40 and c["pair"] >= 20, c
    assert c["pair-dead"] >= 1 and c["pair-between"] >= 10 and c["pair-f64"] >= 8, c
    assert c["m16"] >= 2 and c["m8"] >= 10 and c["fused"] >= 2, c


def test_streamed_gemm_operands_reach_the_paired_k_loads():
    """Streamed f64 gemm operands (`streamed_gemm_percent`): K >= 8 and an operand contiguous
    along K cut from an argument of its own, as application kernels stream theirs. Aligned
    ones let NVIDIA's tensor-core path load two K steps per double2 (tlgpu's k_pairs), which
    no generated kernel reached before (0 of 1000); near misses (odd stride or offset) must
    not take it. Counts over 600 kernels (22 streamed, 8 near misses, 12 with k_pairs)."""
    from tlgpu.lowering.program import lower_program

    c: Counter = Counter()
    for seed in range(600):
        f, _, _, stats = sample_function(seed)
        c.update(stats)
        if stats["streamed-operand"] or stats["streamed-operand-near-miss"]:
            src = lower_program(to_program([f]), None, LoweringConfig(tensor_cores=16)).source
            tc = "TL_DMMA" in src.split("#define")[-1]
            c["tensor-cores"] += tc
            c["k-pairs"] += tc and "double2" in src
    assert c["streamed-operand"] >= 12 and c["streamed-operand-near-miss"] >= 4, c
    assert c["k-pairs"] >= 5, c


def test_every_gemm_streamed_stays_well_formed_and_free_of_undefined_behaviour():
    """Streamed operands are arguments declared wherever the gemm is, often in a nested
    region: their names must not come from the counter that closing regions hand out again
    (a Hypothesis campaign met two arguments named alike). All f64 gemms streamed: 7 of 300
    such kernels failed the checker that way."""
    from tlinterp.interp import run
    from tlinterp.lang.types import ScalarType

    only = dict(streamed_gemm_percent=100, memref_types=(ScalarType.f64,),
                collective_weights={"gemm": 10, "axpby": 0, "gemv": 0, "ger": 0, "hadamard": 0,
                                    "sum": 0})
    streamed = 0
    for seed in range(300):
        fn, args, groups, stats = sample_function(seed, **only)
        program = to_program([fn])  # the checker: one definition per name
        streamed += stats["streamed-operand"] + stats["streamed-operand-near-miss"]
        if seed < 30:
            run(program, args, func="k", groups=groups, check=True)
    assert streamed >= 100


def _regions(region: ir.Region):
    yield region.instructions
    for inst in region.instructions:
        for inner in ir.regions_of(inst):
            yield from _regions(inner)


def test_edge_heavy_kernels_are_free_of_undefined_behaviour():
    """Every dimension at its maximum: the interpreter's UB checker must stay silent."""
    from tlinterp.interp import run

    edgy = dict(edge_percent=100, edge_input_percent=100, equal_compare_percent=60,
                dynamic_bound_percent=100, big_shape_percent=100)
    for seed in range(25):
        fn, args, groups, _ = sample_function(seed, **edgy)
        program = to_program([fn])
        run(program, args, func="k", groups=groups, check=True)


def test_int_edges_cover_the_named_values():
    from tlinterp.lang.types import ScalarType

    e = int_edges(ScalarType.i8)
    assert {-128, -127, -1, 0, 1, 126, 127, 15, 16, 17, -15, -16, -17} <= set(e)
    assert max(int_edges(ScalarType.u16)) == 65535 and min(int_edges(ScalarType.u16)) == 0
    # unsigned: the top bit is set in the bit patterns of the signed type's negative edges
    u, i = int_edges(ScalarType.u32), int_edges(ScalarType.i32)
    assert {v % 2**32 for v in i if v < 0} <= set(u)
    assert sum(v >= 2**31 for v in u) >= sum(v < 0 for v in i) - 1
