"""v0.4 SPMD code on OpenCL against the interpreter: `parallel`, the sub-group builtins,
subgroup_broadcast / reduce / scans, barriers, `foreach_tile` and every cooperative_matrix_*
instruction, bit for bit, on Intel's sub-groups and on pocl through the local-memory
emulation (tlgpu/lowering/v04/spmd.py, subgroups.py, coopmatrix.py); the refusal on a device
without sub-groups for a work-group of several; the NVIDIA strategy's emitted PTX (the test
that runs it needs an NVIDIA device)."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlgpu import LoweringConfig
from tlinterp.front.pipeline import parse
from tlinterp.interp import run as interp_run
from tlinterp.lang.diagnostics import BackendError

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
          "i8": np.int8, "i16": np.int16, "index": np.int64}
OPS = [f"{k}_{op}" for k in ("reduce", "inclusive_scan", "exclusive_scan")
       for op in ("add", "max", "min")]


def program(src: str):
    return tlinterp.check(parse(src, lang="v0.4"))


def agree(src: str, args: dict, device: str, config=None) -> dict:
    """Run on the interpreter and the device; the outputs must be equal bit for bit (NaN in
    the same places)."""
    p = program(src)
    ref = interp_run(p, {k: v.copy() for k, v in args.items()})
    out = tlgpu.run(p, {k: v.copy() for k, v in args.items()}, device=device, config=config)
    for k in ref:
        a, b = np.asarray(ref[k]), np.asarray(out[k])
        same = (a == b) | ((a != a) & (b != b))
        assert same.all(), (k, np.argwhere(~same)[:5].tolist(), a[~same][:5], b[~same][:5])
    return out


def subgroup_kernel(T: str, S: int, wy: int) -> str:
    W = S * wy
    lines = [f"func @k(%A: memref<{T} x {W}>, %O: memref<{T} x {W} x 10>, %I: memref<i32 x {W}"
             f" x 6>) attributes{{subgroup_size={S}, work_group_size=[{S}, {wy}]}} {{",
             *[f"  %i{j} = constant {j} : index" for j in range(10)],
             "  parallel {",
             "    %l = subgroup_linear_id : i32", "    %k = subgroup_local_id : i32",
             "    %s = subgroup_size : i32", "    %sx = subgroup_id.x : i32",
             "    %sy = subgroup_id.y : i32", "    %nx = num_subgroups.y : i32",
             "    %ls = mul %l, %s : i32", "    %g = add %ls, %k : i32",
             "    %gi = cast %g : index", f"    %x = load %A[%gi] : {T}",
             *[f"    store %{n}, %I[%gi, %i{j}]" for j, n in enumerate(
                 ("l", "k", "s", "sx", "sy", "nx"))],
             "    %c3 = constant 3 : i32",
             f"    %b = subgroup_broadcast %x, %c3 : {T}",
             "    store %b, %O[%gi, %i9]"]
    for j, op in enumerate(OPS):
        lines += [f"    %r{j} = subgroup_{op} %x : {T}", f"    store %r{j}, %O[%gi, %i{j}]"]
    return "\n".join(lines + ["  }", "}"])


def subgroup_args(T: str, W: int) -> dict:
    rng = np.random.default_rng(7)
    dt = DTYPES[T]
    if T.startswith("f"):
        a = (rng.standard_normal(W) * 1e3).astype(dt)
        a[2] = np.nan  # max/min ignore a NaN operand, add spreads it
        a[5] = 2.0 ** 24  # an order-sensitive sum in f32
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, W, dtype=dt)  # sums wrap
    return {"A": a, "O": np.zeros((W, 10), dt), "I": np.zeros((W, 6), np.int32)}


@pytest.mark.parametrize("T", list(DTYPES))
@pytest.mark.parametrize("S,wy", [(16, 2), (8, 1), (32, 1)])
def test_subgroup_operations_on_intel(T, S, wy):
    agree(subgroup_kernel(T, S, wy), subgroup_args(T, S * wy), require_device("intel"))


@pytest.mark.parametrize("T", ["f32", "f64", "i32", "i8"])
def test_subgroup_operations_through_local_memory(T):
    """pocl has no sub-groups: a work-group of one sub-group runs through local memory; so
    does Intel's when the strategy is asked for."""
    agree(subgroup_kernel(T, 16, 1), subgroup_args(T, 16), require_device("pocl"))
    agree(subgroup_kernel(T, 8, 1), subgroup_args(T, 8), require_device("intel"),
          LoweringConfig(subgroups="local"))


