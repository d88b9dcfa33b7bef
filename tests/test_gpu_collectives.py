"""Collective instructions on pocl against the interpreter (fuzz.oracle.compare's error bounds for
floats, exact for integers): every BLAS instruction and transpose, static and dynamic shapes,
beta 0 / 1 / other / run-time, atomics, mixed precision; under several lowering configs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.oracle.compare import compare_outputs
from tlgpu import LoweringConfig
from tlinterp.interp import run as interp_run

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

CASES = {
    # name: (source body, argument shapes); %G is the group-id slice of the batch mode
    "gemm_nn": ("gemm.n.n %al, %a, %b, %be, %c : {S}, memref<{T}x7x5>, memref<{T}x5x6>, {S}, "
                "memref<{T}x7x6>", {"a": (7, 5), "b": (5, 6), "c": (7, 6)}),
    "gemm_nt": ("gemm.n.t %al, %a, %b, %be, %c : {S}, memref<{T}x7x5>, memref<{T}x6x5>, {S}, "
                "memref<{T}x7x6>", {"a": (7, 5), "b": (6, 5), "c": (7, 6)}),
    "gemm_tn": ("gemm.t.n %al, %a, %b, %be, %c : {S}, memref<{T}x5x7>, memref<{T}x5x6>, {S}, "
                "memref<{T}x7x6>", {"a": (5, 7), "b": (5, 6), "c": (7, 6)}),
    "gemm_tt_dyn": ("gemm.t.t %al, %a, %b, %be, %c : {S}, memref<{T}x?x?>, memref<{T}x?x?>, {S}, "
                    "memref<{T}x?x?>", {"a": (5, 33), "b": (18, 5), "c": (33, 18)}),
    "gemm_big": ("gemm.n.n %al, %a, %b, %be, %c : {S}, memref<{T}x40x33>, memref<{T}x33x36>, "
                 "{S}, memref<{T}x40x36>", {"a": (40, 33), "b": (33, 36), "c": (40, 36)}),
    "gemv_n": ("gemv.n %al, %a, %b, %be, %c : {S}, memref<{T}x7x5>, memref<{T}x5>, {S}, "
               "memref<{T}x7>", {"a": (7, 5), "b": (5,), "c": (7,)}),
    "gemv_t": ("gemv.t %al, %a, %b, %be, %c : {S}, memref<{T}x5x7>, memref<{T}x5>, {S}, "
               "memref<{T}x7>", {"a": (5, 7), "b": (5,), "c": (7,)}),
    "ger": ("ger %al, %a, %b, %be, %c : {S}, memref<{T}x7>, memref<{T}x6>, {S}, "
            "memref<{T}x7x6>", {"a": (7,), "b": (6,), "c": (7, 6)}),
    "hadamard": ("hadamard_product %al, %a, %b, %be, %c : {S}, memref<{T}x?>, memref<{T}x?>, {S},"
                 " memref<{T}x?>", {"a": (9,), "b": (9,), "c": (9,)}),
    "axpby_n": ("axpby.n %al, %a, %be, %c : {S}, memref<{T}x7x6>, {S}, memref<{T}x7x6>",
                {"a": (7, 6), "c": (7, 6)}),
    "axpby_t": ("axpby.t %al, %a, %be, %c : {S}, memref<{T}x6x7>, {S}, memref<{T}x7x6>",
                {"a": (6, 7), "c": (7, 6)}),
    "sum_n": ("sum.n %al, %a, %be, %c : {S}, memref<{T}x7x5>, {S}, memref<{T}x7>",
              {"a": (7, 5), "c": (7,)}),
    "sum_t": ("sum.t %al, %a, %be, %c : {S}, memref<{T}x7x5>, {S}, memref<{T}x5>",
              {"a": (7, 5), "c": (5,)}),
    "sum_vec": ("sum.n %al, %a, %be, %c : {S}, memref<{T}x11>, {S}, memref<{T}>",
                {"a": (11,), "c": ()}),
}
# (elements, scalars, atomic): atomics cover the float CAS loop and the native integer add
VARIANTS = [("f64", "f64", False), ("f32", "f32", True), ("i32", "i32", True),
            ("f32", "f64", False)]


def kernel(name: str, body: str, shapes: dict, T: str, S: str, atomic: bool) -> str:
    """One function: each operand is the group-id slice of a batched argument whose leading
    modes are the operand's (static or dynamic) modes."""
    op = body.format(T=T, S=S)
    memrefs = re.findall(r"memref<([^>]*)>", op)
    params = [f"%al: {S}", f"%be: {S}"]
    lines = ["  %g = group_id"]
    for arg, mt in zip(shapes, memrefs):
        batched = f"memref<{mt}x?>"
        params.append(f"%{arg}B: {batched}")
        lines.append(f"  %{arg} = subview %{arg}B[{':, ' * len(shapes[arg])}%g] : {batched}")
    if atomic:
        op = re.sub(r"^(\S+) ", r"\1.atomic ", op)
    return "\n".join([f"func @{name}({', '.join(params)}) {{", *lines, "  " + op, "}"])


