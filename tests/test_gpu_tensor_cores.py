"""The FP64 tensor-core gemm path (tlgpu/lowering/mma.py, knob `tensor_cores`): when it is taken,
what it emits, that every other device stays portable, and, on an NVIDIA device of compute
capability 8.0 or later, that it agrees with the interpreter on edge shapes (the device tests
skip without NVIDIA's OpenCL; CI has pocl only)."""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import numpy as np
import pytest
from drawn import drawn
from nvidia import nvidia, nvidia_mma_rows

import tlinterp
from tlgpu import LoweringConfig
from tlgpu.lowering.program import lower_program
from tlgpu.runtime.launch import fp64_mma_rows

GEMM = """
func @g(%A: memref<{ta}x{am}x{ak}x?>, %B: memref<{tb}x{bk}x{bn}x?>, %C: memref<f64x{M}x{N}x?>)
    {attr} {{
  %e = group_id
  %a = subview %A[:, :, %e] : memref<{ta}x{am}x{ak}x?>
  %b = subview %B[:, :, %e] : memref<{tb}x{bk}x{bn}x?>
  %c = subview %C[:, :, %e] : memref<f64x{M}x{N}x?>
  gemm{mode} {alpha}, %a, %b, {beta}, %c : f64, memref<{ta}x{am}x{ak}>, \
memref<{tb}x{bk}x{bn}>, f64, memref<f64x{M}x{N}>
}}
"""


def gemm_source(M, N, K, ta="f64", tb="f64", trans=(False, False), alpha="1.5", beta="0.5",
                atomic=False, group=None) -> str:
    am, ak = (K, M) if trans[0] else (M, K)
    bk, bn = (N, K) if trans[1] else (K, N)
    mode = (".t" if trans[0] else ".n") + (".t" if trans[1] else ".n")
    return GEMM.format(ta=ta, tb=tb, am=am, ak=ak, bk=bk, bn=bn, M=M, N=N, mode=mode,
                       alpha=alpha, beta=beta,
                       attr=f"work_group_size({group[0]},{group[1]})" if group else "",
                       ).replace(f"gemm{mode}", f"gemm{mode}" + (".atomic" if atomic else ""))


def _lower(source: str, **knobs) -> str:
    program = tlinterp.check(tlinterp.parse(source, "g.tl"))
    return lower_program(program, None, LoweringConfig(**knobs)).source


def test_taken_for_static_f64_gemms_in_whole_warps_only():
    for rows in (8, 16):
        macro = f"TL_DMMA{rows}("
        assert macro in _lower(gemm_source(35, 9, 56), tensor_cores=rows)
        assert macro in _lower(gemm_source(35, 9, 56, ta="f32", tb="i32"),
                               tensor_cores=rows)  # f64 arithmetic on converted operands
        assert macro in _lower(gemm_source(40, 40, 40, group=(16, 4)), tensor_cores=rows)
        # not for f32 arithmetic, nor a work-group that is not whole warps
        f32 = gemm_source(35, 9, 56).replace("f64", "f32")
        assert "TL_DMMA" not in _lower(f32, tensor_cores=rows)
        assert "TL_DMMA" not in _lower(gemm_source(35, 9, 56, group=(8, 2)), tensor_cores=rows)
    # off: no device said it has them (the default without a device), or 0
    assert "TL_DMMA" not in _lower(gemm_source(35, 9, 56))
    assert "TL_DMMA" not in _lower(gemm_source(35, 9, 56), tensor_cores=0)


def test_staged_operands_are_laid_out_for_the_fragments():
    # A half-warp reads 4 rows (or columns) by 4 K steps of a fragment: with leading
    # dimensions of 4 more than a multiple of 16 elements its 16 lanes hit 16 banks; the
    # register-tile path keeps A packed and B's odd
    src = gemm_source(32, 32, 32, group=(16, 8))
    mma = _lower(src, tensor_cores=16)
    assert "tl_As1 + 1152;" in mma  # 36 x 32
    assert re.search(r"tl_As1\[\(tl_row\d+_0_0\) \+ \(tl_k\d+\) \* 36\]", mma)
    assert re.search(r"tl_Bs2\[\(tl_k\d+\) \+ \(tl_col\d+_0\) \* 36\]", mma)
    tiles = _lower(src, tensor_cores=0)
    assert "tl_As1 + 1024;" in tiles and "* 33]" in tiles and "* 36]" not in tiles
    odd = _lower(gemm_source(33, 40, 35, trans=(True, True), group=(32, 1)), tensor_cores=16)
    assert "tl_As1 + 1260;" in odd  # 36 x 35


