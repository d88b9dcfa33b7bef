"""`opencl-c:COMMAND` runs the compiler's code in worker processes that the time bound
reaches: a spinning kernel times out and leaves no process, a crashing one is "crashed" with
its signal, build options reach the build, reject statuses need a diagnostic, and sub-group
code on a device without sub-groups says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fuzz.shutdown import descendants
from tlinterp.impl import ImplOptions, Job, resolve

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

KERNEL = """func @f(%a: memref<f32x4>) {
  %x = load %a[0] : memref<f32x4>
  store %x, %a[1] : memref<f32x4>
}
"""
ARGS = {"a": np.array([0, 1, 2, 3], dtype=np.float32)}
HEAD = "kernel __attribute__((reqd_work_group_size(1, 1, 1))) void f(global float* a)"

SPIN = HEAD + " { volatile global float* p = a; while (p[0] == 0.0f) {} }"
SEGV = HEAD + " { *(volatile global int*)(ulong)16 = 1; a[1] = 7.0f; }"
FINE = HEAD + " { a[1] = 7.0f; }"
DEFINED = HEAD + """ {
#ifndef TL_EXTRUN
#error TL_EXTRUN is not defined
#endif
    a[1] = TL_EXTRUN; }"""
SUB_GROUPS = HEAD + " { a[1] = (float)get_sub_group_local_id(); }"


def printing(tmp_path: Path, code: str) -> str:
    """An `opencl-c:` compiler that prints `code` whatever the kernel (a shell script: no
    Python start per case)."""
    cl = tmp_path / "code.cl"
    cl.write_text(code)
    return f"opencl-c:sh -c 'cat \"$0\"' {cl} {{tl}}"


def test_a_spinning_kernel_times_out_and_leaves_no_process(tmp_path):
    before = set(descendants(os.getpid()))
    impl = resolve(printing(tmp_path, SPIN), ImplOptions(device="pocl"))
    impl.runner.device_info()  # the worker's start-up is not the kernel's time
    workers = set(descendants(os.getpid())) - before
    assert workers
    start = time.monotonic()
    o = impl.run(Job(KERNEL, ARGS), timeout=3)
    took = time.monotonic() - start
    assert o.status == "timeout" and "did not end within the case's 3 s" in o.message, o.message
    assert took < 15, took
    assert not set(descendants(os.getpid())) - before  # the spinning worker is gone
    # the next job gets a fresh worker and runs
    impl2 = resolve(printing(tmp_path, FINE), ImplOptions(device="pocl"))
    assert impl2.run(Job(KERNEL, ARGS), 60).status == "ok"
    impl.close()
    impl2.close()
    assert not set(descendants(os.getpid())) - before


def test_the_worker_is_kept_between_jobs(tmp_path):
    impl = resolve(printing(tmp_path, FINE),
                   ImplOptions(device="pocl"))
    try:
        o = impl.run(Job(KERNEL, ARGS), 60)
        assert o.status == "ok", o.message
        assert o.outputs["a"].tolist() == [0, 7, 2, 3]
        (pid,) = [w.proc.pid for w in impl.runner._idle]
        assert impl.run(Job(KERNEL, ARGS), 60).status == "ok"
        assert [w.proc.pid for w in impl.runner._idle] == [pid]
    finally:
        impl.close()


def test_a_crashing_kernel_is_crashed_with_its_signal(tmp_path):
    impl = resolve(printing(tmp_path, SEGV), ImplOptions(device="pocl"))
    try:
        o = impl.run(Job(KERNEL, ARGS), 60)
        assert o.status == "crashed" and "signal" in o.message, o.message
        assert impl.runner.restarts == 1
    finally:
        impl.close()


def test_build_options_reach_the_build(tmp_path):
    spec = printing(tmp_path, DEFINED)
    with_define = resolve(spec, ImplOptions(device="pocl", build_options="-DTL_EXTRUN=5"))
    without = resolve(spec, ImplOptions(device="pocl"))
    try:
        o = with_define.run(Job(KERNEL, ARGS), 60)
        assert o.status == "ok", o.message
        assert o.outputs["a"].tolist() == [0, 5, 2, 3]
        o = without.run(Job(KERNEL, ARGS), 60)
        assert o.status == "crashed" and "does not build" in o.message
        assert "TL_EXTRUN is not defined" in o.message
    finally:
        with_define.close()
        without.close()


@pytest.mark.parametrize("script, reject, status, says", [
    ('echo "$1:2.3-7: no such thing" >&2; exit 1', (1,), "rejected", "no such thing"),
    ('echo "$1:2.3-7: no such thing" >&2; exit 1', (2,), "crashed", "exit status 1"),
    ("echo assertion failed >&2; exit 1", (1,), "crashed",
     "exit status 1 (a --reject-status) but no FILE:LINE.COL-COL: message diagnostic"),
])
def test_reject_status(script, reject, status, says):
    impl = resolve(f"opencl-c:sh -c '{script}' sh {{tl}}",
                   ImplOptions(device="pocl", reject_status=reject))
    o = impl.run(Job(KERNEL, ARGS), 60)
    assert o.status == status and says in o.message, o.message
    if status == "rejected":
        assert o.diagnostics == [("2.3-7", "no such thing")]


def test_sub_group_code_on_a_device_without_sub_groups(tmp_path):
    impl = resolve(printing(tmp_path, SUB_GROUPS), ImplOptions(device="pocl"))
    try:
        o = impl.run(Job(KERNEL, ARGS), 60)
    finally:
        impl.close()
    assert o.status == "crashed", o.message
    assert "needs sub-groups (get_sub_group_local_id" in o.message
    assert "Portable Computing Language" in o.message and "use --device intel" in o.message
    assert "Traceback" not in o.message


def test_tlconform_timeout_reaches_a_spinning_kernel(tmp_path):
    """The tool: --timeout stops the case (our lowering with a spin loop put first), the run
    ends, and no worker is left."""
    spin = "s/^{$/{ volatile int tl_z = 0; while (tl_z == 0) {}/"
    compiler = (f"opencl-c:sh -c '{sys.executable} -m tlinterp.cli --emit opencl \"$1\" | "
                f"sed \"{spin.replace('$', chr(92) + '$')}\"' sh {{tl}}")
    report = tmp_path / "report.json"
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "fuzz.conform.cli", "--impl", compiler,
                        "--device", "pocl", "--filter", "valid/scalar/arith_f32",
                        "--timeout", "5", "--quiet", "--json", str(report)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert time.monotonic() - start < 60
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout, r.stderr
    assert '"timeout"' in report.read_text()


def test_a_worker_broken_by_earlier_jobs_does_not_blame_the_next(tmp_path):
    """A kernel that stores out of bounds may corrupt the worker's heap so that the NEXT job
    aborts in malloc (tinytc's code on Intel's runtime does): a worker that dies after
    earlier jobs is replaced and the job rerun once; only a death in a fresh worker counts.
    The earlier damage is played by killing the worker as the job is sent."""
    from tlgpu.runtime.foreign import ForeignJob, ForeignRunner
    from tlinterp import check, parse

    function = check(parse(KERNEL)).functions[0]
    runner = ForeignRunner("pocl")
    try:
        fine = ForeignJob("opencl-c", FINE, function, "f", args=ARGS)
        assert runner.run(fine, 60).status == "ok"
        (w,) = runner._idle
        send = w.call

        def die_first(job, timeout):
            os.kill(w.proc.pid, signal.SIGKILL)
            w.proc.wait()
            return send(job, timeout)

        w.call = die_first
        o = runner.run(fine, 60)
        assert o.status == "ok" and o.outputs["a"].tolist() == [0, 7, 2, 3]
        assert "in a fresh worker it did not" in o.message and "SIGKILL" in o.message
        # a job that kills a fresh worker too is the crash it is
        o = runner.run(ForeignJob("opencl-c", SEGV, function, "f", args=ARGS), 60)
        assert o.status == "crashed" and "signal" in o.message
        assert runner.restarts == 3
    finally:
        runner.close()


PAST_THE_END = HEAD + " { a[1] = 7.0f; a[4] = 9.0f; }"  # a has 4 elements


def test_a_store_past_an_argument_is_blamed_on_the_compilers_code(tmp_path):
    """Guard zones around the foreign kernel's buffers: one element written past the end is a
    failure that names the argument, never results (nor a worker corrupted for later jobs)."""
    impl = resolve(printing(tmp_path, PAST_THE_END), ImplOptions(device="pocl"))
    try:
        o = impl.run(Job(KERNEL, ARGS), 60)
        assert o.status == "failed", o.message
        assert "stored outside argument 'a'" in o.message and "4 byte(s) after its end" \
            in o.message and "the compiler's code did it" in o.message, o.message
        assert o.outputs is None
    finally:
        impl.close()
    ok = resolve(printing(tmp_path, FINE), ImplOptions(device="pocl"))
    try:
        assert ok.run(Job(KERNEL, ARGS), 60).status == "ok"  # within bounds: no complaint
    finally:
        ok.close()


def test_a_failed_foreign_build_leaves_no_source_file(tmp_path, monkeypatch):
    """pyopencl saves the source of a failed build to a temporary file (Intel's runtime and
    Oclgrind) and never removes it: a campaign against a compiler whose code does not build
    left thousands in /tmp. The build runs in this process here, with tempfile pointed at
    tmp_path."""
    import tempfile

    from tlgpu.runtime.kernel import ForeignCodeError, from_source
    from tlinterp import check, parse

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    function = check(parse(KERNEL)).functions[0]
    with pytest.raises(ForeignCodeError) as e:
        from_source(HEAD + " { a[1] = ; }", function, "f", "oclgrind")
    assert "source saved" not in e.value.format()
    assert list(tmp_path.iterdir()) == []
