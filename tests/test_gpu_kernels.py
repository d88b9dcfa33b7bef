"""Whole kernels on pocl against the interpreter: the spec's sample, the matrix chain,
control flow, alloca reuse and barriers, groups with dynamic shapes and offsets; the
`tlrun --backend opencl` and `--emit opencl` paths; lowering configs not changing results."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from kernels import SAMPLE

import tlgpu
import tlinterp
from fuzz.oracle.compare import compare_outputs
from tlgpu import LoweringConfig
from tlinterp.interp import run as interp_run

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)


CHAIN = """
func @chain(%K: memref<f64x56x56>, %P: memref<f64x56x9x?>, %Q: memref<f64x56x9x?>,
            %A: group<memref<f64x9x9>>) {
  %e = group_id
  %p = subview %P[:,:,%e] : memref<f64x56x9x?>
  %q = subview %Q[:,:,%e] : memref<f64x56x9x?>
  %a = load %A[%e] : group<memref<f64x9x9>>
  %t = alloca -> memref<f64x56x9>
  gemm.n.n 1.0, %K, %p, 0.0, %t : f64, memref<f64x56x56>, memref<f64x56x9>, f64, memref<f64x56x9>
  gemm.n.n 1.0, %t, %a, 1.0, %q : f64, memref<f64x56x9>, memref<f64x9x9>, f64, memref<f64x56x9>
}
"""

CONTROL = """
func @control(%x: memref<i32x?x?>, %y: memref<i32x?>, %n: i32, %g: group<memref<f32x?>, offset: ?>,
              %h: memref<f32x?x?>) {
  %gid = group_id
  %row = subview %x[:, %gid] : memref<i32x?x?>
  %m = size %row[0] : memref<i32x?>
  %acc0 = alloca -> memref<i32>
  store 0, %acc0[] : memref<i32>
  for %i = 0, %m, 2 {
    %v = load %row[%i] : memref<i32x?>
    %s = load %acc0[] : memref<i32>
    %big = cmp.gt %v, %n : i32
    %w = if %big -> (i32) {
      %d = arith.mul %v, 2 : i32
      yield %d : i32
    } else {
      yield %v : i32
    }
    %t = arith.add %s, %w : i32
    store %t, %acc0[] : memref<i32>
  }
  %total = load %acc0[] : memref<i32>
  lifetime_stop %acc0
  %tmp = alloca -> memref<i32x8>
  foreach %j = 0, 8 : i8 {
    %jj = cast %j : i8 -> index
    %c = cast %j : i8 -> i32
    %c2 = arith.mul %c, %c : i32
    store %c2, %tmp[%jj] : memref<i32x8>
  }
  %last = load %tmp[7] : memref<i32x8>
  %r = arith.add %total, %last : i32
  store %r, %y[%gid] : memref<i32x?>
  %gm = load %g[%gid] : group<memref<f32x?>, offset: ?>
  %hc = subview %h[:, %gid] : memref<f32x?x?>
  axpby.n 2.0, %gm, 1.0, %hc : f32, memref<f32x?>, f32, memref<f32x?>
  %k = size %gm[0] : memref<f32x?>
  foreach %q = 0, %k {
    %val = load %hc[%q] : memref<f32x?>
    %neg = arith.neg %val : f32
    store %neg, %gm[%q] : memref<f32x?>
  }
}
"""

SOURCE = SAMPLE + CHAIN + CONTROL


@pytest.fixture(scope="module")
def program():
    return tlinterp.check(tlinterp.parse(SOURCE, "kernels.tl"))


def sample_args(rng, n=5):
    return {"alpha": np.float32(0.5), "A": rng.standard_normal((n, 16, 8)).astype(np.float32),
            "B": rng.standard_normal((8, 8)).astype(np.float32),
            "C": rng.standard_normal((8, 16)).astype(np.float32),
            "D": rng.standard_normal((16, 16, n)).astype(np.float32)}


def chain_args(rng, n=3):
    return {"K": rng.standard_normal((56, 56)), "P": rng.standard_normal((56, 9, n)),
            "Q": rng.standard_normal((56, 9, n)), "A": rng.standard_normal((n, 9, 9))}


def control_args(rng, n=4):
    return {"x": rng.integers(-50, 50, (13, n)).astype(np.int32), "y": np.zeros(n, np.int32),
            "n": np.int32(10), "g.offset": np.int64(3),
            **{f"g.{i}": rng.standard_normal(7).astype(np.float32) for i in range(n)},
            "h": rng.standard_normal((7, n)).astype(np.float32)}


CASES = {"fused_kernel": sample_args, "chain": chain_args, "control": control_args}


def agree(program, func, args, config=None, groups=None):
    want = interp_run(program, args, func=func, groups=groups)
    got = tlgpu.run(program, args, func=func, groups=groups, config=config)
    bad = compare_outputs(program, func, args, want, got, groups=groups)
    assert not bad, "\n".join(str(m) for m in bad[:5])
    return got


@pytest.mark.parametrize("func", CASES)
def test_kernel_agrees_with_interpreter(program, func):
    args = CASES[func](np.random.default_rng(3))
    groups = 3 if func == "chain" else None
    agree(program, func, args, groups=groups)


def test_sample_kernel_matches_numpy(program):
    a = sample_args(np.random.default_rng(4))
    out = tlgpu.run(program, a, func="fused_kernel")
    ref = a["D"] + 0.5 * np.einsum("eik,jk,jl->ile", a["A"].astype(np.float64), a["B"], a["C"])
    np.testing.assert_allclose(out["D"], ref, rtol=1e-4, atol=1e-4)


CONFIGS = [LoweringConfig(work_group_size=(1, 1)), LoweringConfig(work_group_size=(7, 3)),
           LoweringConfig(register_tiles=False, reuse_local_memory=False),
           LoweringConfig(minimise_barriers=False, unroll_k=1, max_tile=1),
           LoweringConfig(local_staging_min_reuse=1, work_group_size=(32, 4)),
           LoweringConfig(group_pointers_as_ulong=True)]


@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
def test_lowering_configs_give_the_same_results(program, config):
    rng = np.random.default_rng(5)
    for func, make in CASES.items():
        agree(program, func, make(rng), config=config, groups=3 if func == "chain" else None)


def test_barriers_are_minimal_for_the_sample(program):
    """gemm -> alloca -> gemm needs exactly one barrier (the second gemm reads the first's
    output); the group load and the subview need none."""
    src = tlgpu.lower(program, "fused_kernel")
    assert src.count("barrier(") == 1
    assert "#pragma OPENCL FP_CONTRACT OFF" in src
    assert "reqd_work_group_size" in src


def test_allocas_with_disjoint_lifetimes_share_local_memory(program):
    src = tlgpu.lower(program, "control")
    # %acc0 dies at lifetime_stop before %tmp is allocated: both at offset 0
    assert src.count("((local char*)tl_local + 0)") == 2


def test_group_arguments_follow_the_calling_convention(program):
    src = tlgpu.lower(program, "control")
    assert "global float*global* v_g," in src
    assert "global long* v_g_shape0," in src
    assert "long v_g_offset," in src
    assert "long v_x_shape0,\n        long v_x_shape1,\n        long v_x_stride1," in src



WRITES = """
func @writes(%R: memref<f32x8x?>, %S: memref<f32x8x?>, %F: memref<f32x8x?>, %G: memref<f32x8>) {
  %e = group_id
  %r = subview %R[:, %e] : memref<f32x8x?>
  %s = subview %S[:, %e] : memref<f32x8x?>
  %f = subview %F[:, %e] : memref<f32x8x?>
  foreach %i = 0, 8 : index {
    %v = load %r[%i] : memref<f32x8>
    store %v, %f[%i] : memref<f32x8>
  }
  axpby.n.atomic 1.0, %r, 1.0, %G : f32, memref<f32x8>, f32, memref<f32x8>
  axpby.n 1.0, %r, 1.0, %s : f32, memref<f32x8>, f32, memref<f32x8>
}
"""


def test_read_only_memref_arguments_are_const_restrict(program):
    """Arguments no step writes (found by a first lowering pass) are `const restrict`, and so
    are the views of them; one written anywhere (inside a foreach, through a subview, by an
    atomic collective) is not, and the knob turns it off."""
    src = tlgpu.lower(program, "chain")
    assert "global const double* restrict v_K," in src
    assert "global const double* restrict v_P," in src
    assert "global double* v_Q," in src
    assert "global const double* v_p = " in src and "global double* v_q = " in src
    w = tlinterp.check(tlinterp.parse(WRITES))
    src = tlgpu.lower(w, "writes")
    assert "global const float* restrict v_R," in src
    for name in "SFG":
        assert f"global float* v_{name}," in src or f"global float* v_{name})" in src
    off = tlgpu.lower(w, "writes", config=LoweringConfig(restrict_read_only=False))
    assert "restrict" not in off and "const float*" not in off
    rng = np.random.default_rng(3)
    args = {"R": rng.standard_normal((8, 4)).astype(np.float32),
            "S": rng.standard_normal((8, 4)).astype(np.float32),
            "F": np.zeros((8, 4), np.float32), "G": np.zeros(8, np.float32)}
    agree(w, "writes", args)

def tlrun(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-m", "tlinterp.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("func,make", [("fused_kernel", sample_args), ("chain", chain_args)])
def test_tlrun_backend_opencl(tmp_path, program, func, make):
    (tmp_path / "k.tl").write_text(SOURCE)
    args = make(np.random.default_rng(6))
    np.savez(tmp_path / "in.npz", **args)
    groups = ["--groups", "3"] if func == "chain" else []
    r = tlrun("k.tl", "--func", func, "--args", "in.npz", "--out", "out.npz",
              "--backend", "opencl", "--lowering", "max_tile=2", *groups, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "out.npz") as f:
        got = {k: f[k] for k in f.files}
    want = interp_run(program, args, func=func, groups=3 if func == "chain" else None)
    assert not compare_outputs(program, func, args, want, got,
                               groups=3 if func == "chain" else None)


def test_tlrun_emit_opencl_prints_the_lowering(tmp_path, program):
    (tmp_path / "k.tl").write_text(SOURCE)
    r = tlrun("k.tl", "--func", "chain", "--emit", "opencl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == tlgpu.lower(tlinterp.check(tlinterp.parse(SOURCE, "k.tl")), "chain")


def test_every_entry_point_takes_source_text_and_names_a_wrong_type(program):
    """As in tlinterp: source text is parsed and checked, anything else is a TypeError naming
    the call, not an AttributeError from deep inside the lowering."""
    args = sample_args(np.random.default_rng(5))
    assert tlgpu.lower(SOURCE, "chain") == tlgpu.lower(
        tlinterp.check(tlinterp.parse(SOURCE)), "chain")
    got = tlgpu.run(SAMPLE, args)
    want = interp_run(SAMPLE, args)
    assert not compare_outputs(program, "fused_kernel", args, want, got)
    k = tlgpu.compile(SAMPLE)
    b = k.bind(args)
    k.launch(b)
    np.testing.assert_array_equal(b.read()["D"], got["D"])
    with pytest.raises(tlinterp.SourceError):
        tlgpu.lower("func @f( {")
    calls = {"lower": lambda p: tlgpu.lower(p), "run": lambda p: tlgpu.run(p, args),
             "compile": lambda p: tlgpu.compile(p),
             "tune": lambda p: tlgpu.tune(p, args, use_cache=False)}
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"{name}\(program\).*got bytes"):
            call(SAMPLE.encode())
