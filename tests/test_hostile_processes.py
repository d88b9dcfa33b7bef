"""Hostile implementations and environments around `tlfuzz` and `tlconform`: an implementation
that never answers, SIGTERM mid-run, a zip-bomb output, extra output keys, a plug-in that
changes the working directory, segfaults or closes fd 1, a full disk under --log and --out,
a large i8 alloca. Every case ends with its documented exit status, no traceback, no process
and no temporary file left behind.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.findings import Finding, save_finding
from fuzz.conform.cli import main as tlconform
from fuzz.oracle import compare_outputs
from fuzz.shutdown import Stopped
from fuzz.strategies import FuzzCase
from tlinterp.impl import Job, resolve
from tlinterp.io.outfile import write_text
from tlinterp.lang.diagnostics import ArgumentError

ROOT = Path(__file__).resolve().parents[1]
HANG = "sh -c 'sleep 1000' {kernel}"  # an implementation that never answers
MINI = ["valid/blas/axpby_f32_canonical_v0", "invalid/alloca_dynamic"]


def _env(tmp: Path, *paths: Path) -> dict:
    """The tool's environment: our sources first, TMPDIR a directory of the test's own."""
    return {**os.environ, "TMPDIR": str(tmp),
            "PYTHONPATH": os.pathsep.join(map(str, (*paths, ROOT)))}


def _with_marker(marker: str) -> list[int]:
    """Processes whose command line mentions `marker` (a test's own directory)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                pids.append(int(entry))
    return pids


def _wait_for(marker: str, limit: float = 40.0) -> None:
    end = time.monotonic() + limit
    while not _with_marker(marker):
        assert time.monotonic() < end, "the implementation never started"
        time.sleep(0.2)


def _assert_nothing_left(scratch: Path) -> None:
    time.sleep(0.3)  # killed processes vanish from /proc once reaped
    assert _with_marker(str(scratch)) == []
    assert list(scratch.iterdir()) == []


@pytest.fixture
def mini_corpus(corpus_copy) -> Path:
    return corpus_copy(MINI)


def _plugin(directory: Path, body: str) -> None:
    """A python: plug-in `plug:run` that runs the reference and then does `body`."""
    (directory / "plug.py").write_text(textwrap.dedent("""
        import os
        import signal
        from tlinterp.interp import run as reference

        def run(source, args, func=None, groups=None):
            out = reference(source, args, func=func, groups=groups)
        """) + textwrap.indent(textwrap.dedent(body), "    ") + "    return out\n")


# --- hangs and budgets --------------------------------------------------------------------


def test_tlfuzz_against_a_hanging_implementation_ends_on_time_and_fails(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "fuzz.campaign.cli", "--impl", HANG, "--time", "3s", "--jobs",
         "1", "--out", tmp_path / "out", "--triage-time", "0"],
        env=_env(scratch), capture_output=True, text=True, timeout=60)
    text = p.stdout + p.stderr
    assert p.returncode == 4, text  # documented: no case ran to its end
    assert "nothing was tested" in text and "Traceback" not in text
    _assert_nothing_left(scratch)


@pytest.mark.parametrize("tool, sig", [("tlfuzz", signal.SIGTERM), ("tlconform", signal.SIGTERM),
                                       ("tlfuzz", signal.SIGHUP)])
