"""Gemm pairs on the tensor cores (tlgpu/lowering/chains.py, mma.lower_pair, knob `gemm_pairs`):
which pairs match, when the intermediate's stores are left out, what the lowering emits, and,
on an NVIDIA device with FP64 tensor cores, that the results agree with the interpreter (those
skip without one; CI has pocl only)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from benches import bench
from drawn import drawn
from nvidia import nvidia_mma_rows

import tlinterp
from tlgpu import LoweringConfig
from tlgpu.lowering import chains
from tlgpu.lowering.program import lower_program

PAIR = """
func @p(%A: memref<f64x{M}x{K}x?>, %B: memref<f64x{K}x{N1}x?>, %D: memref<f64x{DR}x{DC}x?>,
        %C: memref<f64x{M}x{N2}x?>, %T: memref<f64x{M}x{N1}x?>) {attr} {{
  %e = group_id
  %a = subview %A[:, :, %e] : memref<f64x{M}x{K}x?>
  %b = subview %B[:, :, %e] : memref<f64x{K}x{N1}x?>
  %d = subview %D[:, :, %e] : memref<f64x{DR}x{DC}x?>
  %c = subview %C[:, :, %e] : memref<f64x{M}x{N2}x?>
  %tout = subview %T[:, :, %e] : memref<f64x{M}x{N1}x?>
  %t = alloca -> memref<{tt}x{M}x{N1}>
  gemm.n.n {alpha1}, %a, %b, {beta1}, %t : f64, memref<f64x{M}x{K}>, memref<f64x{K}x{N1}>, \
f64, memref<{tt}x{M}x{N1}>
  gemm.n.{tb} {alpha2}, %t, %d, {beta2}, %c : f64, memref<{tt}x{M}x{N1}>, \
memref<f64x{DR}x{DC}>, f64, memref<f64x{M}x{N2}>
{tail}}}
"""
TAILS = {
    "dead": "",
    "read": "  axpby.n 1.0, %t, 0.0, %tout : f64, memref<{tt}x{M}x{N1}>, f64, "
            "memref<f64x{M}x{N1}>\n",
    "overwritten": "  gemm.n.n 1.0, %a, %b, 0.0, %t : f64, memref<f64x{M}x{K}>, "
                   "memref<f64x{K}x{N1}>, f64, memref<{tt}x{M}x{N1}>\n"
                   "  axpby.n 1.0, %t, 0.0, %tout : f64, memref<{tt}x{M}x{N1}>, f64, "
                   "memref<f64x{M}x{N1}>\n",
    "updated": "  gemm.n.n 1.0, %a, %b, 1.0, %t : f64, memref<f64x{M}x{K}>, "
               "memref<f64x{K}x{N1}>, f64, memref<{tt}x{M}x{N1}>\n"
               "  axpby.n 1.0, %t, 0.0, %tout : f64, memref<{tt}x{M}x{N1}>, f64, "
               "memref<f64x{M}x{N1}>\n",
    "stopped": "  lifetime_stop %t\n",
}


def pair_source(M, N1, K, N2, tail="dead", alpha1="1.0", beta1="0.0", alpha2="1.0",
                beta2="1.0", tt="f64", trans_d=False, group=None) -> str:
    DR, DC = (N2, N1) if trans_d else (N1, N2)
    fields = dict(M=M, K=K, N1=N1, N2=N2, DR=DR, DC=DC, tt=tt)
    return PAIR.format(**fields, alpha1=alpha1, beta1=beta1, alpha2=alpha2, beta2=beta2,
                       tb="t" if trans_d else "n",
                       attr=f"work_group_size({group[0]},{group[1]})" if group else "",
                       tail=TAILS[tail].format(**fields))


def _program(source: str):
    return tlinterp.check(tlinterp.parse(source, "p.tl"))


def _pair(source: str):
    fn = _program(source).functions[0]
    insts = fn.body.instructions
    k = next(i for i, x in enumerate(insts) if isinstance(x, tlinterp.lang.ir.Gemm))
    return chains.gemm_pair(insts, k, chains.bases(fn))


def _lower(source: str, **knobs) -> str:
    knobs.setdefault("tensor_cores", 16)
    return lower_program(_program(source), None, LoweringConfig(**knobs)).source


def test_which_pairs_match_and_when_the_intermediate_is_dead():
    for tail, keep in (("dead", False), ("read", True), ("overwritten", False),
                       ("updated", True), ("stopped", False)):
        pair = _pair(pair_source(35, 9, 56, 9, tail))
        assert pair is not None and pair.keep is keep, tail
    assert _pair(pair_source(35, 9, 56, 9, trans_d=True)) is not None  # op(B) may transpose
    assert _pair(pair_source(35, 9, 56, 9, beta1="1.0")) is None  # T not overwritten whole
    assert _pair(pair_source(35, 9, 56, 9, beta1="0.5")) is None
    atomic = pair_source(35, 9, 56, 9).replace("gemm.n.n ", "gemm.n.n.atomic ", 1)
    assert _pair(atomic) is None
    # the second reads T transposed: its A fragments are not the first's accumulators
    square = pair_source(9, 9, 9, 9).replace(", %t, %d,", ", %t, %d,")
    transposed = square.replace("gemm.n.n 1.0, %t, %d", "gemm.t.n 1.0, %t, %d")
    assert "gemm.t.n" in transposed and _pair(transposed) is None
    # memory shared between the pair's operands
    writes_input = pair_source(9, 9, 9, 9).replace(", 1.0, %c :", ", 1.0, %b :")
    assert "%b :" in writes_input and _pair(writes_input) is None
    reads_t_twice = pair_source(9, 9, 9, 9).replace("%t, %d,", "%t, %t,")
    assert _pair(reads_t_twice) is None


def test_a_view_of_the_intermediate_keeps_its_stores():
    view = """
