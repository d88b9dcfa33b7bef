"""Triage of OpenCL findings: each class is planted and must be named; the simulated device
bug is reduced at the OpenCL C level and turned into a stand-alone reproducer.

The "device" is pocl wrapped so that it rewrites the source only when optimisation is on,
which is what a miscompiling optimiser looks like from outside. The case is the NVIDIA finding
of tests/data/nvidia-store-order (see its README)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import tlinterp
from fuzz.strategies import FuzzCase
from fuzz.triage import triage as T
from fuzz.triage.clexec import RewritingTarget, Target
from tlgpu import LoweringConfig
from tlinterp.io.args import load_npz

pytestmark = pytest.mark.opencl  # pocl and Oclgrind (pyopencl[pocl,oclgrind])

DATA = os.path.join(os.path.dirname(__file__), "data", "nvidia-store-order")
FINDING_CONFIG = LoweringConfig.from_overrides([
    "work_group_size=2,2", "max_work_group_size=1", "register_tiles=False", "max_tile=2",
    "local_staging_bytes=65536", "local_staging_min_reuse=8", "minimise_barriers=False",
    "group_pointers_as_ulong=True"])
# a mask miscompiled when optimising: `x & 3` becomes `x & 1`
SIMULATED = RewritingTarget("pocl", pattern=r"& \(\(long\)3L\)", replacement=r"& ((long)1L)")
FEW = {"defaults": {}}  # one alternative config keeps these tests fast


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's compiler-output warnings
        yield


def finding_case() -> FuzzCase:
    p = tlinterp.check(tlinterp.parse(open(os.path.join(DATA, "kernel.tl")).read(),
                                      "kernel.tl"))
    return FuzzCase(p, "k4", load_npz(os.path.join(DATA, "args.npz")), 3)


def case_of(source: str, func: str, args: dict, groups: int) -> FuzzCase:
    return FuzzCase(tlinterp.check(tlinterp.parse(source, "t.tl")), func, args, groups)


def test_simulated_device_bug_is_a_device_compiler_suspect():
    r = T.triage(finding_case(), FINDING_CONFIG, SIMULATED, alternatives=FEW)
    assert r.verdict == T.DEVICE, r.text()
    assert any("-cl-opt-disable" in run.what and run.agrees for run in r.runs)


def test_a_finding_that_does_not_reproduce_is_flaky():
    r = T.triage(finding_case(), FINDING_CONFIG, Target("pocl"), alternatives=FEW)
    assert r.verdict == T.FLAKY, r.text()


GEMM = """\
func @g(%a: memref<f32x4x3>, %b: memref<f32x3x2>, %c: memref<f32x4x2>) {
  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x4x3>, memref<f32x3x2>, f32, memref<f32x4x2>
}
"""


def test_a_planted_lowering_bug_is_our_lowering(monkeypatch):
    import tlgpu.lowering.collectives as lc
    from fuzz.mutants.registry import apply

    monkeypatch.setattr(lc, "problem", lc.problem)  # restored after the test
    apply("off-by-one-k")
    rng = np.random.default_rng(0)
    args = {"a": rng.integers(-3, 4, (4, 3)).astype(np.float32),
            "b": rng.integers(-3, 4, (3, 2)).astype(np.float32),
            "c": np.zeros((4, 2), np.float32)}
    r = T.triage(case_of(GEMM, "g", args, 1), None, Target("pocl"), alternatives=FEW)
    assert r.verdict == T.LOWERING, r.text()


ALLOCA = """\
func @u(%y: memref<i32x4>) {
  %t = alloca -> memref<i32x4>
  %gid = group_id
  store 7, %t[%gid] : memref<i32x4>
  %v = load %t[%gid] : memref<i32x4>
  store %v, %y[%gid] : memref<i32x4>
}
"""


def test_uninitialised_local_memory_read_by_the_lowering_is_ub(monkeypatch):
    import tlgpu.lowering.function as lf
    from tlinterp.lang import ir

    store = lf.LOWER[ir.Store]

    def lost_local_store(self, w, inst):  # the planted bug: stores to allocas vanish
        if self.view(inst.operand).space != "local":
            store(self, w, inst)

    monkeypatch.setitem(lf.LOWER, ir.Store, lost_local_store)
    case = case_of(ALLOCA, "u", {"y": np.zeros(4, np.int32)}, 4)
    r = T.triage(case, None, Target("pocl"), alternatives=FEW)
    assert r.verdict == T.UB, r.text()
    assert "Uninitialized" in r.reason or "uninitialized" in r.reason.lower(), r.text()


@pytest.mark.slow
def test_reduction_and_reproducer_of_the_simulated_device_bug(tmp_path):
    pytest.importorskip("lithium", reason="the reducer is the [triage] extra")
    from fuzz.triage import reproducer
    from fuzz.triage.clexec import Isolated, run_source
    from fuzz.triage.reduce import interesting_for, reduce_kernel, split_kernel
    from tlgpu.runtime.launch import BUILD_OPTIONS

    case = finding_case()
    prep = T.prepare(case, SIMULATED, FINDING_CONFIG)
    opts = tuple(BUILD_OPTIONS)
    runner = Isolated()
    try:
        test = interesting_for(prep, case, T.expected_outputs(case), SIMULATED,
                               Target("pocl"), Target("oclgrind"), opts, runner)
        t0 = time.time()
        red = reduce_kernel(prep.source, prep.kernel, test, time_limit=110, stop_at_lines=15)
        took = time.time() - t0
    finally:
        runner.close()
    assert red.body_lines <= 15, (took, red.source)
    assert took < 120
    assert len([ln for ln in split_kernel(red.source, prep.kernel)[1] if ln.strip()]) <= 15

    args = (prep.kernel, prep.function, case.args, case.groups, prep.geometry,
            prep.local_bytes, opts)
    ref = run_source(Target("pocl"), red.source, *args)
    act = run_source(SIMULATED, red.source, *args)
    out = reproducer.write(str(tmp_path / "repro"), red.source, prep, case, ref.outputs,
                           act.outputs, {"platform": "Portable Computing Language"}, opts,
                           "triage: device compiler suspect", red)
    assert set(os.listdir(out)) >= {"kernel.cl", "host.py", "args.json", "inputs.npz",
                                    "expected.npz", "actual.npz", "README.md"}
    assert "expected" in open(os.path.join(out, "README.md")).read()
    host = open(os.path.join(out, "host.py")).read()
    assert "tlgpu" not in host and "tlinterp" not in host and "fuzz" not in host
    # on the real pocl the stand-alone script gets the expected bytes
    r = subprocess.run([sys.executable, "host.py", "pocl"], cwd=out, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0"))
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


def test_nvidia_reproducer_expects_what_pocl_computes():
    """The reduced reproducer of the NVIDIA finding (kept in tests/data) is correct OpenCL
    whose expected bytes pocl computes; NVIDIA with optimisation differs (see README)."""
    repro = os.path.join(DATA, "repro")
    r = subprocess.run([sys.executable, "host.py", "pocl"], cwd=repro, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0"))
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


def test_triage_cli_rejects_a_missing_finding(tmp_path, capsys):
    from fuzz.campaign.cli import main

    assert main(["triage", str(tmp_path / "nothing")]) == 2
    assert "cannot read the finding" in capsys.readouterr().err


def test_triage_cli_writes_the_triage_next_to_the_finding(tmp_path, capsys):
    from fuzz.campaign.cli import main

    base = tmp_path / "mismatch-0"
    (base.with_suffix(".tl")).write_text(open(os.path.join(DATA, "kernel.tl")).read())
    (base.with_suffix(".npz")).write_bytes(open(os.path.join(DATA, "args.npz"), "rb").read())
    (base.with_suffix(".txt")).write_text(
        "tlrun mismatch-0.tl --args mismatch-0.npz --func k4 --groups 3 --backend opencl "
        "--device pocl --lowering work_group_size=2,2\n\ninterpreter vs OpenCL: ...\n")
    assert main(["triage", str(base) + ".tl", "--reduce-time", "5"]) == 0  # pocl is right
    assert "triage: flaky" in capsys.readouterr().out
    assert "flaky" in (tmp_path / "mismatch-0.triage.txt").read_text()


@pytest.mark.parametrize("first_line, argv, words", [
    ("tlrun mismatch-0.tl --args mismatch-0.npz --func k4 --groups 3 --backend opencl "
     "--device no-such-device", [], "no OpenCL device matches"),
    ("tlrun mismatch-0.tl --args mismatch-0.npz --func k4 --groups 3 --backend opencl",
     ["--device", "no-such-device"], "no OpenCL device matches"),
    ("garbage that is no command", [], "is not the tlfuzz reproduce"),
    ("", [], "is not the tlfuzz reproduce"),
])
def test_triage_cli_refuses_what_would_make_every_rerun_fail(tmp_path, capsys, first_line,
                                                             argv, words):
    """A device that does not exist, or a command line it cannot read, would make every
    rerun fail or run another kernel, and the verdict would say "flaky" (exit 0)."""
    from fuzz.campaign.cli import main

    base = tmp_path / "mismatch-0"
    (base.with_suffix(".tl")).write_text(open(os.path.join(DATA, "kernel.tl")).read())
    (base.with_suffix(".npz")).write_bytes(open(os.path.join(DATA, "args.npz"), "rb").read())
    (base.with_suffix(".txt")).write_text(first_line + "\n")
    assert main(["triage", str(base), "--reduce-time", "5", *argv]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "mismatch-0.triage.txt").exists()


def test_the_reduced_kernels_are_standard_opencl_c():
    """A reduced kernel must build as OpenCL C 1.2 on a strict front end (the reducer checks
    every candidate with reduce.strict_problem): GNU `a ?: b` is refused, the NVIDIA
    reproducer's kernel passes."""
    from fuzz.triage.reduce import strict_problem

    if shutil.which("clang-15") is None and shutil.which("clang") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs clang-15 (.ci/run)")
        pytest.skip("needs clang-15")
    with open(os.path.join(DATA, "repro", "kernel.cl")) as f:
        source = f.read()
    assert strict_problem(source) is None
    gnu = source.replace("tl_step6 > 0 ? 1 :", "tl_step6 > 0 ?:", 1)
    assert gnu != source and "GNU" in (strict_problem(gnu) or "")