def test_sigterm_ends_the_run_in_order(tmp_path, mini_corpus, tool, sig):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = (["fuzz.campaign.cli", "--impl", HANG, "--time", "10m", "--jobs", "2", "--out",
             str(tmp_path / "out")] if tool == "tlfuzz" else
            ["fuzz.conform.cli", "--impl", HANG, "--corpus", str(mini_corpus), "-j", "2",
             "--quiet"])
    proc = subprocess.Popen([sys.executable, "-m", *argv], env=_env(scratch),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(str(scratch) + "/")  # the implementation runs on a case in the scratch dir
        proc.send_signal(sig)  # SIGHUP: the terminal closed, as SIGTERM
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, out + err  # 143 for SIGTERM, 129 SIGHUP, documented
    assert "Traceback" not in out + err
    _assert_nothing_left(scratch)


def test_sigterm_ends_tlfuzz_reproduce_in_order(tmp_path):
    """`tlfuzz reproduce` is an interestingness test that cvise or `timeout` stop with SIGTERM:
    an `ir:` tool that never answers is killed, its scratch copy removed, exit status 143 (it
    once kept running, its /tmp/tl-ir-* directory left behind)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    kernel, args = tmp_path / "k.tl", tmp_path / "k.npz"
    kernel.write_text("func @k(%A: memref<f32x2>) {\n}\n")
    np.savez(args, A=np.zeros(2, np.float32))
    argv = ["fuzz.campaign.cli", "reproduce", str(kernel), "--args", str(args), "--lang",
            "v0.4", "--impl", "ir:sh -c 'sleep 1000' {tl}"]
    proc = subprocess.Popen([sys.executable, "-m", *argv], env=_env(scratch),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(str(scratch) + "/")  # the tool runs on the kernel's copy in the scratch dir
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out + err
    assert "Traceback" not in out + err
    _assert_nothing_left(scratch)


# --- data and verdicts -------------------------------------------------------------------


def test_a_signal_or_a_full_disk_while_saving_leaves_no_file(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ArgumentError, match="No space left on device"):
        write_text(str(tmp_path / "log.txt"), "x" * 100_000, "--log")

    def stopped(fd):
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(os, "fsync", stopped)
    with pytest.raises(Stopped):
        write_text(str(tmp_path / "log.txt"), "x", "--log")
    program = tlinterp.check(tlinterp.parse("func @k(%a: memref<f32x4>) {\n}\n"))
    finding = Finding(FuzzCase(program, "k", {"a": np.ones(4, np.float32)}, 1), "mismatch",
                      "interpreter vs x")
    with pytest.raises(Stopped):
        save_finding(finding, str(tmp_path / "out"))
    assert list(tmp_path.rglob("*")) == [tmp_path / "out"]  # no .tmp, no partial finding


def test_tlconform_reports_a_log_it_cannot_write(mini_corpus, tmp_path, monkeypatch, capsys):
    def failing(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", failing)
    log = tmp_path / "conform.log"
    status = tlconform(["--impl", "interp", "--corpus", str(mini_corpus), "--quiet",
                        "--log", str(log)])
    assert status == 2
    assert f"--log {log}: cannot write (Input/output error)" in capsys.readouterr().err
    assert not log.exists() and not list(tmp_path.glob(".conform.log*"))


def test_tlfuzz_says_when_findings_cannot_be_saved(tmp_path):
    # a fake full filesystem under --out: every fsync of a file there fails with ENOSPC, in
    # the campaign's processes too (sitecustomize runs in each)
    site, out, scratch = tmp_path / "site", tmp_path / "out", tmp_path / "tmp"
    for d in (site, scratch):
        d.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import errno, os
        _fsync = os.fsync
        def fsync(fd):
            if os.readlink(f"/proc/self/fd/{{fd}}").startswith({str(out)!r}):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return _fsync(fd)
        os.fsync = fsync
        """))
    p = subprocess.run(
        [sys.executable, "-m", "fuzz.campaign.cli", "--impl", "sh -c 'exit 1' {kernel}",
         "--time", "6s", "--jobs", "1", "--out", out, "--shrink-time", "1",
         "--triage-time", "0"],
        env=_env(scratch, site), capture_output=True, text=True, timeout=60)
    text = p.stdout + p.stderr
    assert p.returncode == 5, text  # documented: a finding could not be saved
    assert "could not be saved" in text and "No space left on device" in text
    assert "Traceback" not in text
    assert not [f for f in out.iterdir() if f.is_file()]  # no 0-byte or partial finding


def test_an_output_archive_that_inflates_beyond_the_outputs_is_refused(tmp_path):
    bomb = tmp_path / "bomb.npz"
    np.savez_compressed(bomb, a=np.zeros(64 << 20, np.int8))  # 64 MiB in ~64 KiB
    assert bomb.stat().st_size < 1 << 20
    impl = resolve(f"sh -c 'cp {bomb} \"$0\"' {{out}} {{kernel}}")
    tracemalloc.start()
    outcome = impl.run(Job("func @k(%a: memref<f32x4>) {\n}\n", {"a": np.ones(4, np.float32)}))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert outcome.status == "crashed"
    assert "nothing was inflated" in outcome.message and "64.0 MiB" in outcome.message
    assert peak < 32 << 20  # the archive alone inflates to 64 MiB


