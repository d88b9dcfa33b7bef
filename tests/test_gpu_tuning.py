"""Speed knobs of issue 12: gemm tile plans, 32-bit index safety, fma and local-only fences
in the emitted code, device-decided knobs, the autotuner and its cache, `tlrun --tune`, and
the ADER-DG bench at smoke size."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from benches import bench

import tlgpu
import tlinterp
from tlgpu import LoweringConfig
from tlgpu.lowering.tiles import fits_int, plan
from tlgpu.tuning.tuner import cached, table
from tlinterp.cli import tlrun as cli
from tlinterp.interp import run as interp_run
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError

ROOT = Path(__file__).resolve().parents[1]


def _covered(M: int, N: int, tp, wg0: int, wg1: int) -> list[int]:
    """How often each C element is written when the plan's loops run on every work-item."""
    hits = [0] * (M * N)
    for t in range(wg0 * wg1):
        if tp.planned:  # tiles t, t + size, ... of the g0 x g1 tiles
            starts = [(tt % tp.g0, tt // tp.g0) for tt in range(t, tp.g0 * tp.g1, wg0 * wg1)]
            steps = (tp.g0, tp.g1)
        else:
            i0, j0 = t % wg0, t // wg0
            starts = [(bi, bj) for bi in range(i0, M, tp.g0 * tp.rm)
                      for bj in range(j0, N, tp.g1 * tp.rn)]
            steps = (tp.g0, tp.g1)
        for bi, bj in starts:
            for r in range(tp.rm):
                for c in range(tp.rn):
                    i, j = bi + r * steps[0], bj + c * steps[1]
                    if i < M and j < N:
                        hits[i + j * M] += 1
    return hits


@pytest.mark.parametrize("wg", [(16, 4), (8, 8), (3, 5), (32, 1), (1, 1)])
@pytest.mark.parametrize("max_tile", [1, 4, 16])
def test_every_plan_writes_each_output_once(wg, max_tile):
    for M, N in [(35, 9), (20, 9), (4, 9), (1, 9), (56, 9), (32, 32), (7, 6), (40, 36), (1, 1),
                 (100, 3)]:
        tp = plan(M, N, wg[0] * wg[1], max_tile)
        assert tp.g0 * tp.rm >= M and tp.g1 * tp.rn >= N and tp.rm * tp.rn <= max_tile
        assert _covered(M, N, tp, *wg) == [1] * (M * N), (M, N, tp)


def test_plans_prefer_short_chains():
    tp = plan(35, 9, 64, 16)  # the ADER K-gemm: 3x3 tiles on the 16x4 grid idle 45%
    assert tp.planned and (tp.rm, tp.rn) == (3, 2) and tp.g0 * tp.g1 <= 64
    two = plan(35, 9, 32, 6)  # more tiles than work-items: a second pass beats bigger tiles
    assert two.rm * two.rn <= 6 and two.g0 * two.g1 > 32


def test_the_fuzzer_draws_every_config_the_tuner_tries():
    from fuzz.strategies import LOWERING_GROUP_DIMS, LOWERING_INTS
    from tlgpu.lowering.config import CHOICES, DEVICE_FEATURES
    from tlgpu.tuning.tuner import candidates

    default = LoweringConfig()
    for changes in candidates():
        for knob, v in changes.items():
            if knob == "work_group_size":
                assert v is None or (v[0] in LOWERING_GROUP_DIMS[0]
                                     and v[1] in LOWERING_GROUP_DIMS[1]), (knob, v)
            elif knob in DEVICE_FEATURES:  # drawn from its own values
                assert v in DEVICE_FEATURES[knob], (knob, v)
            elif knob in CHOICES:
                assert v is None or v in CHOICES[knob], (knob, v)
            elif isinstance(v, int) and not isinstance(v, bool):
                assert v in LOWERING_INTS or v == getattr(default, knob), (knob, v)


def test_joint_axes_change_their_knobs_together():
    from tlgpu.tuning.tuner import SPACE, candidates

    space = (("max_tile", (4, 9)), (("work_group_size", "unroll_k"), (((32, 1), 1), (None, 8))))
    assert list(candidates(space)) == [
        {"max_tile": 4}, {"max_tile": 9},
        {"work_group_size": (32, 1), "unroll_k": 1}, {"work_group_size": None, "unroll_k": 8}]
    joint = [c for c in candidates(SPACE) if len(c) > 1]
    assert {"work_group_size": (32, 1), "unroll_k": 1} in joint  # the ADER winner's pair


def test_fits_int():
    assert fits_int([35, 9, 56], ["1", "35", "v_x_stride1"])
    assert not fits_int([100_000], ["100000"])
    assert not fits_int([2**31], [])


ADER_N2 = None


def ader_program():
    global ADER_N2
    if ADER_N2 is None:
        ADER_N2 = tlinterp.check(tlinterp.parse(bench("ader").source(2, 3, "f64"), "ader.tl"))
    return ADER_N2


def test_emitted_code_follows_the_knobs():
    p = ader_program()
    on = tlgpu.lower(p, config=LoweringConfig())
    assert "fma(" in on and "barrier(CLK_LOCAL_MEM_FENCE);" in on
    assert "for (int " in on and "if (tl_lid < " in on and " ? " not in on
    off = tlgpu.lower(p, config=LoweringConfig(fused_multiply_add=False, narrow_indices=False,
                                               local_fences=False, planned_tiles=False,
                                               clamped_loads=False))
    assert "fma(" not in off and "barrier(CLK_LOCAL_MEM_FENCE);" not in off
    assert "for (int tl_" not in off and "if (tl_lid < " not in off and "tl_ir" not in off
    assert " ? " in off  # guarded loads in the K loop


def test_device_decided_knobs_parse():
    c = LoweringConfig.from_overrides(["fused_multiply_add=off", "narrow_indices=auto"])
    assert (c.fused_multiply_add, c.narrow_indices) == (False, None)
    assert LoweringConfig.from_overrides(["unroll_k=2"]).unroll_k == 2
    assert LoweringConfig.from_overrides(["unroll_k=2", "unroll_k=auto"]).unroll_k is None
    with pytest.raises(BackendError, match="positive integer or auto"):
        LoweringConfig.from_overrides(["unroll_k=0"])


def test_k_loop_unrolling_is_device_decided():
    """None unrolls the K loop for CPUs only (lowering without a device is for a GPU)."""
    src = bench("ader").source(3, 9, "f64")
    program = tlinterp.check(tlinterp.parse(src))
    assert "#pragma unroll 8" not in tlgpu.lower(program)
    assert "#pragma unroll 8" in tlgpu.lower(program, config=LoweringConfig(unroll_k=8))
    with pytest.raises(BackendError, match="true/false/auto"):
        LoweringConfig.from_overrides(["narrow_indices=2"])


@pytest.mark.opencl
def test_device_decided_knobs_are_off_on_pocl():
    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.launch import device_config

    c = device_config(handle("pocl"), LoweringConfig(narrow_indices=True))
    assert (c.fused_multiply_add, c.narrow_indices, c.warp_groups) == (False, True, False)
    assert (c.unroll_k, c.load_batch) == (8, 1)
    assert device_config(handle("pocl"), LoweringConfig(unroll_k=2)).unroll_k == 2


def _geometry(src: str, **knobs) -> tuple[int, int]:
    from tlgpu.lowering.program import choose_geometry

    fn = tlinterp.check(tlinterp.parse(src)).functions[0]
    geo = choose_geometry(fn, LoweringConfig(**knobs))
    return geo.wg0, geo.wg1


def _gemm_kernel(m: int, n: int, k: int, attr: str = "") -> str:
    a, b, c = f"memref<f64x{m}x{k}>", f"memref<f64x{k}x{n}>", f"memref<f64x{m}x{n}x?>"
    return (f"func @g(%A: {a}, %B: {b}, %C: {c}){attr} {{\n  %e = group_id\n"
            f"  %c = subview %C[:,:,%e] : {c}\n"
            f"  gemm.n.n 1.0, %A, %B, 0.0, %c : f64, {a}, {b}, f64, memref<f64x{m}x{n}>\n}}\n")


@pytest.mark.opencl
@pytest.mark.parametrize("m, n, k, knobs, clamps, tile_index", [
    (32, 32, 32, {}, "", "get_local_id"),  # 2 x 4 tiles of a 16 x 8 grid fill C exactly
    (35, 9, 20, {}, "rows", "/"),  # rows past the edge (5 x 1 tiles, M = 35)
    (32, 9, 8, {"work_group_size": (32, 1)}, "cols", "/"),  # a 16 x 2 plan in a 32 x 1 group
    (17, 8, 8, {"work_group_size": (32, 1)}, "rows cols", "/"),  # 9 x 3 tiles of 2 x 3
    (32, 32, 32, {"work_group_size": (8, 8)}, "", "get_local_id"),  # 4 x 4 tiles of 8 x 8
])
def test_tiles_inside_c_load_without_clamps_and_name_the_work_item_ids(m, n, k, knobs, clamps,
                                                                       tile_index):
    # a tile row or column that never passes C's edge needs no clamp (nor store guard), and a
    # plan whose grid is the work-group's takes its tile from get_local_id; on pocl either
    # makes the loads affine in the work-item id (GEMM 32^3 there: 122 -> 110 ms); the results
    # must stay exact, checked against the interpreter on pocl
    src = _gemm_kernel(m, n, k)
    text = tlgpu.lower(src, config=LoweringConfig(**knobs))
    # the register-tile part: from the tile index to the K loop
    code = text[text.index("if (tl_lid < "):text.index("#pragma unroll", text.index("tl_acc"))]
    assert ("min((int)(tl_bi" in code) == ("rows" in clamps)
    assert ("min((int)(tl_bj" in code) == ("cols" in clamps)
    assert ("get_local_id(0)" in code) == (tile_index == "get_local_id")
    if not clamps:
        assert "min(" not in text.split("tl_acc")[1]
    rng = np.random.default_rng(m + n + k)
    args = {"A": rng.standard_normal((m, k)), "B": rng.standard_normal((k, n)),
            "C": np.zeros((m, n, 3))}
    want = interp_run(tlinterp.check(tlinterp.parse(src)), args)["C"]
    got = tlgpu.run(src, args, device="pocl", config=LoweringConfig(**knobs))["C"]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_warp_groups_give_small_collectives_one_warp():
    """One warp when every collective output fits one pass of max_tile tiles over 32
    work-items (the ADER chain's 56 x 9 and the sample's 16 x 16), the shape heuristic
    otherwise: a 32 x 32 output, a dynamic one, a GPU-less config, a small size cap."""
    assert _geometry(bench("ader").source(5, 9, "f64")) == (32, 1)
    assert _geometry(_gemm_kernel(16, 16, 8)) == (32, 1)
    assert _geometry(_gemm_kernel(32, 32, 32)) == (16, 8)
    assert _geometry(_gemm_kernel(32, 32, 32), max_tile=32) == (32, 1)
    assert _geometry(_gemm_kernel(16, 16, 8), warp_groups=False) == (16, 4)
    assert _geometry(_gemm_kernel(16, 16, 8), max_work_group_size=16) == (16, 1)
    assert _geometry(_gemm_kernel(16, 16, 8, " work_group_size(8,2)")) == (8, 2)
    assert _geometry(_gemm_kernel(16, 16, 8, " subgroup_size(16)")) == (32, 1)
    dynamic = ("func @d(%A: memref<f32x?x?>, %B: memref<f32x?x?>) {\n"
               "  axpby.n 1.0, %A, 0.0, %B : f32, memref<f32x?x?>, f32, memref<f32x?x?>\n}\n")
    assert _geometry(dynamic) == (16, 1)


@pytest.mark.opencl
def test_ader_bench_smoke_on_pocl():
    ader = bench("ader")
    assert ader.flops(5, 9) == 193_104  # the issue's count
    assert ader.main(["--device", "pocl", "--E", "3", "--N", "1", "--types", "f64",
                      "--reps", "1", "--config", "planned_tiles=true"]) == 0


SPACE = (("planned_tiles", (False, True)), ("work_group_size", ((4096, 4),)))


@pytest.mark.opencl
def test_tune_searches_caches_and_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TL_TUNE_CACHE", str(tmp_path / "tune.json"))
    p = ader_program()
    ader = bench("ader")
    args = ader.arguments(2, 3, 4, "f64", np.random.default_rng(0))
    from tlgpu.tuning.tuner import tune

    r = tune(p, args, func="ader", device="pocl", reps=1, space=SPACE)
    assert not r.cached and len(r.trials) == 3  # default == planned_tiles=True: timed once
    failed = [t for t in r.trials if t.seconds is None]
    assert len(failed) == 1 and "exceeds" in failed[0].error  # too big a group: reported
    assert r.best.work_group_size is None
    rows = table(r)
    assert sum(row[2] == "best" for row in rows) == 1
    fn = p.function("ader")
    from tlgpu.runtime.devices import handle

    assert cached(p, fn, handle("pocl").key) == r.best
    again = tlgpu.tune(p, args, func="ader", device="pocl")
    assert again.cached and again.best == r.best and not again.trials
    # tlrun --tune uses the cached winner and prints it
    src = tmp_path / "ader.tl"
    src.write_text(p.source)
    np.savez(tmp_path / "a.npz", **args)
    rc = cli.main([str(src), "--args", str(tmp_path / "a.npz"), "--backend", "opencl",
                   "--device", "pocl", "--tune", "--out", str(tmp_path / "o.npz")])
    err = capsys.readouterr().err
    assert rc == 0 and "cached winner" in err
    want = interp_run(p, args, func="ader")["I"]
    assert np.allclose(np.load(tmp_path / "o.npz")["I"], want, rtol=1e-12, atol=1e-12)


@pytest.mark.opencl  # runs OpenCL
def test_the_search_leaves_a_local_optimum_of_tensor_cores_and_group_shape(tmp_path,
                                                                            monkeypatch):
    # a synthetic cost with a trap one knob at a time cannot leave: (tensor cores, 8x8) beats
    # every single change from it, the best is (no tensor cores, default shape)
    import tlgpu.runtime.launch
    import tlgpu.tuning.tuner as tuner

    monkeypatch.setenv("TL_TUNE_CACHE", str(tmp_path / "tune.json"))
    # a device with m16n8k4 tensor cores and no other resolution (the code is lowered, and a
    # config lowering to code already timed shares its time, so None must mean 16 here)
    monkeypatch.setattr(tlgpu.runtime.launch, "device_config", lambda dev, cfg: dataclasses.replace(
        cfg, tensor_cores=16 if cfg.tensor_cores is None else cfg.tensor_cores))

    def cost(program, function, device, dev, cfg, *rest):
        if cfg.tensor_cores == 0 and cfg.work_group_size is None:
            return 0.5
        return 0.8 if cfg.tensor_cores in (None, 16) and cfg.work_group_size == (8, 8) else 1.0

    monkeypatch.setattr(tuner, "_time", cost)
    p = ader_program()
    args = bench("ader").arguments(2, 3, 4, "f64", np.random.default_rng(0))
    best = tuner.tune(p, args, func="ader", device="pocl", use_cache=False).best
    assert (best.tensor_cores, best.work_group_size) == (0, None)
    one_at_a_time = tuple(a for a in tuner.SPACE if a[0] != ("tensor_cores", "work_group_size"))
    trapped = tuner.tune(p, args, func="ader", device="pocl", use_cache=False,
                         space=one_at_a_time).best
    assert trapped.work_group_size == (8, 8)


@pytest.mark.opencl
def test_configs_that_lower_to_code_already_timed_are_not_timed_again(tmp_path, monkeypatch):
    # on pocl an f64 kernel has no tensor cores, so unroll_mma and k_pairs change no code: they
    # take the time of the code they share, cannot win on noise, and the report says so
    import tlgpu.tuning.tuner as tuner

    monkeypatch.setenv("TL_TUNE_CACHE", str(tmp_path / "tune.json"))
    calls = []

    def timed(program, function, device, dev, cfg, *rest):
        calls.append(cfg)
        return 1.0 / len(calls)  # every timing is faster than the last: re-timed code would win

    monkeypatch.setattr(tuner, "_time", timed)
    p = ader_program()
    args = bench("ader").arguments(2, 3, 4, "f64", np.random.default_rng(0))
    space = (("unroll_mma", (1, 4)), ("k_pairs", (False,)), ("planned_tiles", (False,)))
    r = tuner.tune(p, args, func="ader", device="pocl", reps=1, use_cache=False, space=space)
    default, planned_off = LoweringConfig(), LoweringConfig(planned_tiles=False)
    assert calls == [default, planned_off]  # only new code is timed
    assert r.best == planned_off
    shared = [(t.config, t.same_as, t.seconds) for t in r.trials if t.same_as is not None]
    assert shared == [
        (LoweringConfig(unroll_mma=1), default, 1.0),
        (LoweringConfig(unroll_mma=4), default, 1.0),
        (LoweringConfig(k_pairs=False), default, 1.0),
        # the second sweep, from the new best
        (LoweringConfig(unroll_mma=1, planned_tiles=False), planned_off, 0.5),
        (LoweringConfig(unroll_mma=4, planned_tiles=False), planned_off, 0.5),
        (LoweringConfig(k_pairs=False, planned_tiles=False), planned_off, 0.5)]
    notes = [row[2] for row in table(r)]
    assert sum("same code as default" in n for n in notes) == 3
    assert sum("same code as planned_tiles=False" in n for n in notes) == 3


def test_tune_needs_the_opencl_backend(tmp_path, capsys):
    src = tmp_path / "k.tl"
    src.write_text("func @f(%x: memref<i32>) {\n  store 1, %x[] : memref<i32>\n}\n")
    np.savez(tmp_path / "a.npz", x=np.zeros((), np.int32))
    assert cli.main([str(src), "--args", str(tmp_path / "a.npz"), "--tune"]) == 2
    assert "--tune needs --impl opencl" in capsys.readouterr().err


LIFETIMES = """func @k(%x: memref<f64x4>) {
  %a = alloca -> memref<f64x4>
  %b = alloca -> memref<f64x2>
  %c = alloca -> memref<f64x4>
  axpby.n 2.0, %x, 0.0, %a : f64, memref<f64x4>, f64, memref<f64x4>
  %s = subview %a[1:2] : memref<f64x4>
  axpby.n 1.0, %s, 0.0, %b : f64, memref<f64x2>, f64, memref<f64x2>
  for %i = 0, 2 {
    axpby.n 1.0, %s, 1.0, %b : f64, memref<f64x2>, f64, memref<f64x2>
  }
  axpby.n 1.0, %x, 0.0, %c : f64, memref<f64x4>, f64, memref<f64x4>
  %t = subview %c[0:2] : memref<f64x4>
  axpby.n 1.0, %b, 1.0, %t : f64, memref<f64x2>, f64, memref<f64x2>
  axpby.n 1.0, %c, 0.0, %x : f64, memref<f64x4>, f64, memref<f64x4>
}
"""


def test_inferred_lifetimes_end_after_the_last_use_of_any_view():
    from tlgpu.lowering.memory import plan_allocas

    body = tlinterp.check(tlinterp.parse(LIFETIMES, "l.tl")).function("k").body
    allocas = {i.result.name: id(i) for i in ir.walk(body) if isinstance(i, ir.Alloca)}

    def by_name(offsets):
        return {n: offsets[k] for n, k in allocas.items()}

    offsets, total = plan_allocas(body, reuse=True, infer_lifetimes=True)
    assert by_name(offsets) == {"a": 0, "b": 32, "c": 0} and total == 48  # %a ends with the loop
    offsets, total = plan_allocas(body, reuse=True)
    assert by_name(offsets) == {"a": 0, "b": 32, "c": 48} and total == 80


@pytest.mark.opencl
def test_inferred_lifetimes_run_like_the_interpreter():
    p = tlinterp.check(tlinterp.parse(LIFETIMES, "l.tl"))
    x = np.arange(4.0)
    args = {"x": x}
    want = interp_run(p, args, func="k")["x"]
    for cfg in (LoweringConfig(), LoweringConfig(infer_lifetimes=False)):
        assert np.array_equal(tlgpu.run(p, args, func="k", config=cfg)["x"], want)
