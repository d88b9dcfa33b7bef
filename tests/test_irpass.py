"""`ir:COMMAND`: an IR pass validated by running the program it writes on the interpreter.
The passes here are stand-ins written as small Python scripts (never tinytc): one that copies
the program, one that folds `add` wrongly, one that drops barriers, one that prints garbage,
one that hangs, and a few more ways a pass can go wrong."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.harness import differential_impl, save_finding
from fuzz.campaign.hunt import HuntOptions, hunt
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from fuzz.strategies import FuzzCase
from tlinterp.impl import ImplOptions, Job, resolve

ROOT = Path(__file__).resolve().parent.parent

# a kernel that needs its barrier: each work-item reads the element another one stored
REVERSE = """\
func @rev(%A: memref<f32 x 32>) attributes{subgroup_size=16, work_group_size=[32, 1]} {
    %L = alloca : memref<f32 x 32, local>
    parallel {
        %k = subgroup_local_id : i32
        %s = subgroup_linear_id : i32
        %c16 = constant 16 : i32
        %base = mul %s, %c16 : i32
        %g = add %base, %k : i32
        %ki = cast %g : index
        %a = load %A[%ki] : f32
        store %a, %L[%ki]
        barrier.local
        %c31 = constant 31 : index
        %r = sub %c31, %ki : index
        %b = load %L[%r] : f32
        store %b, %A[%ki]
    }
}
"""

FOLDABLE = """\
func @fold(%A: memref<i32 x 2>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %two = constant 2 : i32
    %three = constant 3 : i32
    %s = add %two, %three : i32
    store %s, %A[%c0]
    %t = mul %two, %three : i32
    store %t, %A[%c1]
}
"""

IDENTITY = "import sys\nsys.stdout.write(open(sys.argv[1]).read())\n"

# constant propagation with a wrong rule for add: a + b + 1
WRONG_FOLD = r"""
import re, sys
text = open(sys.argv[1]).read()
consts = dict(re.findall(r"(%\w+) = constant (-?\d+) : i32", text))
def fold(m):
    a, b = consts.get(m.group(2)), consts.get(m.group(3))
    if a is None or b is None:
        return m.group(0)
    return f"{m.group(1)} = constant {int(a) + int(b) + 1} : i32"