def test_extra_output_keys_are_ignored_and_the_log_stays_where_it_was_asked(
        mini_corpus, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _plugin(tmp_path, f"""
        out["scratch_buffer"] = out.get("A", 0)  # an extra key, ignored by the convention
        os.chdir({str(elsewhere)!r})
        """)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status = tlconform(["--impl", "python:plug:run", "--corpus", str(mini_corpus),
                        "--filter", "valid/", "--quiet", "--log", "conform.log"])
    text = capsys.readouterr().out
    assert status == 0, text
    assert (tmp_path / "conform.log").is_file() and not (elsewhere / "conform.log").exists()


def test_terminal_escapes_of_an_implementation_stay_out_of_reports(tmp_path):
    script = tmp_path / "noisy.sh"
    script.write_bytes(b"printf '\\033]0;pwned\\007\\033[2J\\033[31m%s:1.1-4: bad\\033[0m\\r\\n"
                       b"\\010gone\\n' \"$1\" >&2; exit 2\n")
    impl = resolve(f"sh {script} {{kernel}}")
    outcome = impl.run(Job("func @k() {\n}\n", {}))
    assert outcome.status == "rejected"
    assert not any(ord(c) < 32 and c not in "\t\n" or 0x7f <= ord(c) < 0xa0
                   for c in outcome.message), repr(outcome.message)
    assert outcome.diagnostics == [("1.1-4", "bad")]  # colour does not hide the diagnostic
    assert "\\x08gone" in outcome.message


def test_compare_outputs_ignores_keys_only_the_implementation_wrote():
    program = "func @k(%a: memref<i32x2>) {\n}\n"
    a = {"a": np.arange(2, dtype=np.int32)}
    assert compare_outputs(program, "k", a, a, {**a, "extra": np.zeros(3)}) == []
    assert compare_outputs(program, "k", a, a, {})  # a missing output still counts


def test_a_segfaulting_plugin_is_named_with_its_signal(tmp_path):
    _plugin(tmp_path, "os.kill(os.getpid(), signal.SIGSEGV)\n")
    scratch, out = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "fuzz.campaign.cli", "--impl", "python:plug:run", "--time",
         "5s", "--jobs", "1", "--out", out, "--shrink-time", "1", "--triage-time", "0"],
        env=_env(scratch, tmp_path), capture_output=True, text=True, timeout=60,
        cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    saved = list(out.glob("backend-crash-*.txt"))
    assert saved
    for finding in saved:
        message = finding.read_text().split("\n\n", 1)[1]  # after the command lines
        assert "python:plug:run" in message and "SIGSEGV" in message
        assert "OpenCL" not in message


def test_a_plugin_closing_stdout_loses_no_report(mini_corpus, tmp_path):
    _plugin(tmp_path, "os.close(1)\n")
    p = subprocess.run(
        [sys.executable, "-m", "fuzz.conform.cli", "--impl", "python:plug:run", "--corpus",
         mini_corpus, "--quiet"],
        env=_env(tmp_path, tmp_path), capture_output=True, text=True, timeout=60,
        cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Conformance by case kind" in p.stdout and "Traceback" not in p.stderr


# --- memory ------------------------------------------------------------------------------


def test_a_large_i8_alloca_costs_memory_in_proportion():
    n = 4 << 20  # elements (4 MiB of i8)
    text = f"""func @k(%B: memref<i8x{n}>, %C: memref<i8>) {{
  %t = alloca -> memref<i8x{n}>
  axpby.n 1, %B, 0, %t : i8, memref<i8x{n}>, i8, memref<i8x{n}>
  %v = load %t[5] : memref<i8x{n}>
  store %v, %C[] : memref<i8>
}}
"""
    program = tlinterp.check(tlinterp.parse(text))
    args = {"B": np.ones(n, np.int8), "C": np.zeros((), np.int8)}
    from tlinterp.interp import run

    tracemalloc.start()
    out = run(program, args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert out["C"] == 1
    # the argument's copy, the alloca with its initialisation flags and the result: about
    # 4 bytes per element; an intermediate in the compute type (i32) alone would add 4 more
    assert peak < 6 * n, f"{peak / n:.1f} bytes per element"