def test_several_subgroups_without_device_subgroups():
    """Directly in `parallel` every work-item reaches a sub-group operation, so work-group
    barriers serve; inside an `if` of the region they would not: refused by name."""
    agree(subgroup_kernel("f32", 8, 2), subgroup_args("f32", 16), require_device("pocl"))
    src = """func @k(%A: memref<f32 x 16>) attributes{subgroup_size=8, work_group_size=[8, 2]} {
  parallel {
    %l = subgroup_linear_id : i32
    %c0 = constant 0 : i32
    %first = equal %l, %c0 : bool
    if %first {
      %k = subgroup_local_id : i32
      %ki = cast %k : index
      %x = load %A[%ki] : f32
      %r = subgroup_reduce_add %x : f32
      store %r, %A[%ki]
    }
  }
}"""
    with pytest.raises(BackendError) as e:
        agree(src, {"A": np.arange(16, dtype=np.float32)}, require_device("pocl"))
    msg = e.value.format()
    assert e.value.exit_status == 2
    assert "subgroup_reduce_add needs sub-groups" in msg
    assert "Portable Computing Language" in msg and "2 sub-groups of 8" in msg
    agree(src, {"A": np.arange(16, dtype=np.float32)}, require_device("intel"))


def test_builtins_need_no_device_subgroups():
    """Ids are arithmetic on the work-item's: any work-group shape runs on pocl."""
    src = """func @k(%I: memref<i32 x 32 x 4>)
    attributes{subgroup_size=8, work_group_size=[16, 2]} {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  %c2 = constant 2 : index
  %c3 = constant 3 : index
  parallel {
    %l = subgroup_linear_id : i32
    %k = subgroup_local_id : i32
    %sx = subgroup_id.x : i32
    %n = num_subgroups.x : i32
    %s = subgroup_size : i32
    %ls = mul %l, %s : i32
    %g = add %ls, %k : i32
    %gi = cast %g : index
    store %l, %I[%gi, %c0]
    store %k, %I[%gi, %c1]
    store %sx, %I[%gi, %c2]
    store %n, %I[%gi, %c3]
  }
}"""
    out = agree(src, {"I": np.full((32, 4), -1, np.int32)}, require_device("pocl"))
    assert out["I"][:, 0].tolist() == [i // 8 for i in range(32)]


def test_parallel_with_local_memory_and_barriers():
    """Work-items exchange values through an alloca across barriers, after a collective
    wrote the input (a barrier orders the region after it)."""
    src = """func @k(%A: memref<f32 x 32>, %B: memref<f32 x 32>)
    attributes{subgroup_size=8, work_group_size=[16, 2]} {
  %L = alloca : memref<f32 x 32, local>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %A, %zero, %B
  parallel {
    %l = subgroup_linear_id : i32
    %k = subgroup_local_id : i32
    %c8 = constant 8 : i32
    %c31 = constant 31 : i32
    %ls = mul %l, %c8 : i32
    %g = add %ls, %k : i32
    %gi = cast %g : index
    %r = sub %c31, %g : i32
    %ri = cast %r : index
    %x = load %B[%gi] : f32
    store %x, %L[%ri]
    barrier.local
    %y = load %L[%gi] : f32
    barrier
    store %y, %B[%gi]
  }
}"""
    a = np.arange(32, dtype=np.float32)
    for dev in ("pocl", "intel"):
        out = agree(src, {"A": a, "B": np.zeros(32, np.float32)}, require_device(dev))
        assert out["B"].tolist() == a[::-1].tolist()


def test_foreach_tile_deals_tiles_to_subgroups():
    src = """func @k(%A: memref<i32 x ? x ?>) attributes{subgroup_size=8, work_group_size=[16, 1]} {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  %m = size %A[0] : index
  %n = size %A[1] : index
  foreach_tile (%i, %j) = (%c1, %c0), (%m, %n) as (%si, %sj) <= (8, 3) {
    %k = subgroup_local_id : i32
    %l = subgroup_linear_id : i32
    %ki = cast %k : index
    %in = less_than %ki, %si : bool
    if %in {
      %r = add %i, %ki : index
      for %q = %c0, %sj {
        %col = add %j, %q : index
        %v = cast %sj : i32
        %w = mul %l, %v : i32
        store %w, %A[%r, %col]
      }
    }
  }
}"""
    agree(src, {"A": np.full((21, 7), -1, np.int32)}, require_device("pocl"))


# --- cooperative matrices ------------------------------------------------------------------


def coop_kernel(T: str, S: int, wx: int) -> str:
    """Every coopmatrix instruction on one kernel, per sub-group a 16 x 8 block of A and B;
    the layout shows through `extract` (each lane's components stored per lane)."""
    acc = f"coopmatrix<{T} x 16 x 8, matrix_acc>"
    ma = f"coopmatrix<{T} x 16 x 8, matrix_a>"
    mb = f"coopmatrix<{T} x 8 x 8, matrix_b>"
    V = 16 * 8 // S  # components per lane of a 16 x 8 matrix_acc (S <= 16)
    return "\n".join([
        f"func @k(%A: memref<{T} x ? x 8>, %B: memref<{T} x 8 x ?>, %C: memref<{T} x ? x 8>,"
        f" %D: memref<{T} x ? x 8>, %E: memref<{T} x ? x 8>, %X: memref<{T} x {V} x ?>, "
        f"%R: memref<{T} x ? x 8>) attributes{{subgroup_size={S}, work_group_size=[{wx}, 1]}} {{",
        "  %c0 = constant 0 : index",
        "  %c16 = constant 16 : index",
        f"  %c2 = constant {lit(2, T)} : {T}",
        f"  %one = constant {lit(1, T)} : {T}",
        "  parallel {",
        "    %l = subgroup_linear_id : i32",
        "    %li = cast %l : index",
        "    %x = mul %li, %c16 : index",
        "    %k = subgroup_local_id : i32",
        "    %ki = cast %k : index",
        f"    %a = cooperative_matrix_load %A[%x, %c0] : {ma}",
        f"    %b = cooperative_matrix_load.t %B[%c0, %c0] : {mb}",
        f"    %c = cooperative_matrix_load %C[%x, %c0] : {acc}",
        f"    %d = cooperative_matrix_mul_add %a, %b, %c : {acc}",
        f"    %e = cooperative_matrix_scale %c2, %d : {acc}",
        f"    %f = add %e, %c : {acc}",
        f"    %z = cooperative_matrix_construct %one : {acc}",
        f"    %g = sub %f, %z : {acc}",
        f"    %h = cooperative_matrix_insert %one, %g[1] : {acc}",
        f"    %p = cooperative_matrix_apply (%i, %j, %v) = %h -> {acc} {{",
        "      %ij = add %i, %j : i32",
        f"      %ijt = cast %ij : {T}",
        f"      %r = mul %v, %ijt : {T}",
        "      yield (%r)",
        "    }",
        "    cooperative_matrix_store %p, %D[%x, %c0]",
        "    cooperative_matrix_store.t.both_checked %p, %E[%x, %c0]",
        f"    %rr = cooperative_matrix_reduce_add.row %p : coopmatrix<{T} x 16 x 1, matrix_acc>",
        f"    %rc = cooperative_matrix_reduce_max.column %p : coopmatrix<{T} x 1 x 8, matrix_acc>",
        "    %r0 = cooperative_matrix_extract %rr[0] : " + T,
        "    %q = cast %k : index",
        "    %lq = mul %li, %c16 : index",
        "    %qq = add %lq, %q : index",
        "    store %r0, %R[%qq, %c0]",
        "    barrier",
        f"    %old = cooperative_matrix_atomic_add.rows_checked %p, %R[%x, %c0] : {acc}",
        *[f"    %x{v} = cooperative_matrix_extract %old[{v}] : {T}\n"
          f"    %vi{v} = constant {v} : index\n"
          f"    %col{v} = mul %li, %c16 : index\n"
          f"    %cc{v} = add %col{v}, %ki : index\n"
          f"    store %x{v}, %X[%vi{v}, %cc{v}]" for v in range(V)],
        "  }",
        "}"])


def lit(x: int, T: str) -> str:
    return f"{x}.0" if T.startswith("f") else str(x)


def coop_args(T: str, S: int, wx: int) -> dict:
    rng = np.random.default_rng(3)
    dt = DTYPES[T]
    n = wx // S
    V = 16 * 8 // S

    def m(*shape):  # small integers: every product and sum is exact in every type
        return rng.integers(-4, 5, shape).astype(dt)

    return {"A": m(16 * n, 8), "B": m(8, 8), "C": m(16 * n, 8),
            "D": np.zeros((16 * n, 8), dt), "E": np.zeros((16 * n, 8), dt),
            "X": np.zeros((V, 16 * n), dt), "R": m(16 * n, 8)}


@pytest.mark.parametrize("T", ["f32", "f64", "i32"])
@pytest.mark.parametrize("S,wx", [(8, 16), (16, 16)])
def test_coopmatrix_on_intel(T, S, wx):
    agree(coop_kernel(T, S, wx), coop_args(T, S, wx), require_device("intel"))


@pytest.mark.parametrize("T,wx", [("f32", 8), ("i32", 8), ("f64", 16)])
def test_coopmatrix_through_local_memory(T, wx):
    agree(coop_kernel(T, 8, wx), coop_args(T, 8, wx), require_device("pocl"))


# --- NVIDIA ------------------------------------------------------------------------------


def test_nvidia_strategy_writes_warp_shuffles():
    """The emitted text (the lead runs it on an H200: test_subgroups_on_nvidia)."""
    p = program(subgroup_kernel("f64", 16, 2))
    src = tlgpu.lower(p, config=LoweringConfig(subgroups="nvidia"))
    assert 'asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, %4;"' in src
    assert "tl_shfl64(" in src  # a double moves as two 32-bit shuffles
    assert f"const uint tl_sg_c = {(32 - 16) << 8 | 31}u;" in src
    assert "const uint tl_sg_mask = (65535u << ((uint)tl_lid & 16u));" in src
    assert "sub_group" not in src and "intel_reqd_sub_group_size" not in src
    coop = tlgpu.lower(program(coop_kernel("f32", 16, 32)),
                       config=LoweringConfig(subgroups="nvidia"))
    assert 'bar.warp.sync %0;" :: "r"(tl_sg_mask) : "memory"' in coop
    full = tlgpu.lower(program(subgroup_kernel("i32", 32, 1)),
                       config=LoweringConfig(subgroups="nvidia"))
    assert "const uint tl_sg_mask = 0xffffffffu;" in full
    with pytest.raises(BackendError, match="does not fit NVIDIA's warps of 32"):
        tlgpu.lower(program(subgroup_kernel("f32", 64, 1)),
                    config=LoweringConfig(subgroups="nvidia"))


@pytest.mark.nvidia
def test_subgroups_on_nvidia():
    dev = require_device("nvidia")
    for T in ("f32", "f64", "i32", "i8"):
        agree(subgroup_kernel(T, 32, 2), subgroup_args(T, 64), dev)
        agree(subgroup_kernel(T, 8, 2), subgroup_args(T, 16), dev)
    for T in ("f32", "f64", "i32"):
        agree(coop_kernel(T, 16, 32), coop_args(T, 16, 32), dev)


def test_device_table_says_how_each_device_runs_subgroups():
    from types import SimpleNamespace

    from tlgpu.runtime import devices as D

    def dev(platform: str, ext: str = ""):
        return SimpleNamespace(platform=SimpleNamespace(name=platform), extensions=ext)

    assert D.subgroup_strategy(dev("NVIDIA CUDA")) == "nvidia"
    assert D.subgroup_strategy(dev("Intel(R) OpenCL", "cl_khr_subgroups cl_intel_subgroups")) \
        == "intel"
    assert D.subgroup_strategy(dev("Portable Computing Language", "cl_khr_fp64")) == "local"
    # a strategy asked for that the device lacks becomes the device's; local runs anywhere
    assert D.subgroup_strategy(dev("Portable Computing Language"), "intel") == "local"
    assert D.subgroup_strategy(dev("Intel(R) OpenCL", "cl_intel_subgroups"), "local") == "local"
    assert D.subgroup_strategy(dev("Intel(R) OpenCL", "cl_intel_subgroups"), "nvidia") == "intel"


def test_a_work_item_run_past_its_bound_is_a_timeout_not_a_failure():
    """SPMD programs run in a child process (a driver crash stays a result); when the case's
    time bound (or a campaign's end) stops that child, the `opencl` implementation answers
    "timeout", which tlfuzz does not save as a finding against our lowering (seen on an H200
    campaign: 16 jobs starting children outran the round's deadline, 8 false findings)."""
    from tlinterp.impl import Job, resolve

    src = """func @k(%A: memref<f32 x 16>) attributes{subgroup_size=16, work_group_size=[16, 1]} {
  parallel {
    %l = subgroup_local_id : i32
    %i = cast %l : index
    %x = load %A[%i] : f32
    %y = subgroup_reduce_add %x : f32
    store %y, %A[%i]
  }
}"""
    impl = resolve("opencl", None)
    job = Job(src, {"A": np.ones(16, np.float32)}, func="k", groups=1, lang="v0.4")
    slow = impl.run(job, 0.001)  # no child starts a device in a millisecond
    assert slow.status == "timeout", slow
    assert "took longer than" in slow.message
    ok = impl.run(job, 120)
    assert ok.status == "ok" and ok.outputs["A"].tolist() == [16.0] * 16, ok
def test_parallel_without_subgroup_size_is_refused_in_words(tmp_path, capsys):
    """The interpreter needs subgroup_size to run `parallel`; so does the lowering: a
    BackendError naming the attribute (tlrun exit 2), no traceback."""
    from tlinterp.cli import tlrun as cli

    text = "func @k(%B: memref<f32 x 4>) {\n  parallel {\n  }\n}\n"
    with pytest.raises(BackendError, match="gives no subgroup_size"):
        tlgpu.lower(text)
    kernel = tmp_path / "k.tl"
    kernel.write_text(text)
    np.savez(tmp_path / "a.npz", B=np.zeros(4, np.float32))
    assert cli.main([str(kernel), "--args", str(tmp_path / "a.npz"), "--impl", "opencl"]) == 2
    err = capsys.readouterr().err
    assert "subgroup_size" in err and "Traceback" not in err


def coop_atomic_kernel(T: str, op: str) -> str:
    return f"""func @k(%A: memref<{T} x 16 x 4>, %C: memref<{T} x 16 x 4>, %O: memref<{T} x 16 x 4>)
        attributes{{subgroup_size=16, work_group_size=[16, 1]}} {{
  %c0 = constant 0 : index
  parallel {{
    %m = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<{T} x 16 x 4, matrix_acc>
    %old = cooperative_matrix_atomic_{op}.device.acquire_release %m, %C[%c0, %c0]
        : coopmatrix<{T} x 16 x 4, matrix_acc>
    cooperative_matrix_store %old, %O[%c0, %c0]
  }}
}}"""


@pytest.mark.parametrize("T,op", [("bf16", "max"), ("f16", "add"), ("i16", "min"),
                                  ("i8", "add"), ("c32", "add"), ("f32", "max")])
@pytest.mark.parametrize("device", ["pocl", "intel"])
def test_coopmatrix_atomics_on_every_element_type(T, op, device):
    """cooperative_matrix_atomic_* through the atomics of atomic_add|max|min: 8/16-bit and
    complex elements too (an H200 campaign found c32 ones that did not build and bf16/i16 ones
    refused), with the old values returned, bit for bit; on pocl the acquire_release order is
    fences around OpenCL C 1.2 atomics."""
    import ml_dtypes

    dt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "i16": np.int16, "i8": np.int8,
          "c32": np.complex64, "f32": np.float32}[T]
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, (16, 4)).astype(np.float32)
    c = rng.integers(-8, 8, (16, 4)).astype(np.float32)
    if T == "c32":
        a, c = a + 1j * c, c - 2j * a
    args = {"A": np.asfortranarray(a.astype(dt)), "C": np.asfortranarray(c.astype(dt)),
            "O": np.zeros((16, 4), dt, order="F")}
    out = agree(coop_atomic_kernel(T, op), args, require_device(device))
    assert out["O"].tolist() == args["C"].tolist()  # the old values are C's


