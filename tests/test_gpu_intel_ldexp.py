"""An Intel CPU OpenCL compiler bug the fuzzer met, kept as a documented reproducer, and the
workaround tlgpu applies (tlgpu/runtime/workarounds.py, entry intel-cpu-ldexp-32-wide).

(`sample_spmd` seeds 0 and 59 of branch cloop43's generator against `--device intel`: a
`backend-error`; triage: device compiler suspect)
With optimisation on, Intel's CPU runtime (driver 2026.22.10) vectorises a kernel with
`intel_reqd_sub_group_size(32)` 32 lanes wide, and an `ldexp` inside a branch then needs a
32-wide masked ldexp its library lacks: the build fails with "JIT session error: Symbols not
found: [ _Z5ldexpDv32_fDv32_iS_ ]". Sub-group size 16 and -cl-opt-disable build it. Our
lowering calls ldexp in the round-to-odd conversion of a 64-bit integer to f16/bf16
(lowering/v04/lowp.py's `tl_odd_f32_l`), so any such cast in a kernel of sub-group size 32
that uses sub-groups reaches it: `KERNEL`. The tests that need Intel's runtime skip without
it; the shape test runs everywhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opencl_devices import require_device

import tlinterp
from tlgpu.lowering.program import lower_program
from tlgpu.runtime import workarounds as W
from tlinterp.front.pipeline import lowerable

ENTRY = next(w for w in W.KNOWN if w.name == "intel-cpu-ldexp-32-wide")

REPRO = """
static float odd(long v) {
    ulong u = v < 0L ? 0UL - (ulong)v : (ulong)v;
    float f;
    if (u < 0x1000000UL) {
        f = (float)u;
    } else {
        int sh = 40 - (int)clz(u);
        f = ldexp((float)(u >> sh), sh);
    }
    return v < 0L ? -f : f;
}
kernel __attribute__((reqd_work_group_size(S, 1, 1))) __attribute__((intel_reqd_sub_group_size(S)))
void k(global const long* a, global float* o) {
    o[get_global_id(0)] = odd(a[get_global_id(0)]);
}
"""

KERNEL = """
func @k(%A: memref<i64 x 64>, %O: memref<bf16 x 64>)
        attributes{subgroup_size=32, work_group_size=[32, 2]} {
    parallel {
        %sl = subgroup_local_id : i32
        %sid = subgroup_linear_id : i32
        %c32 = constant 32 : i32
        %t = mul %sid, %c32 : i32
        %lin = add %t, %sl : i32
        %li = cast %lin : index
        %x = load %A[%li] : i64
        %c0 = constant 0 : i32
        %y = subgroup_broadcast %x, %c0 : i64
        %s = add %x, %y : i64
        %b = cast %s : bf16
        store %b, %O[%li]
    }
}
"""


def _args() -> dict:
    a = np.array([(1 << 40) + 3 * k + (1 << 20) for k in range(64)], np.int64)
    a[1::2] = np.arange(32) - 5  # small values: the branch without ldexp
    return {"A": a, "O": np.zeros(64, np.uint16)}


def _affected() -> bool:
    try:
        from tlgpu.runtime.devices import find_device

        return ENTRY.applies_to(find_device("intel"))
    except Exception:  # noqa: BLE001 - no Intel runtime here: nothing is affected
        return False


def _build(S: int, options: list[str]) -> None:
    import pyopencl as cl

    from tlgpu.runtime.devices import find_device

    ctx = cl.Context([find_device(require_device("intel"))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's warning about a non-empty build log
        cl.Program(ctx, REPRO.replace("(S", f"({S}")).build(options=options)


@pytest.mark.opencl
def test_reproducer_builds_with_sub_groups_of_16_or_without_optimisation():
    _build(16, [])
    _build(32, ["-cl-opt-disable"])


@pytest.mark.xfail(_affected(), strict=True, raises=Exception,
                   reason="Intel CPU runtime 2026.22.10 bug: no 32-wide masked ldexp to link")
@pytest.mark.opencl
def test_reproducer_optimised_with_sub_groups_of_32():
    _build(32, [])


@pytest.mark.opencl
def test_tlgpu_builds_the_kernel_around_the_bug():
    """tlgpu.run on Intel gives the interpreter's answer and says which entry it applied."""
    import tlgpu
    from tlgpu.runtime.launch import DeviceWorkaround

    device = require_device("intel")
    program = tlinterp.check(tlinterp.parse(KERNEL, "ldexp.tl", lang="v0.4"))
    want = tlinterp.interp.run(program, _args())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tlgpu.run(program, _args(), device=device)
    said = [str(w.message) for w in caught if issubclass(w.category, DeviceWorkaround)]
    assert any(ENTRY.name in s for s in said) == _affected()
    assert np.asarray(got["O"]).view(np.uint16).tolist() == \
        np.asarray(want["O"]).view(np.uint16).tolist()


def test_shape_is_a_64_bit_integer_to_f16_or_bf16_conversion():
    def text(src: str) -> str:
        low = lower_program(lowerable(tlinterp.check(tlinterp.parse(src, "k.tl", lang="v0.4"))))
        (kernel, _), = low.kernels.values()
        return W.kernel_text(low.source, kernel)

    assert W.intel_ldexp_shape(text(KERNEL))
    assert not W.intel_ldexp_shape(text(KERNEL.replace(": bf16", ": f32")
                                        .replace("bf16 x 64", "f32 x 64")))


def test_only_the_driver_release_seen_with_the_bug():
    """Intel's platform version names no release ("OpenCL 3.1 LINUX"): the driver's does."""
    from types import SimpleNamespace

    for driver, hit in (("2026.22.10.0.01_160000", True), ("2026.22.11.0.01_160000", False),
                        ("2026.22.100.0", False), ("2025.19.4.0.18_160000", False)):
        dev = SimpleNamespace(platform=SimpleNamespace(name="Intel(R) OpenCL",
                                                       version="OpenCL 3.1 LINUX"),
                              driver_version=driver)
        assert ENTRY.applies_to(dev) == hit, driver
