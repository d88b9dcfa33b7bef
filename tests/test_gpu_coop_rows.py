"""The row-owning path of coopmatrix mul_add and row reduce (LoweringConfig.coop_rows,
tlgpu/lowering/v04/coopmatrix.py): each lane computes its own rows from its own A
components, with B read straight from memory when it is a load of the same region with
nothing written in between, else from local memory. Its sums must be the reference's, in the
reference's order: inputs of mixed magnitudes make every reordering show, and the results are
compared bit for bit with the interpreter, with the path on and off."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlgpu import LoweringConfig
from tlinterp.front.pipeline import lowerable, parse
from tlinterp.interp import run as interp_run
from tlinterp.interp.coopmatrix import mul_add_bound

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
      "i8": np.int8, "i32": np.int32, "c32": np.complex64}
M, K, N, S = 32, 8, 12, 16  # two row blocks per lane; B's 12 columns are not a power of two

# B: "load" right before the mul_add (read from memory), "value" a computed matrix (local
# memory), "stored" a load followed by a store into B's memref (must use the loaded values)
B_SOURCE = {
    "load": "    %b = cooperative_matrix_load %B[%c0, %c0] : {mb}",
    "value": "    %b0 = cooperative_matrix_load %B[%c0, %c0] : {mb}\n"
             "    %b = cooperative_matrix_scale %two, %b0 : {mb}",
    "stored": "    %b = cooperative_matrix_load %B[%c0, %c0] : {mb}\n"
              "    %junk = cooperative_matrix_construct %two : {mb}\n"
              "    cooperative_matrix_store %junk, %B[%c0, %c0]",
}


def kernel(ta: str, tb: str, tc: str, td: str, source: str) -> str:
    ma = f"coopmatrix<{ta} x {M} x {K}, matrix_a>"
    mb = f"coopmatrix<{tb} x {K} x {N}, matrix_b>"
    mc = f"coopmatrix<{tc} x {M} x {N}, matrix_acc>"
    md = f"coopmatrix<{td} x {M} x {N}, matrix_acc>"
    two = "2" if tb.startswith("i") else "[2.0, 0.0]" if tb.startswith("c") else "2.0"
    col = f"coopmatrix<{td} x {M} x 1, matrix_acc>"
    reduce = ("" if td.startswith("c") else
              f"    %r = cooperative_matrix_reduce_add.row %d : {col}\n"
              "    cooperative_matrix_store %r, %R[%c0, %c0]\n"
              f"    %x = cooperative_matrix_reduce_max.row %d : {col}\n"
              "    cooperative_matrix_store %x, %R[%c0, %c1]\n")
    return (f"func @k(%A: memref<{ta} x {M} x {K}>, %B: memref<{tb} x {K} x {N}>, "
            f"%C: memref<{tc} x {M} x {N}>, %D: memref<{td} x {M} x {N}>, "
            f"%R: memref<{td} x {M} x 2>) "
            f"attributes{{subgroup_size={S}, work_group_size=[{S}, 1]}} {{\n"
            "  %c0 = constant 0 : index\n  %c1 = constant 1 : index\n"
            f"  %two = constant {two} : {tb}\n"
            "  parallel {\n"
            f"    %a = cooperative_matrix_load %A[%c0, %c0] : {ma}\n"
            f"    %c = cooperative_matrix_load %C[%c0, %c0] : {mc}\n"
            + B_SOURCE[source].format(mb=mb) + "\n"
            f"    %d = cooperative_matrix_mul_add %a, %b, %c : {md}\n"
            "    cooperative_matrix_store %d, %D[%c0, %c0]\n" + reduce + "  }\n}\n")


def args(ta, tb, tc, td) -> dict:
    rng = np.random.default_rng(11)

    def m(t, *shape):
        if t.startswith("i"):
            return rng.integers(-100, 100, shape).astype(NP[t])  # products and sums wrap in i8
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, shape)  # orders show
        if t.startswith("c"):
            x = x + 1j * rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, shape)
        return x.astype(NP[t])

    a = {"A": m(ta, M, K), "B": m(tb, K, N), "C": m(tc, M, N),
         "D": np.zeros((M, N), NP[td]), "R": np.zeros((M, 2), NP[td])}
    if not ta.startswith(("i", "c")):
        a["A"][3, 2] = np.nan  # a NaN row
    return a


TYPES = [("f32", "f32", "f32", "f32"), ("f16", "f16", "f32", "f32"),
         ("bf16", "bf16", "f32", "f32"), ("f16", "f16", "f32", "f16"),
         ("f64", "f64", "f64", "f64"), ("f32", "f32", "f64", "f64"),
         ("i8", "i8", "i32", "i32"), ("c32", "c32", "c32", "c32")]


FAST = {"f16", "bf16", "f32"}  # f32 C and D from these: the interpreter's product is BLAS's


def run(src: str, a: dict, device: str, rows: bool) -> dict:
    p = tlinterp.check(parse(src, lang="v0.4"))
    return tlgpu.run(p, {k: v.copy() for k, v in a.items()}, device=device,
                     config=LoweringConfig(coop_rows=rows))


def bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype.kind in "iub" else x.view(f"u{x.itemsize}")


# every type pair with B loaded in the region; the two other B sources with one float and one
# integer pair (their B entries come through the same code as the general path's)
CASES = [(t, "load") for t in TYPES] + [(t, s) for s in ("value", "stored")
                                        for t in (TYPES[0], TYPES[6])]


@pytest.mark.parametrize("types,source", CASES,
                         ids=[f"{s}-{'-'.join(t)}" for t, s in CASES])
def test_rows_path_is_the_reference_order(types, source):
    """Both paths sum each entry in the reference's order: equal bit for bit to each other,
    and to the interpreter, whose f32-from-f16/bf16/f32 product is one BLAS product (another
    order: there within the bound of docs/semantics.md, twice mul_add_bound; so for complex
    products)."""
    ta, tb, tc, td = types
    src, a = kernel(*types, source), args(*types)
    p = tlinterp.check(parse(src, lang="v0.4"))
    ref = interp_run(p, {k: v.copy() for k, v in a.items()})
    # the interpreter's f32-from-f16/bf16/f32 and complex products are NumPy matmuls
    fast = (tc == td == "f32" and ta in FAST and tb in FAST) or tc.startswith("c")
    # pocl moves values between lanes through local memory, Intel through its sub-groups
    for device in ("pocl", "intel") if source == "load" else ("pocl",):
        dev = require_device(device)
        new, old = run(src, a, dev, True), run(src, a, dev, False)
        for k in ref:
            assert (bits(new[k]) == bits(old[k])).all(), (device, k)
        if not fast:
            for k in ref:
                assert (bits(new[k]) == bits(ref[k])).all(), (device, k)
            continue
        b = a["B"] * 2 if source == "value" else a["B"]
        bound = 2 * mul_add_bound(a["A"], b, a["C"], tc, td)
        wide = np.complex128 if tc.startswith("c") else np.float64
        got, want = new["D"].astype(wide), ref["D"].astype(wide)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all(), device
        assert (np.abs(got - want)[~nan] <= bound[~nan]).all(), device


def _emitted(src: str, **config) -> str:
    program = lowerable(tlinterp.check(parse(src, lang="v0.4")))
    return tlgpu.lower(program, config=LoweringConfig(**config))


def test_b_is_read_from_memory_only_when_nothing_was_written_since_its_load():
    """The "load" kernel moves nothing through local memory; "value" and "stored" write B
    there (a store between load and mul_add means the loaded values, not the memory's)."""
    t = ("f32",) * 4
    assert "local ulong tl_cm" not in _emitted(kernel(*t, "load"), subgroups="local")
    for source in ("value", "stored"):
        assert "local ulong tl_cm" in _emitted(kernel(*t, source), subgroups="local"), source
    # the general path moves A and B for every mul_add
    assert "local ulong tl_cm" in _emitted(kernel(*t, "load"), subgroups="local",
                                           coop_rows=False)


def test_nvidia_unrolls_the_component_loops():
    """On NVIDIA the component loops are unrolled (constant indices keep the lane's struct
    in registers); CPUs keep loops."""
    src = kernel(*("f32",) * 4, "load")
    assert "#pragma unroll" in _emitted(src, subgroups="nvidia")
    assert "#pragma unroll" not in _emitted(src, subgroups="local")
