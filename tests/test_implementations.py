"""The implementation registry (tlinterp.impl) and the adapters that need no OpenCL: a plug-in
registered through real entry-point metadata is listed and used by all three tools, tlinterp
never imports tlgpu or fuzz, and misbehaving external tools and plug-ins are per-case results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import tlinterp
from fuzz.conform.cli import main as tlconform
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import Job, SpecError, resolve

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fused_kernel.tl"
GROUPS_FILTER = "valid/groups"  # a few small cases


def _env(*paths: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), str(ROOT),
                                        env.get("PYTHONPATH", "")])
    return env


def _py(args: list[str], env: dict, cwd: Path, timeout: float = 120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


# --- a third-party implementation, registered through entry-point metadata ------------------

TOY = '''
"""A test plug-in: the interpreter under another name, logging every job it runs."""
import os

import tlinterp
from tlinterp.impl import Implementation, Outcome, outcome_of_error


class Toy(Implementation):
    def __init__(self, options):
        self.spec, self.options = "toy", options

    def run(self, job, timeout=None):
        with open(os.environ["TOY_LOG"], "a") as f:
            f.write(f"{os.getpid()} {job.func}\\n")
        program = job.program if job.program is not None else job.source
        try:
            return Outcome("ok", outputs=tlinterp.run(program, job.args, func=job.func,
                                                      groups=job.groups))
        except tlinterp.TLError as e:
            return outcome_of_error(e)


def factory(arg, options):
    """toy: the interpreter under another name (a test plug-in)"""
    return Toy(options)
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A directory holding an installed-looking distribution that registers `toy`."""
    d = tmp_path_factory.mktemp("toy")
    (d / "toy_impl.py").write_text(TOY)
    info = d / "toy_impl-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-impl\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[tensor_language.implementations]\ntoy = toy_impl:factory\n")
    return d