def test_k_remainder_is_zeroed_and_edges_are_guarded():
    # (plain steps of 4: k_pairs would take K 0..7 in one block of 8, below)
    text = _lower(gemm_source(35, 9, 10), tensor_cores=16, narrow_columns=0, k_pairs=False)
    assert "< 8; " in text  # the whole K steps
    assert "< 10 ? (double)" in text  # the last, partial step loads zeros past K
    assert " < 35 && " in text and " < 9)" in text  # stores past M and N are guarded
    # 35 rows: two 16-row tiles (each lane loads rows g and g + 8 of each) and, for the last
    # 3 rows, an 8-row tile (m8n8k4: one load of A per step, not two)
    def calls(macro):
        return [ln for ln in text.splitlines() if ln.strip().startswith(macro)]
    assert len(calls("TL_DMMA16(")) == 2 * 2 * 2  # (whole and partial step) x 2 x 2 tiles
    assert len(calls("TL_DMMA8(")) == 2 * 1 * 2
    assert "TL_DMMA8(" in _lower(gemm_source(40, 9, 8), tensor_cores=16)  # 16 + 16 + 8
    assert "TL_DMMA8(" not in _lower(gemm_source(48, 9, 8), tensor_cores=16)
    assert "TL_DMMA8(" not in _lower(gemm_source(25, 9, 8), tensor_cores=16)  # 9 rows left
    full = _lower(gemm_source(32, 8, 8), tensor_cores=16)
    assert "? (double)" not in full and "< 32 &&" not in full  # whole tiles: no guard
    assert "< 35 &&" in _lower(gemm_source(35, 9, 8), tensor_cores=8)


def test_a_narrow_last_tile_column_runs_on_the_fp64_units():
    def lines(text, start):
        return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(start)]

    # N = 9: one tile column of 8 on the tensor cores, column 8 by fma() in each lane
    text = _lower(gemm_source(35, 9, 10), tensor_cores=16, k_pairs=False)
    assert len(lines(text, "TL_DMMA16(")) == 2 * 2 * 1 and len(lines(text, "TL_DMMA8(")) == 2
    fmas = lines(text, "tl_acc")
    assert len([f for f in fmas if "= fma(" in f]) == 2 * 5  # (whole, partial step) x 5 rows
    # the 4 lanes of a row add up their sums, then lane 0 stores the total
    assert len([f for f in fmas if "+= tl_dshfl_xor(" in f]) == 5 * 2
    assert "shfl.sync.bfly.b32" in text and "+ (8) * 10]" in text  # B[k][8], the lane's k
    stores = [ln for ln in text.splitlines() if "& 3) == 0)" in ln]
    assert len(stores) == 5 and all("+ (8) * 35]" in ln for ln in stores)
    # the knob: off, wider (lane j % 4 stores column j), and a column tile of 8 (N = 16)
    assert "fma(" not in _lower(gemm_source(35, 9, 10), tensor_cores=16, narrow_columns=0)
    assert "fma(" not in _lower(gemm_source(35, 10, 10), tensor_cores=16)
    wide = _lower(gemm_source(16, 16, 4), tensor_cores=16, narrow_columns=8)
    assert "TL_DMMA16(" in wide and "& 3) == 3)" in wide and "+ (15) * 16]" in wide
    # N <= 8 all on the FP64 units; not in a loop of blocks along N (its columns are not static)
    assert "TL_DMMA16(" not in _lower(gemm_source(40, 1, 7), tensor_cores=16).split("void")[-1]
    assert "fma(" not in _lower(gemm_source(100, 70, 6, group=(16, 4)), tensor_cores=16,
                                narrow_columns=8)
    # nor in a fused pair: its accumulators feed the second gemm as they are; by default only
    # in a function with one gemm (in a chain, the freed registers cost L1 hits)
    pair = tlinterp.check(tlinterp.parse(PAIR, "p.tl"))

    def narrowed(**knobs):
        return "fma(" in lower_program(pair, None, LoweringConfig(tensor_cores=16, **knobs)).source
    assert not narrowed() and not narrowed(narrow_columns=1)
    assert not narrowed(gemm_pairs=False) and narrowed(gemm_pairs=False, narrow_columns=1)


