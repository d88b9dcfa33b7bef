"""Hostile inputs that used to hang a tool or read without bound: an implementation whose
`{out}` is a FIFO nobody writes or gigabytes, a finding or corpus file that is /dev/zero or
one 20 MB line, a damaged finding line, SIGTERM and SIGHUP to tlrun while an external command
runs or --out is written. Each ends in time with a clear message and its documented exit
status, leaving no process and no temporary file behind (tlinterp/io/boundedread.py,
tlinterp/impl/shutdown.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fuzz.campaign.cli import main as tlfuzz
from fuzz.conform.cli import main as tlconform
from tlinterp.cli import tlrun as cli
from tlinterp.io.boundedread import RefusedFile, read_bounded, read_first_line

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ("func @k(%a: memref<f32x4>) {\n  %x = load %a[0] : memref<f32x4>\n"
          "  store %x, %a[1] : memref<f32x4>\n}\n")


@pytest.fixture
def case(tmp_path) -> tuple[Path, Path]:
    tl, npz = tmp_path / "k.tl", tmp_path / "k.npz"
    tl.write_text(KERNEL)
    np.savez(npz, a=np.arange(4, dtype=np.float32))
    return tl, npz


def _tlrun(argv, capsys, limit: float) -> tuple[int, str]:
    start = time.monotonic()
    rc = cli.main([str(a) for a in argv])
    took = time.monotonic() - start
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "internal error" not in text, text
    assert took < limit, f"took {took:.1f} s"
    return rc, text


# --- the bounded reader ------------------------------------------------------------------------


def test_the_reader_refuses_what_is_no_regular_file_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(RefusedFile, match="is a FIFO"):
        read_bounded(str(fifo), 100, "a kernel source")  # nobody writes: it must not wait
    with pytest.raises(RefusedFile, match="is a device"):
        read_bounded("/dev/zero", 100, "a kernel source")
    with pytest.raises(RefusedFile, match="is a directory"):
        read_bounded(str(tmp_path), 100, "a kernel source")
    assert time.monotonic() - start < 2
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(RefusedFile, match="larger than 100 bytes"):
        read_bounded(str(big), 100, "a kernel source")
    assert read_bounded(str(big), 101) == b"x" * 101
    big.write_bytes(b"a b\n" + b"y" * 1000)
    assert read_first_line(str(big), 10) == "a b"
    big.write_bytes(b"z" * 1000 + b"\n")
    with pytest.raises(RefusedFile, match="first line is longer than 10 bytes"):
        read_first_line(str(big), 10)


# --- an implementation's output ----------------------------------------------------------------


@pytest.mark.parametrize("command, words", [
    # {out} made a FIFO nobody writes: refused at once, not waited on past --timeout
    ("sh -c 'rm -f $1; mkfifo $1' x {out} {tl}",
     "the ir: pass wrote {out} (out.tl), which is a FIFO (named pipe), not a regular file"),
    ("sh -c 'head -c 20M /dev/zero > $1' x {out} {tl}",
     "the ir: pass wrote {out} (out.tl), which is larger than 16 MiB"),
    ("sh -c 'head -c 20M /dev/zero' {tl}",
     "the ir: pass wrote 20 MiB to stdout, more than the 16 MiB read back"),
])
def test_an_ir_pass_output_is_read_bounded_and_never_waited_on(command, words, case, capsys):
    tl, npz = case
    rc, text = _tlrun([tl, "--args", npz, "--timeout", "5", "--impl", "ir:" + command],
                      capsys, limit=20)
    assert rc == 1 and words in text, text
    assert len(text) < 10_000  # the 20 MiB are not in the message


@pytest.mark.opencl  # the compiler's code would be built on pocl; it never gets that far
@pytest.mark.parametrize("command, words", [
    ("sh -c 'head -c 40M /dev/zero > $1' x {out} {tl}",
     "the opencl-c: compiler wrote {out} (out.cl), which is larger than 16 MiB"),
    ("sh -c 'head -c 40M /dev/zero' {tl}",
     "the opencl-c: compiler wrote 40 MiB to stdout, more than the 16 MiB read back"),
])
def test_a_compiler_output_is_read_bounded(command, words, case, capsys):
    tl, npz = case
    rc, text = _tlrun([tl, "--args", npz, "--device", "pocl", "--impl", "opencl-c:" + command],
                      capsys, limit=60)
    assert rc == 1 and words in text, text  # not "out of memory ... reading arguments"


def test_tlconform_with_a_fifo_as_out_ends_in_time(corpus_copy, tmp_path, capsys):
    corpus = corpus_copy(["valid/blas/axpby_f32_canonical_v0"])
    start = time.monotonic()
    rc = tlconform(["--corpus", str(corpus), "--quiet", "--timeout", "5", "--impl",
                    "ir:sh -c 'rm -f $1; mkfifo $1' x {out} {tl}"])
    text = "".join(capsys.readouterr())
    assert rc == 1 and "is a FIFO (named pipe)" in text, text
    assert time.monotonic() - start < 30


# --- findings and corpus files -----------------------------------------------------------------


def _finding(tmp_path: Path, case, line: bytes) -> str:
    tl, npz = case
    base = tmp_path / "mismatch-1"
    base.with_suffix(".tl").write_text(tl.read_text())
    base.with_suffix(".npz").write_bytes(npz.read_bytes())
    base.with_suffix(".txt").write_bytes(line)
    return str(base)


@pytest.mark.parametrize("command", ["reproduce", "triage"])
@pytest.mark.parametrize("line, words", [
    (b"tlfuzz reproduce " + b"x" * (20 << 20) + b"\n", "its first line is longer than 64 KiB"),
    (b"tlfuzz reproduce k.tl --args 'k.npz --impl interp\n",
     "does not split like a command line (No closing quotation)"),
])
def test_a_damaged_finding_line_is_a_usage_error(command, line, words, case, tmp_path, capsys):
    base = _finding(tmp_path, case, line)
    start = time.monotonic()
    rc = tlfuzz([command, base, "--timeout", "30"] if command == "reproduce" else
                [command, base])
    text = "".join(capsys.readouterr())
    assert rc == 2 and words in text and "Traceback" not in text, text
    assert time.monotonic() - start < 20  # a 20 MB line kept both busy past 120 s


@pytest.mark.parametrize("which, words", [
    (".txt", "mismatch-1.txt: is a device, not a regular file"),
    (".tl", "mismatch-1.tl: is a device, not a regular file"),
])
def test_dev_zero_in_a_finding_is_refused(which, words, case, tmp_path, capsys):
    base = _finding(tmp_path, case, b"tlfuzz reproduce mismatch-1.tl --args mismatch-1.npz "
                                    b"--impl interp\n")
    os.unlink(base + which)
    os.symlink("/dev/zero", base + which)
    rc = tlfuzz(["reproduce", base])
    text = "".join(capsys.readouterr())
    assert rc == 2 and words in text, text


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "too-large"])
def test_a_corpus_kernel_that_is_no_source_is_refused(kind, corpus_copy, capsys):
    corpus = corpus_copy(["valid/blas/axpby_f32_canonical_v0"])
    [tl] = corpus.rglob("*.tl")
    tl.unlink()
    if kind == "dev-zero":
        tl.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(tl)
    else:
        tl.write_bytes(b";" * (5 << 20))
    rc = tlconform(["--corpus", str(corpus), "--quiet", "--impl", "interp"])
    text = "".join(capsys.readouterr())
    words = {"dev-zero": "is a device, not a regular file", "fifo": "is a FIFO",
             "too-large": "is larger than 4 MiB"}[kind]
    assert rc == 2 and words in text and "Traceback" not in text, text


# --- signals to tlrun --------------------------------------------------------------------------


def _processes_with(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def _tlrun_process(argv, scratch: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tlinterp.cli", *map(str, argv)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_tlrun_kills_its_external_commands_and_leaves_no_scratch(sig, case,
                                                                             tmp_path):
    tl, npz = case
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = f"{400 + os.getpid() % 500}.{int(sig)}1"  # a sleep time of this test alone
    # the pass starts one process in its group and one in a session of its own (setsid)
    command = f"ir:sh -c 'setsid sleep {marker} & sleep {marker}' {{tl}}"
    proc = _tlrun_process([tl, "--args", npz, "--timeout", "60", "--impl", command], scratch)
    try:
        end = time.monotonic() + 40
        while len(_processes_with(marker)) < 4:  # tlrun, sh and both sleeps
            assert time.monotonic() < end, "the pass never started"
            time.sleep(0.1)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig and "Traceback" not in out + err, out + err
    time.sleep(0.3)
    assert _processes_with(marker) == []  # setsid did not let it outlive tlrun
    assert list(scratch.iterdir()) == []


def test_sigterm_while_out_is_written_leaves_no_temporary(tmp_path):
    tl, npz, out = tmp_path / "s.tl", tmp_path / "a.npz", tmp_path / "o.npz"
    tl.write_text("func @s(%A: memref<f32x?>) {\n  store 1.0, %A[0] : memref<f32x?>\n}\n")
    np.savez(npz, A=np.zeros(30_000_000, np.float32))  # 120 MB: a save that takes a while
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _tlrun_process([tl, "--args", npz, "--out", out], scratch)
    try:
        end = time.monotonic() + 60
        while not list(tmp_path.glob(".tlrun-*.npz.tmp")):
            assert proc.poll() is None, "tlrun ended before it saved"
            assert time.monotonic() < end, "tlrun never started saving"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        text = "".join(proc.communicate(timeout=30))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143 and "stopped by SIGTERM" in text, text  # not -15
    assert not out.exists() and list(tmp_path.glob(".tlrun-*")) == []


# --- reports ----------------------------------------------------------------------------------


def test_reports_keep_a_bounded_part_of_a_huge_output(corpus_copy, tmp_path, capsys):
    corpus = corpus_copy(["valid/blas/axpby_f32_canonical_v0"])
    log, junit, report = tmp_path / "log.txt", tmp_path / "j.xml", tmp_path / "r.json"
    # 100 MB on stderr, one line, then a failure: 16 MiB of it is read back
    rc = tlconform(["--corpus", str(corpus), "--quiet", "--log", str(log), "--junit-xml",
                    str(junit), "--json", str(report), "--impl",
                    "sh -c 'head -c 100M /dev/zero | tr \"\\0\" x >&2; exit 1' {kernel}"])
    capsys.readouterr()
    assert rc == 1
    for path in (log, junit, report):
        text = path.read_text()
        assert len(text) < 200_000, (path.name, len(text))  # was 16.8 MB and 50 MB
        assert "characters cut here: a report keeps" in text, path.name


# --- sources ----------------------------------------------------------------------------------


def test_a_huge_attribute_array_is_refused_before_parsing(tmp_path, capsys):
    # 3.8 MB, one attribute array of 1.9 million items: was 2.7 GB and minutes
    tl = tmp_path / "a.tl"
    tl.write_text('func @f() attributes{"x"=[' + ",".join(["1"] * 1_900_000) + "]} {\n}\n")
    rc, text = _tlrun([tl, "--check"], capsys, limit=20)
    assert rc == 2 and "a.tl:1.11-20: an attribute dictionary with more than 4096 items" in text
    ok = tmp_path / "ok.tl"  # the bound counts items, not characters
    ok.write_text('func @f() attributes{"x"=[' + ",".join(["1"] * 4000) + "]} {\n}\n")
    assert _tlrun([ok, "--check"], capsys, limit=20)[0] == 0


# --- trust: the command in a finding's NAME.txt -----------------------------------------------


def test_a_finding_line_tlfuzz_did_not_sign_runs_no_command_of_its_own(case, tmp_path,
                                                                       monkeypatch, capsys):
    from fuzz.campaign.findings import Finding, save_finding
    from fuzz.triage.reproduce import load_case
    from tlinterp.impl import ImplOptions

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # this user's key
    tl, npz = case
    touched = tmp_path / "touched"
    spec = f"sh -c 'touch {touched}; cat {{kernel}}'"
    f = Finding(load_case(str(tl), str(npz), None, None), "mismatch", "x",
                impl=(spec, ImplOptions()))
    base = save_finding(f, str(tmp_path / "findings"))
    assert tlfuzz(["reproduce", base]) == 5  # signed by our save: runs (and crashes)
    assert touched.exists()
    touched.unlink()
    txt = Path(base + ".txt")
    txt.write_text(txt.read_text().replace("touch", "touch /dev/null", 1))  # tampered
    capsys.readouterr()
    for command in ("reproduce", "triage"):
        assert tlfuzz([command, base]) == 2
        text = "".join(capsys.readouterr())
        assert "was not saved by your tlfuzz" in text and "touch /dev/null" in text, text
        assert not touched.exists()
    assert tlfuzz(["reproduce", base, "--impl", spec]) == 5  # the user's own choice runs
    assert touched.exists()
    # our own implementations choose no command: they run from any line
    txt.write_text("tlfuzz reproduce k.tl --args k.npz --impl interp\n")
    assert tlfuzz(["reproduce", base]) == 0
