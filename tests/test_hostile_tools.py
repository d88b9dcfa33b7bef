"""Hostile inputs to the OpenCL path of `tlrun`, to `tlfuzz` and to `tlconform`: every case
ends with its documented exit status, no traceback, the input files intact and bounded time.

Covers: undefined behaviour on the device (a crash of the OpenCL implementation, stores next
to an argument, member loads and group counts checked before the launch), compiler noise
hidden unless -v, the build/kernel/device report with --repeat, Ctrl-C during a long launch;
tlfuzz option validation and where Hypothesis writes; tlconform Ctrl-C, piped output, .ir
sources and the JSON report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fuzz.campaign.cli import main as tlfuzz
from fuzz.conform.cli import main as tlconform
from fuzz.shutdown import descendants

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fused_kernel"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

STORE = """func @k(%a: memref<f32x4>, %n: index) {
  %x = load %a[0] : memref<f32x4>
  store %x, %a[%n] : memref<f32x4>
}
"""
SPIN = """func @spin(%out: memref<i64x1>, %n: i64) {
  for %i = 0, %n : i64 {
    %s = load %out[0] : memref<i64x1>
    %t = arith.add %s, %i : i64
    store %t, %out[0] : memref<i64x1>
  }
}
"""


def tool(module: str, *argv, env=None, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *map(str, argv)], env=env or ENV,
                          capture_output=True, text=True, timeout=timeout, **kw)


def clean(p: subprocess.CompletedProcess, status: int) -> str:
    text = p.stderr + p.stdout
    assert p.returncode == status, text
    assert "Traceback" not in text
    return text


def store_case(tmp_path: Path, n: int) -> tuple[Path, Path]:
    kernel, args = tmp_path / "store.tl", tmp_path / "store.npz"
    kernel.write_text(STORE)
    np.savez(args, a=np.arange(4, dtype=np.float32), n=np.int64(n))
    return kernel, args


# --- tlrun --backend opencl ------------------------------------------------------------------

OPENCL_CASES = {  # id: (extra argv or a store index, exit status, message)
    "readme-ub-groups-9": (["--groups", "9"], 1,
                           "out of bounds: work-group 4 loads member 4 of %A, which has 4"),
    "groups-31-digits": (["--groups", "1" * 31], 2, "work-groups must be in"),
    "repeat-0": (["--repeat", "0"], 2, "--repeat must be >= 1"),
    "store-index-6": (6, 1, "stored outside argument 'a' on the device (4 byte(s) after"),
    "store-index-minus-3": (-3, 1, "stored outside argument 'a' on the device (4 byte(s) "
                                   "before"),
    "store-far-away": (1 << 40, 1, "the OpenCL implementation crashed (signal"),
}


@pytest.mark.opencl
@pytest.mark.parametrize("case", OPENCL_CASES, ids=list(OPENCL_CASES))
def test_tlrun_opencl_hostile(tmp_path, case):
    extra, status, message = OPENCL_CASES[case]
    if isinstance(extra, int):
        kernel, args = store_case(tmp_path, extra)
        extra = []
    else:
        kernel, args = tmp_path / "k.tl", tmp_path / "k.npz"
        shutil.copy(EXAMPLE.with_suffix(".tl"), kernel)
        shutil.copy(EXAMPLE.with_suffix(".npz"), args)
    before = args.read_bytes()
    out = tmp_path / "out.npz"
    start = time.monotonic()
    p = tool("tlinterp.cli", kernel, "--args", args, "--backend", "opencl", "--out", out, *extra)
    assert message in clean(p, status)
    assert time.monotonic() - start < 30
    assert args.read_bytes() == before and not out.exists()


@pytest.mark.opencl
def test_tlrun_opencl_reports_times_and_hides_compiler_noise(tmp_path):
    # this kernel makes pocl's compiler warn; an uncached build shows the warnings
    base = ROOT / "corpus" / "valid" / "control" / "for_step"
    argv = [base.with_suffix(".tl"), "--args", f"{base}.args.npz", "--backend", "opencl"]
    env = {**ENV, "POCL_KERNEL_CACHE": "0"}
    quiet = clean(tool("tlinterp.cli", *argv, env=env), 0)
    assert "warning" not in quiet.lower()
    assert "device Portable Computing Language" in quiet
    assert "build " in quiet and "kernel " in quiet
    loud = clean(tool("tlinterp.cli", *argv, "-v", "--repeat", "3", env=env), 0)
    assert "warnings generated" in loud and "CompilerWarning" in loud
    assert "ms median" in loud and "min of 3" in loud


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for_children(proc: subprocess.Popen, pattern: str, limit: float = 20) -> list[int]:
    """Our child's descendants once one whose command line contains `pattern` runs."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pids = descendants(proc.pid)
        for pid in pids:
            try:
                if pattern in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    return pids
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError(f"no '{pattern}' process started")


