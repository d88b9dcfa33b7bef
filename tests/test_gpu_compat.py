"""The original compiler's constructs on pocl against the interpreter: order-0 axpby (plain
and atomic, float and integer), names reused by sibling regions (allocas included),
`if %c -> ()`, and the examples/ recipes against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from test_compat import AXPBY0, SIBLINGS, axpby0_args

import tlgpu
from tlinterp.interp import run as interp_run

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)


def same(src: str, args: dict, groups: int) -> None:
    want = interp_run(src, args, groups=groups)
    got = tlgpu.run(src, args, groups=groups)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_order0_axpby_with_atomics():
    same(AXPBY0, axpby0_args(), groups=6)


@pytest.mark.parametrize("ragged", [True, False])
def test_sibling_names(ragged):
    A = np.arange(48, dtype=np.float32).reshape(6, 8)
    same(SIBLINGS, {"A": A, "m": np.int64(1), "r": np.int32(ragged),
                    "o": np.zeros(8, np.float32)}, groups=1)


SIBLING_ALLOCAS = """func @k(%a: memref<f32x4x?>, %r: i32) {
  %g = group_id
  %c = cmp.ne %r, 0 : i32
  %x = subview %a[:, %g] : memref<f32x4x?>
  if %c -> () {
    %t = alloca -> memref<f32x4>
    axpby.n 2.0, %x, 0.0, %t : f32, memref<f32x4,strided<1>>, f32, memref<f32x4>
    axpby.n 1.0, %t, 1.0, %x : f32, memref<f32x4>, f32, memref<f32x4,strided<1>>
  } else {
    %t = alloca -> memref<f32x2x4>
    %u = subview %t[1, :] : memref<f32x2x4>
    axpby.n 4.0, %x, 0.0, %u : f32, memref<f32x4,strided<1>>, f32, memref<f32x4,strided<2>>
    axpby.n 1.0, %u, 0.0, %x : f32, memref<f32x4,strided<2>>, f32, memref<f32x4,strided<1>>
  }
}
"""


@pytest.mark.parametrize("cond", [True, False])
def test_sibling_allocas_with_one_name(cond):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    args = {"a": a, "r": np.int32(cond)}
    same(SIBLING_ALLOCAS, args, groups=3)
    np.testing.assert_array_equal(interp_run(SIBLING_ALLOCAS, args, groups=3)["a"],
                                  a * (3 if cond else 4))


@pytest.mark.parametrize("m", [150, 40])
def test_tall_and_skinny_example(m):
    from test_examples import module, program

    gen = module("tall_and_skinny_args")
    args = gen.make_args(np.random.default_rng(m), m=m)
    out = tlgpu.run(program("tall_and_skinny"), args, groups=gen.groups_for(m))
    np.testing.assert_allclose(out["C"], gen.reference(args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beta0", [False, True])
def test_small_batched_gemm_example(beta0):
    from test_examples import module, program

    gen = module("small_gemm_args")
    args = gen.make_args(np.random.default_rng(3), batch=5, beta0=beta0)
    out = tlgpu.run(program("small_gemm"), args, func="gemm_beta0" if beta0 else "gemm",
                    groups=5)
    np.testing.assert_allclose(out["C"], gen.reference(args), rtol=1e-5, atol=1e-5)
