"""Triage of findings against another implementation, and `tlfuzz reproduce` as the
interestingness test a reducer runs.

The "external compiler" is our own lowering (`tlrun --emit opencl`) behind a wrapper script
that plants a bug in the C it prints: the gemm's K loop stops one short, always (your
compiler), only where the device compiler optimises (`__OPTIMIZE__`, which pocl defines
unless -cl-opt-disable and Oclgrind never does), on every other run (flaky), or together with
an out-of-bounds read Oclgrind reports (UB in the emitted code)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fuzz.campaign.cli import main as tlfuzz
from fuzz.campaign.harness import Finding, save_finding
from fuzz.triage import triage as T
from fuzz.triage.reproduce import load_case
from fuzz.triage.saved import triage_saved
from tlinterp.impl import ImplOptions

pytestmark = pytest.mark.opencl  # pocl and Oclgrind (pyopencl[pocl,oclgrind])

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "examples" / "small_gemm.tl"

WRAPPER = r'''
import os, re, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
mode = open(os.path.join(here, "plant")).read().strip()
env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
c = subprocess.run([sys.executable, "-m", "tlinterp.cli", sys.argv[1], "--emit", "opencl"],
                   capture_output=True, text=True, env=env, timeout=120)
if c.returncode:
    sys.stderr.write(c.stderr)
    sys.exit(c.returncode)
src, runs = c.stdout, os.path.join(here, "runs")
n = int(open(runs).read()) if os.path.exists(runs) else 0
open(runs, "w").write(str(n + 1))
short = r"\1 < \2 - 1;"  # the K loop of the gemm stops one short
if mode == "always" or (mode == "alternate" and n % 2 == 0):
    src, k = re.subn(r"(\w+) < (\w+K);", short, src)
elif mode == "optimised":
    src, k = re.subn(r"(\w+) < (\w+K);", r"\1 < TL_END(\2);", src)
    src = ("#ifdef __OPTIMIZE__\n#define TL_END(k) ((k) - 1)\n#else\n#define TL_END(k) (k)\n"
           "#endif\n" + src)
elif mode == "ub":  # and the accumulator starts from a read before the start of A
    src, k = re.subn(r"(\w+) < (\w+K);", short, src)
    src = re.sub(r"(tl_acc\w+\[r\]\[c\]) = 0;", r"\1 = 0 * v_a[-1];", src)
else:
    k = 1
if not k:
    sys.exit("the plant found no K loop")
print(src)
'''


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's compiler-output warnings
        yield


def external(tmp_path: Path, mode: str) -> str:
    """The spec of the wrapper compiler, planting `mode`."""
    d = tmp_path / "cc"
    d.mkdir(exist_ok=True)
    (d / "cc.py").write_text(f"ROOT = {str(ROOT)!r}\n" + WRAPPER)
    (d / "plant").write_text(mode)
    return f"opencl-c:{sys.executable} {d / 'cc.py'} {{tl}}"


def saved(tmp_path: Path, spec: str) -> str:
    """A mismatch finding against `spec`, saved as tlfuzz saves it; its NAME."""
    case = load_case(str(KERNEL), str(KERNEL.with_suffix(".npz")), "gemm", None)
    f = Finding(case, "mismatch", "interpreter vs the wrapper: ...",
                impl=(spec, ImplOptions(device="pocl")))
    return save_finding(f, str(tmp_path / "findings"))


def shell(line: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(line, shell=True, capture_output=True, text=True, env=env,
                          timeout=300)


def test_a_deterministic_bug_is_your_compiler_and_its_line_exits_1_until_fixed(tmp_path,
                                                                              capsys):
    spec = external(tmp_path, "always")
    base = saved(tmp_path, spec)
    assert tlfuzz(["triage", base]) == 1
    out = capsys.readouterr().out
    assert "triage: your compiler" in out and "-cl-opt-disable" in out, out
    assert "your compiler" in Path(base + ".triage.txt").read_text()
    # a finding of an external compiler gets its stand-alone report (tlfuzz report)
    report = Path(base + ".report")
    assert (report / "repro.sh").is_file() and (report / "host.py").is_file()
    assert '"kernel": "gemm"' in (report / "host.json").read_text()
    line = Path(base + ".txt").read_text().splitlines()[0]
    assert line.startswith("tlfuzz reproduce ") and "--impl 'opencl-c:" in line
    assert "--device pocl" in line
    r = shell(line)
    assert r.returncode == 1 and "differs from the reference" in r.stderr, r.stderr
    (tmp_path / "cc" / "plant").write_text("none")  # the compiler is fixed
    r = shell(line)
    assert r.returncode == 0 and "agrees" in r.stderr, r.stderr


def test_a_bug_only_under_optimisation_is_a_device_compiler_suspect(tmp_path, capsys):
    from fuzz.triage.impl import triage_impl

    case = load_case(str(KERNEL), str(KERNEL.with_suffix(".npz")), "gemm", None)
    r = triage_impl(case, external(tmp_path, "optimised"), ImplOptions(device="pocl"))
    assert r.verdict == T.DEVICE, r.text()
    by = {run.what: run for run in r.runs}
    assert by["pocl, same code as built"].agrees is False
    assert by["pocl, -cl-opt-disable"].agrees and by["oclgrind"].agrees
    # from the saved finding: the emitted code becomes a reproducer with the finding's line
    base = saved(tmp_path, external(tmp_path, "optimised"))
    assert tlfuzz(["triage", base, "--reduce-time", "5"]) == 1
    assert "triage: device compiler suspect" in capsys.readouterr().out
    readme = Path(base + ".repro", "README.md").read_text()
    assert "__OPTIMIZE__" in Path(base + ".repro", "kernel.cl").read_text()
    assert Path(base + ".txt").read_text().splitlines()[0] in readme


def test_a_bug_on_some_runs_is_flaky_also_in_a_campaign(tmp_path):
    spec = external(tmp_path, "alternate")
    base = saved(tmp_path, spec)
    (tmp_path / "cc" / "runs").write_text("0")  # the triage's first rerun plants, the next not
    case = load_case(base + ".tl", base + ".npz", None, None)
    finding = Finding(case, "mismatch", "...", impl=(spec, ImplOptions(device="pocl")))
    assert triage_saved(finding, base, 5) == "flaky"
    text = Path(base + ".triage.txt").read_text()
    assert "triage: flaky" in text and "reruns of the implementation agree" in text


def test_an_out_of_bounds_read_in_the_emitted_code_is_ub(tmp_path):
    from fuzz.triage.impl import triage_impl

    case = load_case(str(KERNEL), str(KERNEL.with_suffix(".npz")), "gemm", None)
    r = triage_impl(case, external(tmp_path, "ub"), ImplOptions(device="pocl"))
    assert r.verdict == T.EMITTED_UB, r.text()
    assert "Oclgrind reports" in r.reason


def test_reproduce_exit_statuses(tmp_path, capsys):
    kernel = ["reproduce", str(KERNEL), "--args", str(KERNEL.with_suffix(".npz")), "--func",
              "gemm"]
    assert tlfuzz(kernel + ["--impl", "interp"]) == 0
    rejects = f"opencl-c:{sys.executable} -c 'import sys; sys.exit(2)' {{tl}}"
    assert tlfuzz(kernel + ["--impl", rejects]) == 4
    crashes = f"opencl-c:{sys.executable} -c 'import sys; sys.exit(7)' {{tl}}"
    assert tlfuzz(kernel + ["--impl", crashes]) == 5
    assert tlfuzz(kernel) == 2  # no implementation
    assert tlfuzz(kernel + ["--impl", "no-such-impl"]) == 2
    assert tlfuzz(["reproduce", str(tmp_path / "nothing")]) == 2
    assert tlfuzz(kernel + ["--impl", "opencl", "--device", "no-such-device"]) == 2
    (tmp_path / "bin.tl").write_bytes(b"\xb6\xff")
    assert tlfuzz(["reproduce", str(tmp_path / "bin.tl"), "--args",
                   str(KERNEL.with_suffix(".npz")), "--impl", "interp"]) == 2
    (tmp_path / "bad.txt").write_text("tlfuzz reproduce bad.tl --groups many\n")
    assert tlfuzz(["reproduce", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "give the implementation under test" in err
    assert "no OpenCL device matches" in err and "is not UTF-8 text" in err
    assert "the first line of" in err


def test_code_oclgrind_cannot_build_is_said_so_and_counts_for_nothing(tmp_path):
    """The group's pointer array as `global float*global*`: OpenCL C 1.2 (Oclgrind) forbids
    pointers to pointers, pocl builds it."""
    from fuzz.triage.impl import triage_impl

    fused = ROOT / "examples" / "fused_kernel.tl"
    case = load_case(str(fused), str(fused.with_suffix(".npz")), None, None)
    r = triage_impl(case, external(tmp_path, "always"), ImplOptions(device="pocl"))
    assert r.verdict == T.YOURS, r.text()
    assert any(n.startswith("Oclgrind cannot run this code (") and "pointer to a pointer" in n
               for n in r.notes), r.notes
    assert "Oclgrind" not in r.reason


def test_failed_builds_leave_no_source_files(tmp_path, monkeypatch):
    """pyopencl saves the source of a failed build to a temporary file (seen with Oclgrind);
    triage removes it."""
    import tempfile

    from fuzz.triage.clexec import Target, run_source
    from fuzz.triage.reproduce import load_case

    case = load_case(str(KERNEL), str(KERNEL.with_suffix(".npz")), "gemm", None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where pyopencl writes it
    out = run_source(Target("oclgrind"), "kernel void gemm(global float* x) { x[0] = ; }", "gemm",
                     case.program.function("gemm"), case.args, case.groups, None)
    assert out.outputs is None and "error" in out.error and "source saved" not in out.error
    assert list(tmp_path.iterdir()) == []