def build_source() -> tuple[str, list]:
    funcs, index = [], []
    for cname, (body, shapes) in CASES.items():
        for T, S, atomic in VARIANTS:
            name = f"{cname}_{T}_{S}{'_atomic' if atomic else ''}"
            funcs.append(kernel(name, body, shapes, T, S, atomic))
            index.append((name, cname, T, S, atomic))
    return "\n".join(funcs), index


SOURCE, INDEX = build_source()


@pytest.fixture(scope="module")
def program():
    return tlinterp.check(tlinterp.parse(SOURCE, "collectives.tl"))


def arguments(cname: str, T: str, S: str, beta, groups: int, rng) -> dict:
    _, shapes = CASES[cname]
    dt = np.dtype({"f32": np.float32, "f64": np.float64, "i32": np.int32}[T])
    st = np.dtype({"f32": np.float32, "f64": np.float64, "i32": np.int32}[S])
    args = {"al": st.type(3 if dt.kind == "i" else 0.75), "be": st.type(beta)}
    for arg, shape in shapes.items():
        full = tuple(shape) + (groups,)
        if dt.kind == "i":
            v = rng.integers(-9, 10, full).astype(dt)
        else:
            v = rng.standard_normal(full).astype(dt)
        args[f"{arg}B"] = v
    if beta == 0 and dt.kind == "f":
        args["cB"][...] = np.nan  # beta = 0 must not read C
    return args


def check(program, name, args, groups, config=None):
    want = interp_run(program, args, func=name, groups=groups)
    got = tlgpu.run(program, args, func=name, groups=groups, config=config)
    bad = compare_outputs(program, name, args, want, got, groups=groups)
    assert not bad, "\n".join(str(m) for m in bad[:5])


@pytest.mark.parametrize("name,cname,T,S,atomic", INDEX, ids=[i[0] for i in INDEX])
def test_collective(program, name, cname, T, S, atomic):
    rng = np.random.default_rng(len(name))
    betas = (0, 1) if atomic else (0, 1, -2)
    for beta in betas:
        check(program, name, arguments(cname, T, S, beta, 3, rng), 3)


CONFIGS = [LoweringConfig(register_tiles=False), LoweringConfig(work_group_size=(3, 5)),
           LoweringConfig(local_staging_min_reuse=1, max_tile=2, unroll_k=1,
                          minimise_barriers=False, work_group_size=(8, 2)),
           LoweringConfig(planned_tiles=True, fused_multiply_add=True, narrow_indices=True,
                          work_group_size=(16, 4)),
           LoweringConfig(planned_tiles=False, clamped_loads=False, work_group_size=(3, 5))]


@pytest.mark.parametrize("config", CONFIGS, ids=["untiled", "wg3x5", "staged-small-tiles",
                                                 "gpu-knobs", "grid-guarded"])
@pytest.mark.parametrize("cname", ["gemm_nt", "gemm_tt_dyn", "gemm_big", "ger", "sum_vec"])
def test_lowering_configs_do_not_change_results(program, config, cname):
    rng = np.random.default_rng(7)
    name = f"{cname}_f64_f64"
    check(program, name, arguments(cname, "f64", "f64", -2, 2, rng), 2, config)