sys.stdout.write(re.sub(r"(%\w+) = add (%\w+), (%\w+) : i32", fold, text))
"""

NO_BARRIERS = ("import sys\nsys.stdout.write(''.join(l for l in open(sys.argv[1]) "
               "if 'barrier' not in l))\n")

GARBAGE = "print('this is not a program ~~~')\n"


def script(tmp_path: Path, name: str, body: str) -> str:
    """An `ir:` spec running the Python script `body` on {tl}."""
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return f"ir:{sys.executable} {path} {{tl}}"


def job(text: str, **args) -> Job:
    return Job(text, args, filename="k.tl")


def rev_args() -> dict:
    return {"A": np.arange(32, dtype=np.float32)}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                        os.environ.get("PYTHONPATH", "")]))


def test_identity_pass_passes_the_corpus(tmp_path):
    """v0.3 and v0.4 cases alike: the copy is the program, so every valid case passes."""
    every = load_corpus(default_corpus())
    cases = [c for c in every if c.id.startswith((
        "valid/scalar/arith_i32", "valid/blas/gemm_f32_canonical", "valid/v04/for_init_yield",
        "valid/v04/barrier_local_reverse", "valid/v04/subgroup_ops_i32",
        "valid/v04/cumsum"))] + [c for c in every if c.kind == "invalid"][:3]
    assert {c.lang for c in cases} == {"v0.3", "v0.4"}
    assert any(c.kind == "invalid" for c in cases)
    verdicts = run_all(resolve(script(tmp_path, "identity", IDENTITY)), cases, timeout=60)
    failures = [f"{v.case.id}: {v.detail}" for v in verdicts
                if v.status == "fail" and v.case.kind == "valid"]
    assert not failures, "\n".join(failures)
    # a copy checks nothing: an invalid program goes through, which fails its case
    assert all(v.status == "fail" and "ran to completion" in v.detail
               for v in verdicts if v.case.kind == "invalid")


def test_identity_pass_gives_the_interpreters_outputs(tmp_path):
    o = resolve(script(tmp_path, "identity", IDENTITY)).run(job(REVERSE, **rev_args()))
    assert o.status == "ok", o.message
    assert o.outputs["A"].tolist() == list(range(31, -1, -1))
    assert o.message == ""  # no difference to tell


def test_a_wrong_fold_is_a_mismatch(tmp_path):
    impl = resolve(script(tmp_path, "wrongfold", WRONG_FOLD))
    program = tlinterp.check(tlinterp.parse(FOLDABLE, "fold.tl"))
    case = FuzzCase(program, "fold", {"A": np.zeros(2, np.int32)}, 1)
    findings = differential_impl([case], impl, timeout=60)
    assert [f.kind for f in findings] == ["mismatch"]
    assert "A" in findings[0].message
    o = impl.run(job(FOLDABLE, A=np.zeros(2, np.int32)))
    assert o.outputs["A"].tolist() == [6, 6]  # 2 + 3 folded to 6, the mul left alone
    assert "differ from the original's in A" in o.message


def test_a_dropped_barrier_is_a_data_race_of_the_rewritten_program(tmp_path):
    o = resolve(script(tmp_path, "nobarrier", NO_BARRIERS)).run(job(REVERSE, **rev_args()))
    assert o.status == "failed"
    assert "data-race" in o.ub_kinds
    first = o.message.splitlines()[0]
    assert first == ("the rewritten program has undefined behaviour: data-race at 14.9-30 "
                     "(the original program has none)")
    assert "rewritten.tl:14.9-30: data race" in o.message


def test_garbage_is_a_crash_quoting_the_checker(tmp_path):
    o = resolve(script(tmp_path, "garbage", GARBAGE)).run(job(REVERSE, **rev_args()))
    assert o.status == "crashed"
    assert o.message.startswith("the rewritten program is not valid v0.4:\n"
                                "rewritten.tl:1.1-4: expected 'func' or end of input")
    assert "this is not a program" in o.message  # the line, quoted under the diagnostic


def test_a_rule_broken_by_the_pass_is_a_crash(tmp_path):
    # the store's value loses its definition
    body = ("import sys\nsys.stdout.write(''.join(l for l in open(sys.argv[1]) "
            "if '%a = load' not in l))\n")
    o = resolve(script(tmp_path, "undefined", body)).run(job(REVERSE, **rev_args()))
    assert o.status == "crashed"
    assert o.message.startswith("the rewritten program is not valid v0.4:\n"
                                "rewritten.tl:10.15-16: %a is not defined")


def test_a_changed_signature_is_a_crash(tmp_path):
    body = ("import sys\nsys.stdout.write(open(sys.argv[1]).read()"
            ".replace('%A', '%B'))\n")
    o = resolve(script(tmp_path, "rename", body)).run(job(REVERSE, **rev_args()))
    assert o.status == "crashed"
    assert o.message.startswith("the pass changed the signature of @rev: (%A: memref<f32x32>)"
                                " became (%B: memref<f32x32>)")


def test_a_hanging_pass_times_out_and_leaves_nothing_running(tmp_path):
    pidfile = tmp_path / "child.pid"
    body = textwrap.dedent(f"""\
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(300)
        """)
    start = time.monotonic()
    o = resolve(script(tmp_path, "hang", body)).run(job(REVERSE, **rev_args()), timeout=3)
    assert time.monotonic() - start < 30
    assert o.status == "timeout"
    assert "no answer within 3 s (killed)" in o.message
    pid = int(pidfile.read_text())
    for _ in range(50):  # SIGKILL is delivered at once; reaping by init may take a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as f:  # a zombie no longer runs
            if f.read().split(") ")[1].startswith("Z"):
                break
        time.sleep(0.1)
    else:
        pytest.fail(f"the pass's child {pid} is still running")
    assert not list(tmp_path.glob("tl-ir-*"))


def test_a_rejection_needs_a_reject_status_and_a_diagnostic(tmp_path):
    body = "import sys\nprint(sys.argv[1] + ':3.5-9: not supported', file=sys.stderr)\nexit(1)\n"
    spec = script(tmp_path, "reject", body)
    o = resolve(spec, ImplOptions(reject_status=(1,))).run(job(REVERSE, **rev_args()))
    assert o.status == "rejected" and o.diagnostics == [("3.5-9", "not supported")]
    assert o.message.startswith("k.tl:3.5-9: not supported")  # no scratch directory
    o = resolve(spec).run(job(REVERSE, **rev_args()))  # 1 is no reject status by default
    assert o.status == "crashed" and o.message.startswith("the pass ended with exit status 1")


def test_a_pass_that_accepts_an_invalid_program_gives_no_outputs(tmp_path):
    bad = REVERSE.replace("store %b, %A[%ki]", "store %nothing, %A[%ki]")
    o = resolve(script(tmp_path, "identity", IDENTITY)).run(job(bad, **rev_args()))
    assert o.status == "ok" and o.outputs == {}
    assert "accepted" in o.message


def test_the_pass_runs_with_bounded_memory(tmp_path):
    body = "x = bytearray(6 << 30)\nprint(len(x))\n"
    o = resolve(script(tmp_path, "hog", body)).run(job(REVERSE, **rev_args()), timeout=60)
    assert o.status == "crashed"
    assert "MemoryError" in o.message


def test_out_placeholder_and_empty_output(tmp_path):
    body = "import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2])\n"
    path = tmp_path / "copy.py"
    path.write_text(body)
    o = resolve(f"ir:{sys.executable} {path} {{tl}} {{out}}").run(job(REVERSE, **rev_args()))
    assert o.status == "ok", o.message
    o = resolve(script(tmp_path, "silent", "pass\n")).run(job(REVERSE, **rev_args()))
    assert o.status == "crashed" and "wrote no program to stdout" in o.message


def test_tlrun_reports_a_broken_pass_without_traceback(tmp_path):
    kernel = tmp_path / "rev.tl"
    kernel.write_text(REVERSE)
    np.savez(tmp_path / "rev.npz", **rev_args())
    env = _env()
    for name, body, says in (("nobarrier", NO_BARRIERS, "data-race at 14.9-30"),
                             ("garbage", GARBAGE, "is not valid v0.4")):
        r = subprocess.run([sys.executable, "-m", "tlinterp.cli", str(kernel), "--args",
                            str(tmp_path / "rev.npz"), "--impl", script(tmp_path, name, body)],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 1, r.stderr
        assert says in r.stderr and "Traceback" not in r.stderr


def test_the_fuzzer_finds_a_wrong_pass(tmp_path):
    """tlfuzz --impl ir:...: generated (v0.3) kernels through a pass that turns the first
    subtraction into an addition."""
    body = ("import sys\nsys.stdout.write(open(sys.argv[1]).read()"
            ".replace('arith.sub', 'arith.add', 1))\n")
    impl = resolve(script(tmp_path, "subadd", body))
    opts = HuntOptions(batch=2, shrink_time=4, impl=(impl.spec, impl.options), timeout=60,
                       params={"scalar_weights": {"sub": 50}})
    findings = hunt(opts, seed=3, max_batches=30, stop_at=time.time() + 60)
    assert findings and findings[0].kind == "mismatch", findings
    assert "arith.sub" in findings[0].case.source
    base = save_finding(findings[0], str(tmp_path / "found"))
    first = Path(base + ".txt").read_text().splitlines()[0]
    assert first.startswith("tlfuzz reproduce ") and "--impl 'ir:" in first
    rerun = subprocess.run(first, shell=True, capture_output=True, text=True, cwd=tmp_path,
                           env=_env(), timeout=120)
    assert rerun.returncode == 1, rerun.stderr  # the pass still miscompiles it


@pytest.mark.parametrize("spec", ["ir:mypass {tl}", "spirv:mycc {tl} -o {out}",
                                  "opencl-c:mycc {tl}"])
def test_findings_of_compilers_with_placeholders_save(spec, tmp_path):
    """Their specs hold placeholders but are no command templates (`{tl}` is no template
    field): saving their findings must not read them as templates."""
    from fuzz.campaign.findings import Finding

    program = tlinterp.check(tlinterp.parse(FOLDABLE, "fold.tl"))
    case = FuzzCase(program, "fold", {"A": np.zeros(2, np.int32)}, 1)
    base = save_finding(Finding(case, "mismatch", "differs", impl=(spec, ImplOptions())),
                        str(tmp_path))
    text = Path(base + ".txt").read_text()
    assert "the command alone" not in text and spec in text


def test_a_rejected_v04_instruction_is_named_in_its_finding():
    """A rejection pointing at an instruction only v0.4 has (`constant`) named it with the
    v0.3 printer, which raised: the campaign's child died instead of saving the finding."""
    from fuzz.campaign.rejections import construct_of

    program = tlinterp.check(tlinterp.parse(FOLDABLE, "fold.tl"))
    assert construct_of(program, "fold.tl:4.5-30: not supported") == \
        "constant: not supported"
    assert construct_of(program, "fold.tl:6.5-30: no") == "arith.add: no"
    # the details of one complaint (shapes) do not make another construct
    assert construct_of(program, "fold.tl:6.5-30: Incompatible tensor shapes (Got A=1x1)") \
        == construct_of(program, "fold.tl:6.5-30: Incompatible tensor shapes (Got a=4, b=?)") \
        == "arith.add: Incompatible tensor shapes"
