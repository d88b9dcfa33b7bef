"""Every failure of the OpenCL backend is a clear BackendError (exit 2), never a traceback:
i1 arguments, unknown devices and lowering options, work-group sizes the device cannot run,
local memory over budget, and build failures mapped back to tensor-language spans."""

from __future__ import annotations

import numpy as np
import pytest

import tlgpu
import tlinterp
from tlgpu import LoweringConfig
from tlgpu.lowering.program import lower_program
from tlgpu.runtime.buildlog import map_log
from tlgpu.runtime.launch import build
from tlinterp.lang.diagnostics import ArgumentError, BackendError
from tlinterp.lang.ir import Span

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)


def prog(text: str):
    return tlinterp.check(tlinterp.parse(text, "e.tl"))


def test_i1_argument_cannot_be_passed():
    p = prog("func @f(%b: i1, %x: memref<i32>) {\n  store 1, %x[] : memref<i32>\n}")
    with pytest.raises(BackendError, match="i1 arguments cannot be passed") as e:
        tlgpu.lower(p)
    assert e.value.exit_status == 2
    assert "e.tl:1.9" in str(e.value)


def test_unknown_device_lists_the_available_ones():
    p = prog("func @f(%x: memref<i32>) {\n  store 1, %x[] : memref<i32>\n}")
    with pytest.raises(BackendError, match="no OpenCL device matches 'nosuch'.*Portable"):
        tlgpu.run(p, {"x": np.zeros((), np.int32)}, device="nosuch")


@pytest.mark.parametrize("overrides,message", [
    ({"nope": "1"}, "unknown lowering option 'nope'"),
    ({"max_tile": "zero"}, "'zero' is not a positive integer"),
    ({"register_tiles": "maybe"}, "not true/false"),
    ({"work_group_size": "3"}, "W,H"),
    (["max_tile"], "KEY=VALUE"),
])
def test_bad_lowering_overrides(overrides, message):
    with pytest.raises(BackendError, match=message):
        LoweringConfig.from_overrides(overrides)


def test_lowering_overrides_parse():
    c = LoweringConfig.from_overrides(["work_group_size=8x2", "register_tiles=off",
                                       "max_tile=4"])
    assert (c.work_group_size, c.register_tiles, c.max_tile) == ((8, 2), False, 4)


def test_work_group_size_over_the_device_maximum():
    p = prog("func @f(%x: memref<i32>) work_group_size(4096,4096) {\n"
             "  store 1, %x[] : memref<i32>\n}")
    with pytest.raises(BackendError, match="exceeds the maximum"):
        tlgpu.run(p, {"x": np.zeros((), np.int32)})


def test_overridden_work_group_size_must_fit_the_subgroup_size():
    p = prog("func @f(%x: memref<i32>) subgroup_size(8) {\n  store 1, %x[] : memref<i32>\n}")
    with pytest.raises(BackendError, match="multiple of the subgroup size 8"):
        tlgpu.lower(p, config=LoweringConfig(work_group_size=(12, 1)))


def test_chosen_work_group_size_honours_the_subgroup_size():
    """With no size given, the size the lowering picks (here 4x1 on a CPU, 32x1 in one warp)
    is rounded up to a multiple of the subgroup size instead of rejecting the kernel."""
    from tlgpu.lowering.program import choose_geometry

    src = ("func @f(%a: memref<f32x4>, %b: memref<f32x4>) subgroup_size({}) {{\n"
           "  axpby.n 1.0, %a, 0.0, %b : f32, memref<f32x4>, f32, memref<f32x4>\n}}")
    for sg in (16, 64):
        fn = prog(src.format(sg)).functions[0]
        for cfg in (LoweringConfig(warp_groups=False), LoweringConfig(warp_groups=True),
                    LoweringConfig(warp_groups=False, max_work_group_size=64)):
            geo = choose_geometry(fn, cfg)
            assert geo.wg0 % sg == 0 and geo.wg0 * geo.wg1 <= max(sg, cfg.max_work_group_size)
    p = prog(src.format(64))
    a = np.arange(4, dtype=np.float32)
    out = tlgpu.run(p, {"a": a, "b": np.zeros(4, np.float32)}, device="pocl")
    assert (out["b"] == a).all()


def test_local_memory_over_budget():
    p = prog("func @f() {\n  %a = alloca -> memref<f64x64x64>\n}")
    with pytest.raises(BackendError, match="bytes of local memory"):
        tlgpu.lower(p, config=LoweringConfig(local_memory_bytes=1024))


def test_build_failure_is_mapped_to_the_instruction():
    p = prog("func @f(%x: memref<i32>) {\n  %c = arith.add 1, 2 : i32\n"
             "  store %c, %x[] : memref<i32>\n}")
    lowered = lower_program(p)
    # break the line generated for `arith.add` (line 2 of e.tl) and build it
    broken = lowered.source.replace("((int)1L) + ((int)2L)", "((int)1L) + undeclared_name")
    assert broken != lowered.source
    lowered.source = broken
    from tlgpu.runtime.devices import handle

    with pytest.raises(BackendError) as e:
        build(lowered, handle("pocl"), p)
    text = str(e.value)
    assert "e.tl:2.3-27: OpenCL C build error" in text
    assert "undeclared_name" in text
    assert "%c = arith.add 1, 2 : i32" in text  # the source line is shown


def test_map_log_understands_clang_and_pocl_formats():
    spans = [None, Span(3, 1, 3, 9), None]
    log = ("<kernel>:2:5: error: bad thing\n<kernel>:2:7: warning: meh\n"
           "error: /tmp/pocl/x.cl:2:30: worse thing\n")
    diags = map_log(log, spans, "k.tl")
    assert [d.span for d in diags] == [spans[1], spans[1]]
    assert "bad thing" in diags[0].message and "worse thing" in diags[1].message


def test_function_names_that_are_not_c_identifiers_are_mangled():
    p = prog("func @kernel(%x: memref<i32>) {\n  store 1, %x[] : memref<i32>\n}\n"
             "func @0(%x: memref<i32>) {\n  store 2, %x[] : memref<i32>\n}")
    src = tlgpu.lower(p)
    assert "void tl_fn_kernel(" in src and "void tl_fn_0(" in src
    out = tlgpu.run(p, {"x": np.zeros((), np.int32)}, func="0")
    assert out["x"] == 2


def test_unknown_function_is_an_argument_error():
    p = prog("func @f(%x: memref<i32>) {\n  store 1, %x[] : memref<i32>\n}")
    with pytest.raises(ArgumentError, match="no function @g.*@f"):
        tlgpu.run(p, {"x": np.zeros((), np.int32)}, func="g")


def test_bad_arguments_are_argument_errors():
    p = prog("func @f(%x: memref<i32x4>) {\n  store 1, %x[0] : memref<i32x4>\n}")
    with pytest.raises(ArgumentError, match="mode 0 must be 4"):
        tlgpu.run(p, {"x": np.zeros(3, np.int32)})


def test_zero_work_groups_run_nothing():
    p = prog("func @f(%x: memref<i32x4>) {\n  store 1, %x[0] : memref<i32x4>\n}")
    out = tlgpu.run(p, {"x": np.zeros(4, np.int32)}, groups=0)
    assert not out["x"].any()