@pytest.mark.opencl
def test_tlrun_ctrl_c_stops_a_long_launch(tmp_path):
    kernel, args = tmp_path / "spin.tl", tmp_path / "spin.npz"
    kernel.write_text(SPIN)
    np.savez(args, out=np.zeros(1, np.int64), n=np.int64(10**12))
    # started as a terminal starts it: Ctrl-C not ignored (an ignored SIGINT is inherited, and
    # some earlier test in the same pytest process can leave it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "tlinterp.cli", str(kernel), "--args",
                             str(args), "--backend", "opencl", "--groups", "64"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    kids = _wait_for_children(proc, "tlgpu.runtime.isolated")
    time.sleep(1.5)  # let the build finish and the launch start
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert time.monotonic() - start < 5
    assert proc.returncode == 130 and "Traceback" not in err and "interrupted" in err
    assert not any(_alive(k) for k in kids)


@pytest.mark.opencl
@pytest.mark.parametrize("backend", ["opencl", "opencl-c"])
def test_tlrun_timeout_stops_a_run_that_never_ends(tmp_path, backend):
    """--timeout bounds a run on --backend opencl (the child process) and on another
    implementation (its worker): exit 1 saying so, nothing left running."""
    kernel, args = tmp_path / "spin.tl", tmp_path / "spin.npz"
    kernel.write_text(SPIN)
    np.savez(args, out=np.zeros(1, np.int64), n=np.int64(2**62))
    spec = "opencl"
    if backend == "opencl-c":  # our lowering's C, as another compiler would hand it over
        script = tmp_path / "cc.sh"
        script.write_text(
            f"#!/bin/sh\nexec {sys.executable} -m tlinterp.cli \"$1\" --emit opencl\n")
        script.chmod(0o755)
        spec = f"opencl-c:{script} {{tl}}"
    start = time.monotonic()
    r = tool("tlinterp.cli", str(kernel), "--args", str(args), "--backend", spec,
             "--timeout", "3", env=ENV, timeout=120)
    took = time.monotonic() - start
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert ("took longer than 3 s" in r.stderr or "within the case's 3 s" in r.stderr), r.stderr
    assert took < 60, took


# --- tlfuzz ---------------------------------------------------------------------------------

FUZZ_CASES = {  # id: (argv, message); every one exits 2 before a campaign starts
    "out-is-a-file": (["--out", "{file}"], "exists and is not a directory"),
    "out-below-a-file": (["--out", "{file}/sub"], "cannot create the directory"),
    "out-unwritable-place": (["--out", "/proc/no/such/dir"], "cannot create the directory"),
    "shrink-time-nan": (["--shrink-time", "nan"], "must be a finite number of seconds > 0"),
    "shrink-time-inf": (["--shrink-time", "inf"], "must be a finite number of seconds > 0"),
    "shrink-time-negative": (["--shrink-time", "-1"], "must be a finite number of seconds"),
    "seed-negative": (["--seed", "-1"], "argument --seed: must be a whole number >= 0"),
    "device-unknown": (["--device", "nosuchdevice", "--out", "{dir}"],
                       "no OpenCL device matches 'nosuchdevice'"),
    "work-group-size-zero": (["--work-group-size", "0x0"], "expects W0xW1"),
}


@pytest.mark.parametrize("case", [  # past the flags, tlfuzz checks its device (OpenCL) first
    pytest.param(c, marks=pytest.mark.opencl) if c.startswith(("device", "out")) else c
    for c in FUZZ_CASES], ids=list(FUZZ_CASES))