def test_operands_contiguous_along_k_load_two_k_steps_at_once():
    vec = "(*(global const double2*)"

    def loads(text):
        return text.count(vec)

    # B (56 x 9, leading dimension 56) is contiguous along K: lane q takes K indices 8 t + 2 q
    # and 8 t + 2 q + 1 and loads both B values with one double2, per tile column (and for
    # the narrow column); A (column-major) keeps two scalar loads per row half
    text = _lower(gemm_source(35, 9, 56), tensor_cores=16, narrow_columns=0)
    assert loads(text) == 2 and "tl_kb" in text and "+= 8)" in text
    assert re.search(r"const int (tl_k\d+) = (tl_kb\d+) \+ 2 \* \(tl_lane\d+ & 3\);", text)
    assert re.search(r"v_a\[\(tl_row\d+_0_0\) \+ \(tl_k\d+ \+ 1\) \* 35\]", text)
    assert loads(_lower(gemm_source(35, 9, 56), tensor_cores=16)) == 2  # one tile + narrow
    # op(A) = A^T with A K x M: A is contiguous along K too (two row halves of one m16 tile)
    assert loads(_lower(gemm_source(16, 8, 16, trans=(True, False)), tensor_cores=16)) == 3
    # K = 12: one block of 8, then one plain step of 4; K = 14: and the zeroed partial step
    twelve = _lower(gemm_source(16, 8, 12), tensor_cores=16)
    assert "< 8; tl_kb" in twelve and re.search(r"const int tl_k\d+ = 8 \+ \(tl_lane", twelve)
    assert "< 14 ? (double)" in _lower(gemm_source(16, 8, 14), tensor_cores=16)
    # not: op(B) = B^T (strided along K), an odd leading dimension, K < 8, the knob off
    assert "tl_kb" not in _lower(gemm_source(16, 8, 16, trans=(False, True)), tensor_cores=16)
    assert loads(_lower(gemm_source(16, 8, 15, trans=(True, False)), tensor_cores=16)) == 0
    assert "tl_kb" not in _lower(gemm_source(16, 8, 4), tensor_cores=16)
    assert loads(_lower(gemm_source(35, 9, 56), tensor_cores=16, k_pairs=False)) == 0
    assert loads(_lower(gemm_source(35, 9, 56), tensor_cores=0)) == 0
    # a view must provably start 16-byte aligned: a row offset of 2 keeps it, 1 does not
    for offset, want in ((2, 1), (1, 0)):
        src = gemm_source(16, 8, 16).replace(
            "%b = subview %B[:, :, %e] : memref<f64x16x8x?>",
            f"%b = subview %B[{offset}:16, :, %e] : memref<f64x18x8x?>").replace(
            "%B: memref<f64x16x8x?>", "%B: memref<f64x18x8x?>").replace(
            "memref<f64x16x8>, f64", "memref<f64x16x8,strided<1,18>>, f64")
        assert loads(_lower(src, tensor_cores=16)) == want, offset


@pytest.mark.opencl
@pytest.mark.nvidia  # needs NVIDIA's OpenCL device (skips without it), not pocl
def test_the_shuffle_builds_without_optimisation_on_nvidia():
    # a known-bug workaround builds some kernels with -cl-opt-disable
    # (tlgpu/runtime/workarounds.py):
    # the helper must then still link (a plain `inline` function is an external reference)
    import pyopencl as cl

    nvidia_mma_rows()
    source = _lower(gemm_source(35, 9, 10), tensor_cores=16, group_pointers_as_ulong=True)
    assert "tl_dshfl_xor(" in source
    dev = nvidia()
    cl.Program(dev.context, source).build(options=["-cl-opt-disable"])


