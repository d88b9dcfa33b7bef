"""Local memory holds every element type aligned: c64 is a double2, which NVIDIA loads and
stores with 16-byte instructions; an alloca slab or coopmatrix scratch aligned to 8 bytes only
failed nine H200 launches with -9999 (campaign findings with a c64 local alloca). The slabs
are declared aligned(16) and every alloca and scratch part starts at a multiple of 16."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlgpu import LoweringConfig
from tlgpu.lowering.memory import ALIGN, plan_allocas
from tlinterp.front.pipeline import lowerable, parse
from tlinterp.interp import run as interp_run

# an odd-sized i8 alloca first, then c64 ones: each c64 alloca must start at a multiple of 16
KERNEL = """func @k(%A: memref<c64 x 8>, %O: memref<c64 x 8 x 2>, %P: memref<i8 x 3>)
        attributes{subgroup_size=8, work_group_size=[8, 1]} {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  %c3 = constant 3 : index
  %c7 = constant 7 : index
  %b = alloca : memref<i8 x 3, local>
  %L = alloca : memref<c64 x 8, local>
  %M = alloca : memref<c64 x 8, local>
  parallel {
    %l = subgroup_local_id : i32
    %i = cast %l : index
    %x = load %A[%i] : c64
    store %x, %L[%i]
    %lt = less_than %i, %c3 : bool
    if %lt {
      %y = load %P[%i] : i8
      store %y, %b[%i]
    }
    barrier
    %j = sub %c7, %i : index
    %z = load %L[%j] : c64
    %w = add %z, %x : c64
    store %w, %M[%i]
    barrier
    %v = load %M[%j] : c64
    store %z, %O[%i, %c0]
    store %v, %O[%i, %c1]
  }
}
"""


def _args():
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex128)
    return {"A": a, "O": np.zeros((8, 2), np.complex128), "P": np.arange(3, dtype=np.int8)}


def test_allocas_start_at_multiples_of_16_in_an_aligned_slab():
    program = lowerable(tlinterp.check(parse(KERNEL, lang="v0.4")))
    fn = program.functions[0]
    offsets, _ = plan_allocas(fn.body, reuse=False)
    assert ALIGN == 16 and offsets and all(o % 16 == 0 for o in offsets.values()), offsets
    text = tlgpu.lower(program, config=LoweringConfig(reuse_local_memory=False))
    assert "tl_local[" in text and "__attribute__((aligned(16)))" in text


@pytest.mark.opencl
@pytest.mark.filterwarnings("ignore:Non-empty compiler output")
@pytest.mark.parametrize("device", ["pocl", "intel"])
def test_c64_through_local_memory_runs(device):
    program = tlinterp.check(parse(KERNEL, lang="v0.4"))
    ref = interp_run(program, _args())
    out = tlgpu.run(program, _args(), device=require_device(device))
    assert np.array_equal(ref["O"], out["O"])
