"""A pocl 3.0 compiler bug met by v0.4 coopmatrix kernels, kept as a stand-alone reproducer
(tests/data/pocl30-lost-stores: OpenCL C, inputs, numpy + pyopencl host), and the workaround
tlgpu applies (tlgpu/runtime/workarounds.py, entry pocl30-coopmatrix-lost-stores).

The kernel `fuzz.gen.spmd.sample_spmd(5032, ...)` generated (reduced: kernel.tl) computes a
mul_add into one output that pocl 3.0 stores as zeros (the OpenCL C: garbage such as 6.9e-310);
pocl 3.1, Intel's CPU runtime (device sub-groups and through the local-memory path) and Oclgrind
agree with the interpreter, and so does pocl 3.0 with -cl-opt-disable. `tlfuzz triage` classes
it a device compiler suspect: Oclgrind's checks report nothing. Not a bug of ours."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from opencl_devices import require_device

pytestmark = pytest.mark.opencl

DATA = Path(__file__).resolve().parent / "data" / "pocl30-lost-stores"


def _host(*argv: str) -> subprocess.CompletedProcess:
    """host.py in a child process (a pocl crash fails the test, not pytest), in a scratch
    directory (pocl may write files where it runs)."""
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, str(DATA / "host.py"), *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=120)


def test_the_reproducer_shows_the_bug_on_pocl_3_0_only():
    require_device("pocl")
    r = _host("3.0")
    if r.returncode == 2:
        pytest.skip(r.stdout.strip())
    assert r.returncode == 1 and "C61[" in r.stdout, r.stdout + r.stderr[-500:]
    r = _host("3.0", "-cl-opt-disable")
    assert r.returncode == 0, r.stdout + r.stderr[-500:]
    r = _host("3.1")
    assert r.returncode in (0, 2), r.stdout + r.stderr[-500:]  # 2: no Debian pocl here


def test_the_kernel_agrees_through_tlgpu_on_pocl():
    """tlgpu builds the kernel with -cl-opt-disable on pocl 3.0 (and says so), so its outputs
    are the interpreter's on whichever pocl `--device pocl` picks."""
    import tlgpu
    import tlinterp
    from fuzz.oracle.compare import compare_outputs
    from tlgpu.runtime.devices import find_device
    from tlgpu.runtime.launch import DeviceWorkaround
    from tlgpu.runtime.workarounds import release_in

    device = require_device("pocl")
    program = tlinterp.check(tlinterp.parse((DATA / "kernel.tl").read_text(), "kernel.tl",
                                            lang="v0.4"))
    args = dict(np.load(DATA / "args.npz"))
    want = tlinterp.run(program, {k: v.copy() for k, v in args.items()})
    assert np.count_nonzero(want["C61"]) > 100  # what pocl 3.0 optimised leaves at 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tlgpu.run(program, {k: v.copy() for k, v in args.items()}, device=device)
    bad = compare_outputs(program, "k", args, want, got)
    assert not bad, "\n".join(str(m) for m in bad[:5])
    said = any("pocl30-coopmatrix-lost-stores" in str(w.message) for w in caught
               if issubclass(w.category, DeviceWorkaround))
    assert said == release_in("PoCL 3.0", find_device(device).platform.version)