def test_registered_implementation_is_listed_and_used_by_all_three_tools(toy, tmp_path):
    env = _env(toy)
    log = tmp_path / "toy.log"
    env["TOY_LOG"] = str(log)
    listed = _py(["-m", "tlinterp.cli", "--list-impls"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout and "a test plug-in" in listed.stdout
    assert "opencl-c" in listed.stdout and "interp" in listed.stdout
    listed = _py(["-m", "fuzz.conform.cli", "--list-impls"], env, tmp_path)
    assert listed.returncode == 0 and "toy" in listed.stdout

    ran = _py(["-m", "tlinterp.cli", str(EXAMPLE), "--args", str(EXAMPLE.with_suffix(".npz")),
               "--backend", "toy"], env, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "backend toy" in ran.stderr
    assert log.read_text().count("\n") == 1

    conf = _py(["-m", "fuzz.conform.cli", "--impl", "toy", "--filter", GROUPS_FILTER,
                "--quiet"], env, tmp_path)
    assert conf.returncode == 0, conf.stdout + conf.stderr
    from fuzz.conform.corpus import default_corpus, load_corpus

    n = len(load_corpus(default_corpus(), GROUPS_FILTER))
    assert f"toy: {n} passed, 0 failed" in conf.stdout
    assert log.read_text().count("\n") == 1 + n

    fuzzed = _py(["-m", "fuzz.campaign.cli", "--impl", "toy", "--time", "8", "--batch", "2",
                  "--shrink-time", "1", "--out", str(tmp_path / "findings")], env, tmp_path)
    assert fuzzed.returncode == 0, fuzzed.stdout + fuzzed.stderr
    assert "tlfuzz toy on pocl" in fuzzed.stderr
    assert log.read_text().count("\n") > 7  # the campaign's jobs ran through the plug-in


def test_unknown_implementations_are_usage_errors(tmp_path):
    env = _env()
    for argv in (["-m", "tlinterp.cli", str(EXAMPLE), "--backend", "nonsense"],
                 ["-m", "fuzz.conform.cli", "--impl", "nonsense"],
                 ["-m", "fuzz.campaign.cli", "--impl", "nonsense", "--time", "1"]):
        r = _py(argv, env, tmp_path)
        assert r.returncode == 2, (argv, r.stderr)
        assert "'nonsense' is not an implementation" in r.stderr + r.stdout
        assert "Traceback" not in r.stderr


def test_tlinterp_imports_neither_tlgpu_nor_fuzz(tmp_path):
    # statically: no module of tlinterp names the backend or the fuzzer in an import (help
    # text and --backend opencl reach tlgpu only through the registry's entry points)
    root = Path(tlinterp.__file__).parent
    for path in root.rglob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1:
                assert words[1].split(".")[0] not in ("tlgpu", "fuzz"), f"{path}: {line}"
    # and at run time: checking, parsing options and running on the interpreter load neither
    code = textwrap.dedent(f"""
        import contextlib, io, sys
        import tlinterp, tlinterp.cli

        def foreign():
            return sorted(m for m in sys.modules if m.split(".")[0] in ("tlgpu", "fuzz"))

        with contextlib.redirect_stdout(io.StringIO()):
            try:
                tlinterp.cli.main(["--version"])
            except SystemExit:
                pass
        assert tlinterp.cli.main([{str(EXAMPLE)!r}, "--check"]) == 0
        assert not foreign(), foreign()
        rc = tlinterp.cli.main([{str(EXAMPLE)!r}, "--args", {str(EXAMPLE.with_suffix('.npz'))!r},
                                "--backend", "interp"])
        assert rc == 0, rc
        assert not foreign(), foreign()
        print("clean")
    """)
    r = _py(["-c", code], _env(), tmp_path)
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout + r.stderr


# --- misbehaving command templates ---------------------------------------------------------

TOOL = '''
import os, signal, subprocess, sys, time
import numpy as np
import tlinterp
from tlinterp.io.args import load_npz

mode, kernel, args, out = sys.argv[1:5]
if mode == "binary":
    sys.stdout.buffer.write(b"\\xff\\xfe not utf-8 \\x80\\n")
    sys.stderr.buffer.write(b"data race \\xc3\\x28\\n")
    sys.exit(1)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "nothing":
    sys.exit(0)
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(sys.argv[5], "w") as f:
        f.write(str(child.pid))
    time.sleep(60)
source, data = open(kernel).read(), load_npz(args)
if mode == "vandal":  # destroys its inputs, then answers correctly
    open(kernel, "w").write("garbage")
    os.remove(args)
result = tlinterp.run(source, data)
np.savez(out, **result)
'''


@pytest.fixture(scope="module")
def tool(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("tool") / "tool.py"
    p.write_text(TOOL)
    return p


def _template(tool: Path, mode: str, extra: str = "") -> str:
    return f"{sys.executable} {tool} {mode} {{kernel}} {{args}} {{out}} {extra}".strip()


@pytest.fixture(scope="module")
def groups_cases():
    return load_corpus(default_corpus(), GROUPS_FILTER)


def test_tool_printing_invalid_utf8_is_a_result(tool, groups_cases):
    (v,) = run_all(resolve(_template(tool, "binary")), groups_cases[:1])
    assert v.status == "fail" and v.outcome.status == "failed"
    assert "not utf-8" in v.outcome.message and "\ufffd" in v.outcome.message
    assert v.outcome.ub_kinds == ["data-race"]


def test_crashing_and_silent_tools_are_results(tool, groups_cases):
    (v,) = run_all(resolve(_template(tool, "crash")), groups_cases[:1])
    assert v.outcome.status == "crashed" and "SIGSEGV" in v.outcome.message
    (v,) = run_all(resolve(_template(tool, "nothing")), groups_cases[:1])
    assert v.outcome.status == "crashed" and "no output file" in v.outcome.message


def test_timeout_kills_the_whole_process_group(tool, groups_cases, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    start = time.monotonic()
    (v,) = run_all(resolve(_template(tool, "hang", str(pidfile))), groups_cases[:1],
                   timeout=3)
    assert time.monotonic() - start < 30
    assert v.outcome.status == "timeout" and "killed" in v.outcome.message
    pid = int(pidfile.read_text())
    for _ in range(50):  # the grandchild was killed with its group; wait until it is reaped
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {pid} outlived the timeout")


def test_tool_that_destroys_its_inputs_gets_copies(tool, groups_cases, monkeypatch):
    cases = groups_cases[:2]
    before = {c.kernel: c.kernel.read_bytes() for c in cases}
    monkeypatch.chdir(tool.parent)  # the template names the tool relative to the cwd
    verdicts = run_all(resolve(_template(Path(tool.name), "vandal")), cases)
    assert all(v.status == "pass" for v in verdicts), [v.detail for v in verdicts]
    assert all(k.read_bytes() == b for k, b in before.items())
    assert all(c.args_path.exists() for c in cases)


def test_template_with_an_unbalanced_quote_is_a_usage_error(capsys):
    with pytest.raises(SpecError, match="does not split like a command line"):
        resolve("tool '{kernel} {args} {out}")
    assert tlconform(["--impl", "tool '{kernel} {args} {out}", "--quiet"]) == 2
    assert "does not split" in capsys.readouterr().err


def test_reproduce_lines_rerun_the_users_implementation(tool, tmp_path):
    log = tmp_path / "conform.log"
    template = _template(tool, "nothing")
    assert tlconform(["--impl", template, "--filter", GROUPS_FILTER, "--quiet", "--log",
                      str(log)]) == 1
    lines = [ln for ln in log.read_text().splitlines() if "reproduce:" in ln]
    from fuzz.conform.corpus import default_corpus, load_corpus

    assert len(lines) == len(load_corpus(default_corpus(), GROUPS_FILTER))
    for ln in lines:
        assert str(tool) in ln and "tlrun" not in ln
        assert "tl-impl-" not in ln  # no deleted scratch directory
        assert "corpus/valid/groups/" in ln


# --- python: plug-ins ------------------------------------------------------------------------

PLUGIN = '''
import sys
import tlinterp

def good(source, args, func=None, groups=None):
    return tlinterp.run(source, args, func=func, groups=groups)

def index_error(source, args, func=None, groups=None):
    return [][1]

def exits(source, args, func=None, groups=None):
    sys.exit(3)
'''


def test_python_plugins_from_the_working_directory_and_their_failures(tmp_path, monkeypatch,
                                                                     groups_cases):
    (tmp_path / "cwd_plugin_i11.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path  # found only because the cwd is searched
    good = resolve("python:cwd_plugin_i11:good")
    assert [v.status for v in run_all(good, groups_cases)] == ["pass"] * len(groups_cases)
    (v,) = run_all(resolve("python:cwd_plugin_i11:index_error"), groups_cases[:1])
    assert v.outcome.status == "crashed" and "IndexError" in v.outcome.message
    (v,) = run_all(resolve("python:cwd_plugin_i11:exits"), groups_cases[:1])
    assert v.outcome.status == "crashed" and "exit(3)" in v.outcome.message
    line = v.reproduce
    assert line.startswith("tlfuzz reproduce ") and "--impl python:cwd_plugin_i11:exits" in line


def test_interp_adapter_reports_kinds_and_rejections():
    impl = resolve("interp")
    assert impl.reference
    bad = impl.run(Job("func @f() { %x = bogus }", {}))
    assert bad.status == "rejected" and bad.exit_status == 2
    for case in load_corpus(default_corpus(), "undefined/")[:3]:
        o = impl.run(Job(case.source(), case.args(), case.func, case.groups))
        assert o.status == "failed" and case.meta["kind"] in o.ub_kinds
