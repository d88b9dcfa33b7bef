"""tlgpu/runtime/workarounds.py: which kernels and devices a known device bug's workaround covers,
and that the runtime applies it per kernel (reproducers: test_gpu_pocl_barrier_loop.py)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from benches import bench

import tlinterp
from tlgpu.lowering.program import lower_program
from tlgpu.runtime import workarounds as W

POCL = W.KNOWN[0]

# barrier-needing steps at top level and in one loop, in a branch, in a loop nest, and a
# collective (a loop over the work-items) in a loop
TWO = """
func @flat(%w: memref<i64x4>, %n: index) {
  %x = load %w[0] : memref<i64x4>
  store %x, %w[1] : memref<i64x4>
  for %i = 0, %n {
    %y = load %w[2] : memref<i64x4>
    store %y, %w[3] : memref<i64x4>
  }
}
func @branch(%w: memref<i64x4>, %n: index) {
  %g = group_id
  %c = cmp.eq %g, 0 : index
  if %c {
    barrier
    store 1, %w[0] : memref<i64x4>
  }
}
func @nest(%w: memref<i64x4>, %n: index) {
  for %i = 0, %n {
    for %j = 0, %n {
      %y = load %w[2] : memref<i64x4>
      store %y, %w[3] : memref<i64x4>
    }
  }
}
func @coll(%v: memref<f32x4>, %n: index) {
  for %i = 0, %n {
    %a = subview %v[0:2] : memref<f32x4>
    %b = subview %v[2:2] : memref<f32x4>
    axpby.n 2.0, %a, 1.0, %b : f32, memref<f32x2>, f32, memref<f32x2>
  }
}
"""


def _kernels(source: str) -> dict[str, str]:
    low = lower_program(tlinterp.check(tlinterp.parse(source, "two.tl")))
    return {f: W.kernel_text(low.source, k) for f, (k, _) in low.kernels.items()}


def test_shape_is_barriers_in_branches_or_loop_nests_only():
    k = _kernels(TWO)
    assert all("barrier(" in text for text in k.values())  # every kernel has barriers
    assert {f: W.pocl_barrier_shape(t) for f, t in k.items()} == \
        {"flat": False, "branch": True, "nest": True, "coll": True}


def test_the_benchmarked_kernels_keep_full_optimisation():
    """bench/gpu.py's kernels (the spec's sample, a batched gemm) have barriers only at top
    level and no 16-bit integers: no workaround may slow them down."""
    gpu = bench("gpu")
    for source in (gpu.SAMPLE, gpu.BGEMM):
        for text in _kernels(source).values():
            assert "barrier(" in text
            assert not any(w.triggers(text) for w in W.KNOWN), text


def test_kernel_text_is_one_kernel():
    k = _kernels(TWO)
    assert k["flat"].startswith("void flat(") and k["flat"].endswith("}")
    assert "void branch(" not in k["flat"] and "for (" not in k["branch"]
    assert W.kernel_text("void other(\n{\n}\n", "flat") == ""


def test_a_workaround_build_compiles_its_kernel_alone():
    low = lower_program(tlinterp.check(tlinterp.parse(TWO, "two.tl")))
    alone = W.only_kernel(low.source, "branch")
    assert alone.count("\n") == low.source.count("\n")  # the line table still holds
    assert W.kernel_text(alone, "branch") == W.kernel_text(low.source, "branch")
    for other in ("flat", "nest", "coll"):
        assert W.kernel_text(alone, other) == "" and f"void {other}(" in low.source
    assert alone.startswith(low.source.split("kernel ")[0])  # header and helpers kept


def _device(platform: str, version: str):
    return SimpleNamespace(platform=SimpleNamespace(name=platform, version=version))


def test_only_the_pocl_release_seen_with_the_bug():
    k = _kernels(TWO)["branch"]
    pocl30 = _device("Portable Computing Language", "OpenCL 3.0 PoCL 3.0-rc2  Linux")
    assert W.applicable(k, pocl30) == (POCL,)
    assert W.options(W.applicable(k, pocl30)) == ("-cl-opt-disable",)
    assert W.applicable(k, _device("Portable Computing Language", "OpenCL 3.0 PoCL 5.0")) == ()
    assert W.applicable(k, _device("NVIDIA CUDA", "OpenCL 3.0 CUDA 12.8")) == ()
    assert W.applicable(_kernels(TWO)["flat"], pocl30) == ()


@pytest.mark.opencl
def test_runtime_builds_only_the_affected_kernel_around_the_bug():
    """In one source, the kernel of the bug's shape gets the workaround and says so; the
    other is built with optimisation (the fuzzer keeps testing pocl's optimiser there)."""
    import tlgpu
    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.launch import DeviceWorkaround

    program = tlinterp.check(tlinterp.parse(TWO, "two.tl"))
    affected = POCL.applies_to(handle("pocl").device)
    for func, shaped in (("flat", False), ("branch", True)):
        args = {"w": np.arange(4, dtype=np.int64), "n": np.int64(2)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = tlgpu.run(program, args, func=func, groups=1, device="pocl")
        said = [str(w.message) for w in caught if issubclass(w.category, DeviceWorkaround)]
        assert bool(said) == (shaped and affected), (func, said)
        want = tlinterp.interp.run(program, args, func=func, groups=1)
        assert got["w"].tolist() == want["w"].tolist()