def test_tlfuzz_bad_options(tmp_path, monkeypatch, capsys, case):
    if case == "device-unknown":
        pytest.importorskip("pyopencl")
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "keep.txt"
    file.write_text("precious")
    argv, message = FUZZ_CASES[case]
    argv = [a.format(file=file, dir=tmp_path / "findings") for a in argv]
    start = time.monotonic()
    assert tlfuzz(["--time", "5", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert time.monotonic() - start < 10
    assert file.read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]  # no findings, no .hypothesis


@pytest.mark.opencl
def test_tlfuzz_writes_hypothesis_files_only_under_out(tmp_path):
    # two rounds of one-kernel batches are enough for Hypothesis to cache its constants
    p = tool("fuzz.campaign.cli", "--time", "8", "--rounds", "2", "--batch", "1",
             "--out", "found", cwd=tmp_path)
    clean(p, 0)
    assert os.listdir(tmp_path) == ["found"]
    assert (tmp_path / "found" / ".hypothesis").is_dir()


# --- tlconform ------------------------------------------------------------------------------

MINI = ["valid/blas/axpby_f32_canonical_v0", "invalid/alloca_dynamic", "undefined/oob_load"]


@pytest.fixture
def mini_corpus(corpus_copy) -> Path:
    return corpus_copy(MINI)


def test_tlconform_ctrl_c_kills_the_implementation(mini_corpus):
    proc = subprocess.Popen(
        [sys.executable, "-m", "fuzz.conform.cli", "--corpus", str(mini_corpus), "--quiet",
         "-j", "2", "--impl", "sh -c 'sleep 30; echo {kernel}'"],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kids = _wait_for_children(proc, "sleep")
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert time.monotonic() - start < 5
    assert proc.returncode == 130 and "Traceback" not in out + err
    assert not any(_alive(k) for k in kids)


def test_tlconform_piped_output_is_not_wrapped(mini_corpus):
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}
    p = tool("fuzz.conform.cli", "--corpus", mini_corpus, "--quiet", "--impl",
             "sh -c 'echo error: {kernel} {kernel} {kernel} >&2; exit 2'", env=env)
    text = clean(p, 1)
    # the whole message on the FAIL line, however long the kernel's path is
    assert re.search(r"FAIL valid/blas/axpby\S*: rejected it: error: (\S+) \1 \1\n", text)


def test_tlconform_reads_ir_sources_and_refuses_ambiguous_cases(mini_corpus, capsys):
    tl = mini_corpus / f"{MINI[0]}.tl"
    tl.rename(tl.with_suffix(".ir"))
    assert tlconform(["--corpus", str(mini_corpus), "--impl", "tlinterp", "--quiet"]) == 0
    assert "3 passed" in capsys.readouterr().out
    shutil.copy(tl.with_suffix(".ir"), tl)
    assert tlconform(["--corpus", str(mini_corpus), "--impl", "tlinterp", "--quiet"]) == 2
    assert "keep one source per case" in capsys.readouterr().err


def test_tlconform_json_report(mini_corpus, tmp_path, capsys):
    report = tmp_path / "report.json"
    argv = ["--corpus", str(mini_corpus), "--impl", "interp", "--quiet", "--json"]
    assert tlconform([*argv, str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["format"] == "tlconform-report/1" and data["implementation"] == "interp"
    assert [c["id"] for c in data["cases"]] == MINI
    assert [c["outcome"] for c in data["cases"]] == ["ok", "rejected", "failed"]
    assert data["cases"][2]["ub_kinds"] == ["out-of-bounds"]
    assert data["summary"]["total"] == 3 and data["summary"]["pass"] == 3
    assert data["summary"]["exit_status"] == 0
    capsys.readouterr()
    assert tlconform([*argv, "-"]) == 0  # to stdout: only the JSON there
    captured = capsys.readouterr()
    assert json.loads(captured.out)["summary"]["total"] == 3
    assert "3 passed" in captured.err


MEMBERS = """func @f(%A: group<memref<f32x4>>) {
  %g = group_id
  %m = load %A[IDX] : group<memref<f32x4>>
  %x = load %m[0] : memref<f32x4>
  store %x, %m[1] : memref<f32x4>
}
"""
API_CASES = {  # id: (member index, groups, error class, message)
    "group-id-past-the-members": ("%g", 3, "UndefinedBehaviour",
                                  "work-group 2 loads member 2 of %A, which has 2 members"),
    "constant-member-past-the-end": ("5", 1, "UndefinedBehaviour",
                                     "every work-group loads member 5 of %A, which has 2"),
    "groups-beyond-size-t": ("%g", 10**31, "ArgumentError", "work-groups must be in"),
}


@pytest.mark.opencl
@pytest.mark.parametrize("case", API_CASES, ids=list(API_CASES))
def test_tlgpu_run_checks_before_the_launch(case):
    import tlgpu
    import tlinterp

    index, groups, error, message = API_CASES[case]
    program = tlinterp.check(tlinterp.parse(MEMBERS.replace("IDX", index), "m.tl"))
    args = {"A": np.arange(8, dtype=np.float32).reshape(2, 4)}
    with pytest.raises(getattr(tlinterp, error), match=message) as e:
        tlgpu.run(program, args, groups=groups)
    assert e.value.exit_status == (1 if error == "UndefinedBehaviour" else 2)
    assert "m.tl:3.3" in e.value.format() or error == "ArgumentError"


@pytest.mark.parametrize("option", ["--json", "--log", "--junit-xml"])
def test_tlconform_refuses_an_unwritable_report_before_the_run(mini_corpus, tmp_path, capsys,
                                                               option):
    argv = ["--corpus", str(mini_corpus), "--impl", "interp", "--quiet"]
    for target, words in ((tmp_path, "is a directory"),
                          (tmp_path / "no" / "r.txt", "does not exist")):
        assert tlconform([*argv, option, str(target)]) == 2
        err = capsys.readouterr().err
        assert words in err and "passed" not in err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
@pytest.mark.parametrize("argv, flag", [
    (["--impl", "interp", "--timeout"], "--timeout"),
    (["reproduce", str(Path(__file__).resolve().parents[1] / "examples" / "fused_kernel.tl"),
      "--args", "x.npz", "--impl", "interp", "--timeout"], "--timeout"),
    (["triage", "x", "--reduce-time"], "--reduce-time"),
])
def test_a_time_that_is_no_finite_positive_number_is_a_usage_error(capsys, argv, flag, value):
    """nan once reached a lock's acquire() as a timeout (a traceback from tlconform)."""
    tool = tlconform if argv[0] == "--impl" else tlfuzz
    assert tool([*argv, value]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err, err