PAIR = """
func @p(%K: memref<f64x35x56>, %Q: memref<f64x56x9x?>, %A: memref<f64x9x9x?>,
        %D: memref<f64x35x9x?>) {
  %e = group_id
  %q = subview %Q[:, :, %e] : memref<f64x56x9x?>
  %a = subview %A[:, :, %e] : memref<f64x9x9x?>
  %d = subview %D[:, :, %e] : memref<f64x35x9x?>
  %t = alloca -> memref<f64x35x9>
  gemm.n.n 1.0, %K, %q, 0.0, %t : f64, memref<f64x35x56>, memref<f64x56x9>, f64, memref<f64x35x9>
  gemm.n.n 1.0, %t, %a, 0.0, %d : f64, memref<f64x35x9>, memref<f64x9x9>, f64, memref<f64x35x9>
}
"""


def _device(platform, version="", extensions="cl_khr_fp64", cc=None):
    d = SimpleNamespace(platform=SimpleNamespace(name=platform, version=version),
                        extensions=extensions)
    if cc is not None:
        d.compute_capability_major_nv = cc
    return d


def test_only_nvidia_devices_with_fp64_mma_have_them():
    assert fp64_mma_rows(_device("NVIDIA CUDA", cc=9)) == 16
    assert fp64_mma_rows(_device("NVIDIA CUDA", cc=8)) == 8
    assert fp64_mma_rows(_device("NVIDIA CUDA", cc=7)) == 0
    assert fp64_mma_rows(_device("NVIDIA CUDA")) == 0  # cannot tell: portable
    assert fp64_mma_rows(_device("NVIDIA CUDA", extensions="", cc=9)) == 0
    assert fp64_mma_rows(_device("Portable Computing Language", cc=9)) == 0


def test_knob_parses_and_the_fuzzer_may_force_it():
    from tlinterp.lang.diagnostics import BackendError

    assert LoweringConfig.from_overrides(["tensor_cores=auto"]).tensor_cores is None
    assert LoweringConfig.from_overrides(["tensor_cores=8"]).tensor_cores == 8
    with pytest.raises(BackendError, match="0 or 8 or 16 or auto"):
        LoweringConfig.from_overrides(["tensor_cores=7"])
    assert LoweringConfig().for_device(gpu=True).tensor_cores == 0
    assert drawn("tensor_cores", 200) == {None, 0, 8, 16}
    assert LoweringConfig.from_overrides(["narrow_columns=0"]).narrow_columns == 0
    assert LoweringConfig.from_overrides(["narrow_columns=auto"]).narrow_columns is None
    with pytest.raises(BackendError, match="0 or 1 or 2 or 4 or 8 or auto"):
        LoweringConfig.from_overrides(["narrow_columns=3"])
    assert drawn("narrow_columns", 200) == {None, 0, 1, 2, 4, 8}


@pytest.mark.opencl
def test_pocl_turns_a_forced_knob_off():
    import tlgpu
    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.launch import device_config

    cfg = device_config(handle("pocl"), LoweringConfig(tensor_cores=16))
    assert cfg.tensor_cores == 0
    source = gemm_source(8, 8, 4)
    program = tlinterp.check(tlinterp.parse(source, "g.tl"))
    args = _args(8, 8, 4, np.float64, np.float64, (False, False), 2)
    got = tlgpu.run(program, args, func="g", groups=2, device="pocl",
                    config=LoweringConfig(tensor_cores=16))
    want = tlinterp.interp.run(program, args, func="g", groups=2)
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-13)


def _args(M, N, K, ta, tb, trans, E, seed=0):
    rng = np.random.default_rng(seed)
    a_shape = (K, M) if trans[0] else (M, K)
    b_shape = (N, K) if trans[1] else (K, N)

    def draw(shape, t):
        x = rng.standard_normal((*shape, E)) * 4
        return np.asfortranarray(x.astype(t) if np.dtype(t).kind == "f" else x.round().astype(t))

    return {"A": draw(a_shape, ta), "B": draw(b_shape, tb),
            "C": np.asfortranarray(rng.standard_normal((M, N, E)))}