# knob `load_batch`: a work-item's elements of an elementwise collective, loads first; small
# work-groups so that a work-item has several elements and the last batch is partial
BATCHED = [LoweringConfig(load_batch=8, work_group_size=(2, 2)),
           LoweringConfig(load_batch=3, work_group_size=(3, 5)),
           LoweringConfig(load_batch=64, work_group_size=(4, 1))]
ELEMENTWISE = [i for i in INDEX if i[1] in ("ger", "hadamard", "axpby_n", "axpby_t")]


@pytest.mark.parametrize("config", BATCHED, ids=["8-wg2x2", "3-wg3x5", "64-wg4x1"])
@pytest.mark.parametrize("name,cname,T,S,atomic", ELEMENTWISE, ids=[i[0] for i in ELEMENTWISE])
def test_batched_loads_do_not_change_results(program, config, name, cname, T, S, atomic):
    rng = np.random.default_rng(len(name) + config.load_batch)
    for beta in ((0, 1) if atomic else (0, 1, -2)):  # beta 0: C is NaN and must not be read
        check(program, name, arguments(cname, T, S, beta, 3, rng), 3, config)


def _loop_bodies(program, name: str, config: LoweringConfig) -> list[str]:
    from tlgpu.lowering.program import lower_program

    src = lower_program(program, name, config).source
    return re.findall(r"for \(\w+ tl_t\d+ = [^\n]*\n(.*?)\n {8}\}", src, re.S)


def test_batched_loops_load_before_they_store(program):
    config = LoweringConfig(load_batch=8, work_group_size=(2, 2))
    (body,) = _loop_bodies(program, "axpby_n_f64_f64", config)
    lines = body.splitlines()
    values = [n for n, ln in enumerate(lines) if re.search(r"const double tl_v\d+_\d+ =", ln)]
    stores = [n for n, ln in enumerate(lines) if re.search(r"\] = tl_v\d+_\d+;", ln)]
    assert len(values) == len(stores) == 8 and max(values) < min(stores)
    guarded = [n for n in values if re.search(r"= tl_t\d+_\d+ < tl_i\d+M \* tl_i\d+N \?", lines[n])]
    assert len(guarded) == 7  # the first element is inside by the loop test
    # atomics, reductions and load_batch=1 (a CPU's default) keep one element per step
    for name, cfg in (("axpby_n_f32_f32_atomic", config), ("sum_n_f64_f64", config),
                      ("axpby_n_f64_f64", LoweringConfig(load_batch=1, work_group_size=(2, 2)))):
        assert all("tl_v" not in b for b in _loop_bodies(program, name, cfg)), name
    # no more than a work-item's share: 42 elements over 15 work-items is 3
    (body,) = _loop_bodies(program, "axpby_n_f64_f64",
                           LoweringConfig(load_batch=8, work_group_size=(3, 5)))
    assert len(re.findall(r"\] = tl_v", body)) == 3


# staging copies of a gemm's A and B (lower_collectives._batched_copy): rounds of a
# work-item's elements, loads first; group sizes that divide the counts, leave partial rounds,
# and make several rounds (gemm_big: 1320 and 1188 elements over 4 work-items)
STAGED = [LoweringConfig(local_staging_min_reuse=1, work_group_size=wg)
          for wg in ((2, 2), (3, 5), (16, 4))]
GEMMS = [i for i in INDEX if i[1] in ("gemm_nn", "gemm_nt", "gemm_tn", "gemm_big")
         and i[2] in ("f64", "f32")]


@pytest.mark.parametrize("config", STAGED, ids=["wg2x2", "wg3x5", "wg16x4"])
@pytest.mark.parametrize("name,cname,T,S,atomic", GEMMS, ids=[i[0] for i in GEMMS])
def test_staged_copies_do_not_change_results(program, config, name, cname, T, S, atomic):
    rng = np.random.default_rng(len(name) + config.work_group_size[0])
    for beta in ((0, 1) if atomic else (0, 1, -2)):
        check(program, name, arguments(cname, T, S, beta, 2, rng), 2, config)