def test_coopmatrix_atomics_refuse_what_has_no_compare_and_swap():
    program = tlinterp.check(parse(coop_atomic_kernel("c64", "add"), lang="v0.4"))
    with pytest.raises(Exception, match="cooperative_matrix_atomic_add on c64 elements"):
        tlgpu.lower(program)


@pytest.mark.parametrize("op", ["max", "min"])
def test_coopmatrix_atomic_max_min_tie_keeps_the_old_value_as_atomic_max_does(op):
    """On a tie (+0.0 against -0.0) cooperative_matrix_atomic_max/min keep the element's value,
    as atomic_max/min and the scalar max/min do; the interpreter's coopmatrix path used
    np.fmax/np.fmin, which take the new value (an H200 campaign's mismatch: expected -0.0, got
    0.0 from the lowering, which was right)."""
    old = np.where(np.arange(64).reshape(16, 4) % 2 == 0, -0.0, 0.0).astype(np.float32)
    args = {"A": np.asfortranarray(-old), "C": np.asfortranarray(old.copy()),
            "O": np.zeros((16, 4), np.float32, order="F")}
    ref = interp_run(program(coop_atomic_kernel("f32", op)), {k: v.copy() for k, v in args.items()})
    assert np.signbit(ref["C"]).tolist() == np.signbit(old).tolist()  # unchanged, sign and all
    agree(coop_atomic_kernel("f32", op), args, require_device("pocl"))