CASES = [  # (M, N, K, operand types, transposes, alpha, beta, atomic, work-group)
    (35, 9, 56, "f64", "f64", (False, False), "1.0", "0.0", False, None),
    (1, 9, 4, "f64", "f64", (False, False), "1.0", "1.0", False, None),
    (8, 8, 4, "f64", "f64", (False, False), "2.0", "0.0", False, None),
    (9, 17, 5, "f64", "f64", (True, False), "-1.5", "0.5", False, None),
    (33, 3, 1, "f64", "f64", (False, True), "1.0", "1.0", False, None),
    (20, 9, 35, "f32", "i32", (True, True), "0.25", "2.0", False, None),
    (64, 64, 64, "f64", "f64", (False, False), "1.0", "1.0", False, (32, 2)),  # staged, 2 warps
    (40, 24, 13, "f64", "f64", (False, False), "1.0", "-1.0", False, (64, 1)),
    (17, 31, 7, "f64", "f64", (False, False), "1.0", "1.0", True, (32, 1)),
    (100, 70, 6, "f64", "f64", (False, True), "1.0", "0.0", False, (16, 4)),  # loop of blocks
    # staged, leading dimensions padded to 36 for the fragments (33 rows, K of 35)
    (33, 40, 35, "f64", "f64", (True, True), "1.0", "0.5", False, (32, 1)),
    (48, 32, 20, "f64", "f64", (False, True), "-1.0", "1.0", False, (32, 4)),
    # narrow last tile columns (knob narrow_columns): 2 and 4 columns, N = 1, atomic stores
    (35, 10, 56, "f64", "f64", (False, True), "1.0", "0.5", False, (32, 1)),
    (16, 12, 9, "f64", "f64", (True, False), "-2.0", "1.0", False, None),
    (24, 1, 7, "f64", "f64", (False, False), "1.0", "1.0", False, (32, 1)),
    (40, 9, 13, "f64", "f64", (False, False), "0.5", "1.0", True, (32, 1)),
    # operands contiguous along K loaded two K steps at a time (knob k_pairs): B; A^T and B
    # with a plain step of 4 after the blocks of 8; with the zeroed partial step; K = 8
    (35, 9, 56, "f64", "f64", (False, False), "1.0", "0.5", True, (32, 1)),
    (24, 10, 12, "f64", "f64", (True, False), "-1.0", "1.0", False, None),
    (12, 16, 30, "f64", "f64", (True, False), "1.0", "0.0", False, (32, 1)),
    (40, 8, 8, "f64", "f64", (False, False), "2.0", "0.5", False, (64, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:3])))
@pytest.mark.opencl
@pytest.mark.nvidia  # needs NVIDIA's OpenCL device (skips without it), not pocl
def test_agrees_with_the_interpreter_on_nvidia(case):
    import tlgpu

    most = nvidia_mma_rows()
    M, N, K, ta, tb, trans, alpha, beta, atomic, group = case
    source = gemm_source(M, N, K, ta, tb, trans, alpha, beta, atomic, group)
    program = tlinterp.check(tlinterp.parse(source, "g.tl"))
    dt = {"f64": np.float64, "f32": np.float32, "i32": np.int32}
    E = 3
    args = _args(M, N, K, dt[ta], dt[tb], trans, E)
    want = tlinterp.interp.run(program, args, func="g", groups=E)
    taken = 0
    knobs = [(16, None, True), (2, 1, True), (16, 0, True), (16, 8, True), (16, None, False)]
    for rows, (max_tile, narrow, pairs) in itertools.product(
            (r for r in (16, 8, 0) if r <= most), knobs):  # (max_tile, narrow_columns, k_pairs)
        cfg = LoweringConfig(tensor_cores=rows, max_tile=max_tile, narrow_columns=narrow,
                             k_pairs=pairs)
        low = lower_program(program, None, cfg)
        whole_warps = low.kernels["g"][1].size % 32 == 0  # (small tiles: a wider group)
        assert ("TL_DMMA" in low.source or "tl_dshfl_xor(" in low.source) \
            == (rows > 0 and whole_warps)
        taken += "TL_DMMA" in low.source
        got = tlgpu.run(program, args, func="g", groups=E, device="nvidia", config=cfg)
        scale = np.abs(want["C"]).max() + 1
        np.testing.assert_allclose(got["C"], want["C"], rtol=0, atol=1e-12 * scale * K,
                                   err_msg=f"tensor_cores={rows} {max_tile=} {narrow=} {pairs=}")
    assert taken >= 2