def _staging_loop(program, name: str, config: LoweringConfig) -> list[str]:
    from tlgpu.lowering.program import lower_program

    src = lower_program(program, name, config).source
    (body,) = re.findall(r"tl_Bs\d+ = [^\n]*\n\s*for \(int tl_t\d+ = \(int\)tl_lid; "
                         r"tl_t\d+ < (\d+); tl_t\d+ \+= (\d+)\) \{\n(.*?)\n {8}\}", src, re.S)
    return [int(body[0]), int(body[1]), body[2].splitlines()]


def test_staged_copies_load_before_they_store(program):
    config = LoweringConfig(local_staging_min_reuse=1, work_group_size=(2, 2))
    # 40x33 A and 33x36 B over 4 work-items: 16 elements of each per round
    top, step, lines = _staging_loop(program, "gemm_big_f64_f64", config)
    assert (top, step) == (40 * 33, 16 * 4)
    values = [n for n, ln in enumerate(lines) if re.search(r"const double tl_v\d+_\d_\d+ =", ln)]
    stores = [n for n, ln in enumerate(lines) if re.search(r"\] = tl_v\d+_\d_\d+;", ln)]
    assert len(values) == len(stores) == 32 and max(values) < min(stores)
    # A's first element of a round is inside by the loop test; every other may be past the end
    assert sum("?" in lines[n] for n in values) == 31
    # 7x5 A and 5x6 B over 35 work-items (3x5 would be 15): one round of one element each,
    # A's provably inside, B's guarded
    top, step, lines = _staging_loop(program, "gemm_nn_f64_f64", LoweringConfig(
        local_staging_min_reuse=1, work_group_size=(5, 7)))
    assert (top, step) == (35, 35)
    assert [("?" in ln) for ln in lines if "const double tl_v" in ln] == [False, True]


def test_the_tuner_and_the_fuzzer_turn_load_batch():
    from drawn import drawn

    from tlgpu.tuning.tuner import SPACE

    assert dict((a, v) for a, v in SPACE if isinstance(a, str))["load_batch"] == (1, 4, 6, 8)
    assert len(drawn("load_batch", 60)) >= 3


def test_load_batch_is_device_decided(program):
    """None batches 8 elements on GPUs (lowering without a device is for a GPU) and 1 on
    CPUs, where pocl keeps the code it had."""
    assert LoweringConfig().load_batch is None
    assert LoweringConfig().for_device(gpu=True).load_batch == 8
    assert LoweringConfig().for_device(gpu=False).load_batch == 1
    assert LoweringConfig(load_batch=3).for_device(gpu=False).load_batch == 3
    # 42 elements over 4 work-items: 11 each, so a full batch of 8 by default
    (body,) = _loop_bodies(program, "axpby_n_f64_f64", LoweringConfig(work_group_size=(2, 2)))
    assert len(re.findall(r"\] = tl_v", body)) == 8


@pytest.mark.opencl
def test_elementwise_bench_smoke_on_pocl(capsys):
    """bench/elementwise.py checks every case against NumPy (a wrong result exits), here with
    the batched path as its baseline."""
    from benches import bench

    assert bench("elementwise").main(["--device", "pocl", "--bytes", "2e5", "--reps", "1",
                                      "--baseline", "load_batch=8"]) == 0
    assert "ger f64 35x9" in capsys.readouterr().out


@pytest.mark.parametrize("cname", ["axpby_n", "ger"])
def test_batched_loads_of_integers(cname):
    """Plain (non-atomic) integer stores take the batched path too (exact comparison)."""
    body, shapes = CASES[cname]
    name = f"{cname}_i32_plain"
    prog = tlinterp.check(tlinterp.parse(kernel(name, body, shapes, "i32", "i32", False), "i.tl"))
    rng = np.random.default_rng(3)
    for beta in (0, 1, -2):
        check(prog, name, arguments(cname, "i32", "i32", beta, 3, rng), 3, BATCHED[0])