func @p(%A: memref<f64x16x8>, %B: memref<f64x8x8>, %C: memref<f64x16x8>, %T: memref<f64x4x8>) {
  %t = alloca -> memref<f64x16x8>
  %v = subview %t[0:4, :] : memref<f64x16x8>
  gemm.n.n 1.0, %A, %B, 0.0, %t : f64, memref<f64x16x8>, memref<f64x8x8>, f64, memref<f64x16x8>
  gemm.n.n 1.0, %t, %B, 0.0, %C : f64, memref<f64x16x8>, memref<f64x8x8>, f64, memref<f64x16x8>
  axpby.n 1.0, %v, 0.0, %T : f64, memref<f64x4x8,strided<1,16>>, f64, memref<f64x4x8>
}
"""
    pair = _pair(view)
    assert pair is not None and pair.keep


def test_lowered_as_one_step_without_loads_or_dead_stores_of_the_intermediate():
    text = _lower(pair_source(35, 9, 56, 9))
    assert "the first's output passed in registers" in text
    assert "v_t[" not in text  # T neither loaded nor stored
    assert "barrier" not in text  # one step: nothing to order
    kept = _lower(pair_source(35, 9, 56, 9, "read"))
    stores = [ln for ln in kept.splitlines() if "v_t[" in ln and "= (double)" in ln
              and ln.strip().startswith("if (")]
    # 2 x 2 tiles of 16 x 8 (4 values per lane each), 1 x 2 of 8 x 8 (2 values)
    assert len(stores) == 2 * 2 * 4 + 1 * 2 * 2
    assert "v_t[" not in kept.split("passed in registers")[1].split("TL_DMMA16(")[0]
    # K2 = N1 = 9 in steps (tile column, h): (0, 0), (0, 1), (1, 0); (1, 1) holds no column < 9
    # (rows: 16 + 16 + an 8-row tile for the last 3; the first gemm: one K step in its loop,
    # or two where B, 56 x 9, loads two K steps at a time: k_pairs)
    calls = [ln.strip().split("(")[0] for ln in text.splitlines()
             if ln.strip().startswith("TL_DMMA")]
    assert calls.count("TL_DMMA16") == (2 + 3) * 2 * 2
    assert calls.count("TL_DMMA8") == (2 + 3) * 1 * 2
    plain = [ln for ln in _lower(pair_source(35, 9, 56, 9), k_pairs=False).splitlines()
             if ln.strip().startswith("TL_DMMA16")]
    assert len(plain) == (1 + 3) * 2 * 2
    assert "< 9 ? (double)(tl_acc" in text  # columns of T past N1 enter as zeros


def test_not_fused_where_the_path_is_not_taken():
    plain = pair_source(35, 9, 56, 9)
    for knobs in (dict(gemm_pairs=False), dict(tensor_cores=0), dict(register_tiles=False)):
        assert "passed in registers" not in _lower(plain, **knobs), knobs
    assert "passed in registers" in _lower(plain, tensor_cores=8)
    # T of f32: the registers hold f64 sums that the store would round
    assert "passed in registers" not in _lower(pair_source(35, 9, 56, 9, tt="f32"))
    # more tiles than one warp's block: other warps would need T from memory
    assert "passed in registers" not in _lower(pair_source(64, 64, 8, 64, group=(32, 2)))


def test_the_ader_chain_passes_each_intermediate_in_registers():
    ader = bench("ader")
    source = ader.source(3, 9, "f64")
    fn = _program(source).functions[0]
    insts = fn.body.instructions
    pairs = [chains.gemm_pair(insts, k, chains.bases(fn)) for k, x in enumerate(insts)
             if isinstance(x, tlinterp.lang.ir.Gemm) and x.b.name.startswith("dq")]
    assert len(pairs) == 9 and not any(p.keep for p in pairs)  # tmp: overwritten, then dead
    text = _lower(source)
    assert text.count("the first's output passed in registers") == 9
    assert not re.search(r"v_tmp\d+\[", text)  # tmp neither loaded nor stored
    assert text.count("barrier(") < _lower(source, gemm_pairs=False).count("barrier(")


def test_fuzzer_and_tuner_see_the_knob():
    assert drawn("gemm_pairs", 60) == {True, False}


CASES = [  # (M, N1, K, N2, tail, alpha1, alpha2, beta2, trans_d, group)
    (35, 9, 56, 9, "dead", "1.0", "1.0", "1.0", False, None),
    (35, 9, 56, 9, "read", "1.0", "1.0", "0.0", False, None),
    (20, 9, 35, 9, "overwritten", "-0.5", "2.0", "1.0", False, None),
    (1, 1, 1, 1, "dead", "1.0", "1.0", "1.0", False, None),
    (16, 8, 4, 8, "updated", "1.0", "1.0", "0.5", False, None),
    (9, 5, 7, 13, "stopped", "1.5", "1.0", "-1.0", True, None),
    (16, 8, 3, 5, "read", "1.0", "0.25", "0.0", False, (64, 1)),  # warp 1 idles
    (8, 17, 12, 24, "dead", "1.0", "1.0", "1.0", True, None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])))
@pytest.mark.opencl
@pytest.mark.nvidia  # needs NVIDIA's OpenCL device (skips without it), not pocl
def test_agrees_with_the_interpreter_on_nvidia(case):
    import tlgpu

    most = nvidia_mma_rows()
    M, N1, K, N2, tail, alpha1, alpha2, beta2, trans_d, group = case
    source = pair_source(M, N1, K, N2, tail, alpha1=alpha1, alpha2=alpha2, beta2=beta2,
                         trans_d=trans_d, group=group)
    program = _program(source)
    E = 3
    rng = np.random.default_rng(M * N1 + K)
    DR, DC = (N2, N1) if trans_d else (N1, N2)

    def draw(*shape):
        return np.asfortranarray(rng.standard_normal((*shape, E)))

    args = {"A": draw(M, K), "B": draw(K, N1), "D": draw(DR, DC), "C": draw(M, N2),
            "T": draw(M, N1)}
    want = tlinterp.interp.run(program, args, func="p", groups=E)
    fused = 0
    for rows, max_tile in itertools.product((r for r in (16, 8) if r <= most), (16, 2)):
        cfg = LoweringConfig(tensor_cores=rows, max_tile=max_tile)
        fused += "passed in registers" in lower_program(program, None, cfg).source
        got = tlgpu.run(program, args, func="p", groups=E, device="nvidia", config=cfg)
        for name in ("C", "T"):
            scale = np.abs(want[name]).max() + 1
            np.testing.assert_allclose(got[name], want[name], rtol=0,
                                       atol=1e-12 * scale * K * N1, err_msg=f"{name} {cfg}")
    assert fused >= 1


@pytest.mark.parametrize("N", [1, 2, 3, 4])
@pytest.mark.opencl
@pytest.mark.nvidia  # needs NVIDIA's OpenCL device (skips without it), not pocl
def test_the_ader_chain_agrees_with_the_interpreter_on_nvidia(N):
    import tlgpu

    nvidia_mma_rows()
    ader = bench("ader")
    program = _program(ader.source(N, 9, "f64"))
    E = 4
    args = ader.arguments(N, 9, E, "f64", np.random.default_rng(N))
    want = tlinterp.interp.run(program, args, func="ader", groups=E)
    for knobs in (dict(), dict(tensor_cores=8), dict(unroll_mma=1), dict(gemm_pairs=False)):
        cfg = LoweringConfig(**knobs)
        got = tlgpu.run(program, args, func="ader", groups=E, device="nvidia", config=cfg)
        np.testing.assert_allclose(got["I"], want["I"], rtol=1e-12, atol=1e-12,
                                   err_msg=str(knobs))


# between the pair: a view of B, a scalar, the second's output as a fresh alloca (copied out)
BETWEEN = """
func @p(%A: memref<f64x{M}x{K}x?>, %B: memref<f64x{K}x{N1}x?>, %D: memref<f64x{N1}x{N2}x?>,
        %C: memref<f64x{M}x{N2}x?>, %s: f64) {attr} {{
  %e = group_id
  %a = subview %A[:, :, %e] : memref<f64x{M}x{K}x?>
  %b = subview %B[:, :, %e] : memref<f64x{K}x{N1}x?>
  %c = subview %C[:, :, %e] : memref<f64x{M}x{N2}x?>
  %t = alloca -> memref<f64x{M}x{N1}>
  gemm.n.n 1.0, %a, %b, 0.0, %t : f64, memref<f64x{M}x{K}>, memref<f64x{K}x{N1}>, \
f64, memref<f64x{M}x{N1}>
{between}  gemm.n.n %s2, %t, %d, 0.0, %u : f64, memref<f64x{M}x{N1}>, memref<f64x{N1}x{N2}>, \
f64, memref<f64x{M}x{N2}>
  axpby.n 1.0, %u, 1.0, %c : f64, memref<f64x{M}x{N2}>, f64, memref<f64x{M}x{N2}>
}}
"""
PURE = """  %d = subview %D[:, :, %e] : memref<f64x{N1}x{N2}x?>
  %s2 = arith.mul %s, %s : f64
  %u = alloca -> memref<f64x{M}x{N2}>
