"""`opencl-c:COMMAND`: an external compiler emitting OpenCL C, built and launched by us, is
checked on the whole corpus, a planted bug fails exactly its cases and the fuzzer finds and
shrinks it; broken compilers are per-case results. And `tlgpu.compile`: compile once, launch
many."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.campaign.harness import save_finding
from fuzz.campaign.hunt import HuntOptions, hunt
from fuzz.conform.cli import main as tlconform
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import ImplOptions, Job, resolve

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

ROOT = Path(__file__).resolve().parent.parent
EMIT = f"{sys.executable} -m tlinterp.cli --emit opencl {{tl}}"
XOR_BUG = "s/ ^ / | /"  # xor becomes or: exactly the integer arith_* kernels use `^`
XOR_CASES = {f"valid/scalar/arith_{t}" for t in
             ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index")}


@pytest.fixture(scope="module")
def lowered_dir(tmp_path_factory) -> Path:
    """OpenCL C of every corpus kernel that checks, named by the SHA-1 of its source, so that a
    tiny shell 'compiler' can emit it without a Python start per case."""
    d = tmp_path_factory.mktemp("lowered")
    for case in load_corpus(default_corpus()):
        if case.lang != "v0.3":  # the lowering's language
            continue
        try:
            program = tlinterp.check(tlinterp.parse(case.source(), lang=case.lang))
            code = tlgpu.lower(program)
        except tlinterp.TLError:  # invalid, or v0.4 code the lowering does not take yet
            continue
        digest = hashlib.sha1(case.kernel.read_bytes()).hexdigest()
        (d / f"{digest}.cl").write_text(code)
    return d


def cached_compiler(d: Path, sed: str = "") -> str:
    """`opencl-c:` over a shell script that prints the stored lowering of {tl}, or exits 2 (a
    rejection, with the diagnostic that makes it one) for a program it has none for."""
    script = (f'f={d}/$(sha1sum < "$1" | cut -c1-40).cl; test -f "$f" || '
              '{ echo "$1:1.1-2: no lowering stored" >&2; exit 2; }; cat "$f"')
    if sed:
        script += f' | sed "{sed}"'
    return f"opencl-c:sh -c '{script}' sh {{tl}}"


def test_whole_corpus_through_a_compiler_that_emits_opencl_c(lowered_dir):
    """Every valid and invalid case (undefined behaviour is informational here and would only
    cost builds)."""
    # v0.3 only: the lowering does not take v0.4 kernels yet
    cases = [c for c in load_corpus(default_corpus())
             if c.kind != "undefined" and c.lang == "v0.3"]
    verdicts = run_all(resolve(cached_compiler(lowered_dir)), cases)
    failures = [f"{v.case.id}: {v.detail}" for v in verdicts if v.status == "fail"]
    assert not failures, "\n".join(failures)
    assert sum(v.outcome.status == "rejected" for v in verdicts) == \
        sum(c.kind == "invalid" for c in cases)


def test_tlrun_emit_opencl_as_the_external_compiler():
    verdicts = run_all(resolve(f"opencl-c:{EMIT}"),
                       load_corpus(default_corpus(), "valid/groups")[:3])
    assert [v.status for v in verdicts] == ["pass"] * 3, [v.detail for v in verdicts]
    (v,) = run_all(resolve(f"opencl-c:{EMIT}"),
                   load_corpus(default_corpus(), "invalid/")[:1])
    assert v.status == "pass" and v.outcome.status == "rejected"


def test_a_planted_bug_fails_exactly_its_cases(lowered_dir):
    verdicts = run_all(resolve(cached_compiler(lowered_dir, XOR_BUG)),
                       load_corpus(default_corpus(), "valid/scalar/[ab]*"))
    assert {v.case.id for v in verdicts if v.status == "fail"} == XOR_CASES
    for v in verdicts:
        if v.status == "fail":
            assert v.reproduce.startswith("tlfuzz reproduce ") and XOR_BUG in v.reproduce
    # the line is an interestingness test: it exits 1 while the case's outputs differ
    line = next(v.reproduce for v in verdicts if v.status == "fail")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(line, shell=True, capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=120)
    assert r.returncode == 1 and "differs from the reference" in r.stderr, r.stderr


@pytest.mark.parametrize("command, status, says", [
    ("sh -c 'kill -SEGV $$' sh {tl}", "crashed", "SIGSEGV"),
    ("sh -c 'echo not a compiler >&2; exit 1' sh {tl}", "crashed", "not a compiler"),
    ("sh -c 'sleep 30' sh {tl}", "timeout", "no answer within"),
    ("echo this is not C {tl}", "crashed", "does not build"),
    ("true {tl}", "crashed", "wrote no OpenCL C"),
    ("true {tl} {out}", "crashed", "wrote no OpenCL C to {out}"),
    ("sh -c 'echo \"kernel void other(global int* x) {}\"' sh {tl}", "crashed",
     "has no kernel"),
])
def test_broken_compilers_are_per_case_results(command, status, says, tmp_path):
    case = load_corpus(default_corpus(), "valid/groups")[:1]
    # 1 s for the compiler that sleeps; the others end by themselves, but a build on a loaded
    # machine (a CI run on 2 cores) may take more than 1 s before it finds no kernel
    timeout = 1 if status == "timeout" else 30
    (v,) = run_all(resolve(f"opencl-c:{command}"), case, timeout=timeout)
    assert v.status == "fail" and v.outcome.status == status, v.outcome.message
    assert says in v.outcome.message
    log = tmp_path / "log"
    assert tlconform(["--impl", f"opencl-c:{command}", "--filter", case[0].id, "--quiet",
                      "--timeout", str(timeout), "--log", str(log)]) == 1
    assert "Traceback" not in log.read_text()


def test_tlrun_reports_a_broken_compiler_without_traceback(tmp_path):
    case = load_corpus(default_corpus(), "valid/groups")[0]
    r = subprocess.run([sys.executable, "-m", "tlinterp.cli", str(case.kernel), "--args",
                        str(case.args_path), "--backend", "opencl-c:echo not C {tl}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 1 and "does not build" in r.stderr and "Traceback" not in r.stderr


def test_work_group_size_without_reqd_attribute(tmp_path):
    src = ("func @inc(%a: memref<i32x4>, %b: memref<i32x4>) {\n"
           "  foreach %i = 0, 4 {\n"
           "    %x = load %a[%i] : memref<i32x4>\n"
           "    %y = load %b[%i] : memref<i32x4>\n"
           "    %z = arith.add %x, %y : i32\n"
           "    store %z, %b[%i] : memref<i32x4>\n"
           "  }\n}\n")
    program = tlinterp.check(tlinterp.parse(src))
    code = tlgpu.lower(program)
    plain = re.sub(r"__attribute__\(\(reqd_work_group_size\([^)]*\)\)\)", "", code)
    assert "reqd_work_group_size" not in plain
    cl = tmp_path / "k.cl"
    cl.write_text(plain)
    kernel = tmp_path / "k.tl"
    kernel.write_text(src)
    job = Job(src, {"a": np.ones(4, np.int32), "b": np.arange(4, dtype=np.int32)},
              filename="k.tl", program=program)
    spec = f"opencl-c:sh -c 'cat {cl}' sh {{tl}}"
    no_size = resolve(spec).run(job)
    assert no_size.status == "crashed" and "--work-group-size" in no_size.message
    wg = code.split("reqd_work_group_size(")[1].split(",")[0]  # what the code assumes
    sized = resolve(spec, ImplOptions(work_group_size=f"{wg}x1")).run(job)
    assert sized.status == "ok", sized.message
    assert sized.outputs["b"].tolist() == [1, 2, 3, 4]


def test_fuzzer_finds_and_shrinks_a_bug_of_an_external_compiler(tmp_path):
    # the group id comes out even: any kernel using it with 2+ work-groups differs
    bug = "s/get_global_id(2)/(get_global_id(2) \\& ~1)/"
    spec = f"opencl-c:sh -c '{sys.executable} -m tlinterp.cli --emit opencl \"$1\" | " \
           f"sed \"{bug}\"' sh {{tl}}"
    impl = resolve(spec, ImplOptions(device="pocl"))
    opts = HuntOptions(device="pocl", batch=2, shrink_time=4, impl=(impl.spec, impl.options),
                       timeout=60)
    start = time.monotonic()
    findings = hunt(opts, seed=1, max_batches=40, stop_at=time.time() + 50)
    assert findings, "the planted bug was not found"
    assert time.monotonic() - start < 60 + 10
    f = findings[0]
    assert f.kind == "mismatch" and f.case.groups >= 2
    base = save_finding(f, str(tmp_path))
    first, alone = Path(base + ".txt").read_text().splitlines()[:2]
    assert first.startswith("tlfuzz reproduce ") and "--impl 'opencl-c:" in first
    assert "sed" in first and alone.startswith("run it alone: tlrun ")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    rerun = subprocess.run(first, shell=True, capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=120)
    assert rerun.returncode == 1, rerun.stderr  # the implementation still differs
    rerun = subprocess.run(alone.split(": ", 1)[1], shell=True, capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=120)
    assert rerun.returncode == 0, rerun.stderr  # tlrun runs it; the outputs differ


def test_compile_once_launch_many_equals_run():
    src = ("func @mm(%A: memref<f32x8x8x?>, %B: memref<f32x8x8>, %C: memref<f32x8x8x?>) {\n"
           "  %g = group_id\n"
           "  %a = subview %A[:,:,%g] : memref<f32x8x8x?>\n"
           "  %c = subview %C[:,:,%g] : memref<f32x8x8x?>\n"
           "  gemm.n.n 1.0, %a, %B, 0.0, %c : f32, memref<f32x8x8>, memref<f32x8x8>, f32, "
           "memref<f32x8x8>\n}\n")
    program = tlinterp.check(tlinterp.parse(src))
    rng = np.random.default_rng(0)
    args = {"A": rng.integers(-3, 4, (8, 8, 5)).astype(np.float32),
            "B": rng.integers(-3, 4, (8, 8)).astype(np.float32),
            "C": np.zeros((8, 8, 5), np.float32)}
    kernel = tlgpu.compile(program, "mm", device="pocl")
    binding = kernel.bind(args, groups=5)
    times = [kernel.launch(binding).seconds for _ in range(100)]
    out = binding.read()
    expected = tlgpu.run(program, args, func="mm", groups=5, device="pocl")
    assert set(out) == set(expected)
    for k in out:
        np.testing.assert_array_equal(out[k], expected[k])
    assert len(times) == 100 and all(t > 0 for t in times)
    print(f"tlgpu.compile: median launch {sorted(times)[50] * 1e6:.1f} us over 100 launches")