"""


def between_source(M, N1, K, N2, extra: str = "", group=None) -> str:
    fields = dict(M=M, K=K, N1=N1, N2=N2)
    return BETWEEN.format(**fields, between=PURE.format(**fields) + extra,
                          attr=f"work_group_size({group[0]},{group[1]})" if group else "")


def test_views_scalars_and_allocas_between_the_two_gemms():
    source = between_source(20, 9, 35, 9)
    pair = _pair(source)
    assert pair is not None and not pair.keep
    assert [type(i).__name__ for i in pair.between] == ["Subview", "Arith", "Alloca"]
    # an instruction that reads or writes memory in between: no pair
    load = "  %x = load %b[0, 0] : memref<f64x35x9,strided<1,35>>\n"
    assert _pair(between_source(20, 9, 35, 9, load)) is None
    store = "  store %s, %c[0, 0] : memref<f64x20x9,strided<1,20>>\n"
    assert _pair(between_source(20, 9, 35, 9, store)) is None
    assert _pair(between_source(20, 9, 35, 9, "  barrier\n")) is None

    text = _lower(source)
    fused = text.split("passed in registers")
    assert len(fused) == 2
    # the instructions in between come first, so the pair's operands exist
    for name in ("v_d =", "v_s2 =", "v_u ="):
        assert name in fused[0], name
    # the second gemm's C lines carry its own span (OpenCL build errors point at it)
    second = source.splitlines().index(next(ln for ln in source.splitlines()
                                            if "gemm.n.n %s2" in ln)) + 1
    assert f"// tl:{second}.3" in fused[1]
    # not fused: the same instructions, the first gemm after them, then the second
    plain = _lower(source, tensor_cores=0)
    assert "passed in registers" not in plain
    assert plain.index("v_u =") < plain.index("v_t[")


@pytest.mark.opencl
def test_a_pair_with_instructions_between_runs_on_pocl_as_two_gemms():
    """Where the pair does not fuse (no tensor cores) the in-between instructions move ahead
    of the first gemm: same results."""
    import tlgpu

    source = between_source(13, 5, 7, 6)
    program = _program(source)
    rng = np.random.default_rng(5)
    E = 3
    args = {"A": np.asfortranarray(rng.standard_normal((13, 7, E))),
            "B": np.asfortranarray(rng.standard_normal((7, 5, E))),
            "D": np.asfortranarray(rng.standard_normal((5, 6, E))),
            "C": np.asfortranarray(rng.standard_normal((13, 6, E))), "s": np.float64(1.5)}
    want = tlinterp.interp.run(program, args, func="p", groups=E)
    got = tlgpu.run(program, args, func="p", groups=E, device="pocl")
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [(20, 9, 35, 9, None), (9, 17, 4, 3, None),
                                  (13, 5, 7, 6, (64, 1)), (3, 2, 1, 5, None)], ids=str)
@pytest.mark.opencl
@pytest.mark.nvidia  # needs NVIDIA's OpenCL device (skips without it), not pocl
def test_a_pair_with_instructions_between_agrees_with_the_interpreter_on_nvidia(case):
    import tlgpu

    nvidia_mma_rows()
    M, N1, K, N2, group = case
    program = _program(between_source(M, N1, K, N2, group=group))
    rng = np.random.default_rng(M + K)
    E = 3
    args = {"A": np.asfortranarray(rng.standard_normal((M, K, E))),
            "B": np.asfortranarray(rng.standard_normal((K, N1, E))),
            "D": np.asfortranarray(rng.standard_normal((N1, N2, E))),
            "C": np.asfortranarray(rng.standard_normal((M, N2, E))), "s": np.float64(-0.75)}
    want = tlinterp.interp.run(program, args, func="p", groups=E)
    cfg = LoweringConfig(tensor_cores=16)
    assert "passed in registers" in lower_program(program, None, cfg).source
    got = tlgpu.run(program, args, func="p", groups=E, device="nvidia", config=cfg)
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-12, atol=1e-12 * K * N1)
