"""tlconform and the conformance corpus: the corpus is what its generator produces, the
reference and the OpenCL backend pass it, and deliberately broken implementations fail exactly
the cases they should."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.conform.cli import main, run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import UB_KINDS, SpecError
from tlinterp.impl import resolve as from_spec
from tlinterp.impl.command import expand_template
from tlinterp.lang import ops
from tlinterp.lang.ir import BLAS, walk
from tlinterp.lang.types import GroupType, MemrefType, canonical_strides

ROOT = Path(__file__).resolve().parent.parent
CORPUS = default_corpus()


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(CORPUS)


def _failed(verdicts) -> set[str]:
    return {v.case.id for v in verdicts if v.status == "fail"}


# --- the corpus itself ---------------------------------------------------------------------

def test_corpus_is_what_the_generator_produces_and_verifies():
    """Regenerating changes no file; the NumPy references, the checker's diagnostics and the
    interpreter all agree (python -m corpus.generate --check)."""
    proc = subprocess.run([sys.executable, "-m", "corpus.generate", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_corpus_coverage(corpus):
    kinds = {k: [c for c in corpus if c.kind == k] for k in ("valid", "invalid", "undefined")}
    assert len(kinds["valid"]) >= 150 and len(kinds["invalid"]) >= 50
    assert {c.meta["kind"] for c in kinds["undefined"]} == set(UB_KINDS)
    instructions = {t for c in kinds["valid"] for t in c.tags["instruction"]}
    for name in ("alloca", "axpby", "gemm", "gemv", "ger", "hadamard", "sum", "subview",
                 "expand", "fuse", "load", "store", "size", "group_id", "group_size", "if",
                 "yield", "for", "foreach", "barrier", "lifetime_stop", "cast", "atomic",
                 *ops.BY_MNEMONIC):  # per type class: tests/test_op_declarations.py
        assert name in instructions, name
    layouts = {t for c in kinds["valid"] for t in c.tags["layout"]}
    assert layouts == {"canonical", "strided", "dynshape", "dynstride"}
    assert {c.groups for c in kinds["valid"]} >= {None, 1, 2, 3, 4, 5}
    assert any(k.endswith(".1") for c in kinds["valid"] for k in c.args())  # NAME.0, NAME.1
    assert any(k.endswith(".offset") for c in kinds["valid"] for k in c.args())
    rules = {c.meta["rule"] for c in kinds["invalid"]}
    assert len(rules) >= 40
    assert all(re.fullmatch(r"\d+\.\d+-(\d+\.)?\d+", c.meta["range"]) and c.meta["message"]
               for c in kinds["invalid"])


# --- the reference and the OpenCL backend pass -----------------------------------------------

def test_tlinterp_passes_the_whole_corpus(tmp_path):
    xml, log = tmp_path / "r.xml", tmp_path / "r.log"
    assert main(["--impl", "tlinterp", "--junit-xml", str(xml), "--log", str(log),
                 "-j", "2", "--quiet"]) == 0
    suites = ET.parse(xml).getroot().findall("testsuite")
    assert {s.get("name") for s in suites} == {"valid", "invalid", "undefined"}
    assert sum(int(s.get("tests")) for s in suites) == len(load_corpus(CORPUS))
    assert all(s.get("failures") == "0" for s in suites)
    text = log.read_text()
    assert "reproduce: tlrun corpus/valid/blas/gemm_f32_canonical_v0.tl --args " in text
    assert "FAIL" not in text


@pytest.mark.opencl
@pytest.mark.slow
def test_tlgpu_passes_the_whole_corpus(corpus):
    """Every valid and invalid case on pocl (undefined behaviour is informational for it and
    would only cost kernel builds)."""
    impl = from_spec("tlgpu")
    # the OpenCL lowering takes v0.3 (the v0.4 cases are the reference's: --lang v0.4)
    cases = [c for c in corpus if c.kind != "undefined" and c.lang == "v0.3"]
    verdicts = run_all(impl, cases)
    failures = [f"{v.case.id}: {v.detail}" for v in verdicts if v.status == "fail"]
    assert not failures, "\n".join(failures)


def test_command_template_runs_tlrun(tmp_path):
    """The template contract, exercised with the reference's own CLI."""
    template = (f"{sys.executable} -m tlinterp.cli {{kernel}} --args {{args}} --out {{out}} "
                "[--func {func}] [--groups {groups}]")
    log = tmp_path / "t.log"
    cases = "*/cast_i32_i8|*/blas/ger_f64_strided*|*/type_memref_i1|*/div_by_zero_i32"
    status = 0
    for pattern in cases.split("|"):
        status |= main(["--impl", template, "--filter", pattern, "--log", str(log), "--quiet"])
        text = log.read_text()
        assert "PASS" in text or "INFO" in text, text
        assert "command:" in text
    assert status == 0
    assert "reported division-by-zero" in text  # the kind named in tlrun's report


def test_a_template_reproduce_line_of_a_case_without_arguments_runs(corpus, tmp_path,
                                                                    monkeypatch):
    # an invalid program has no arguments file: the line makes the empty archive that the run
    # gave the tool instead of naming a file that does not exist
    from fuzz.conform.impl import reproduce

    template = f"{sys.executable} -m tlinterp.cli {{kernel}} --args {{args}} --out {{out}}"
    case = next(c for c in corpus if c.id.endswith("type_memref_i1"))
    assert case.args_path is None
    monkeypatch.chdir(tmp_path)
    line = reproduce(from_spec(template), case)
    assert "args.npz" in line and " && " in line
    done = subprocess.run(line, shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "type_memref_i1.tl:1.9-24" in done.stderr, done.stderr
    assert "No such file" not in done.stderr and "no such file" not in done.stderr


# --- deliberately broken implementations ---------------------------------------------------

def _run_reference(source, args, func=None, groups=None):
    from tlinterp.interp import run

    return run(source, args, func=func, groups=groups)


# v0.4 writes .atomic before the transposes (gemm.atomic.n.t)
_TRANSPOSED = re.compile(r"\b(gemm|gemv|axpby|sum)((?:\.atomic)?)((?:\.[nt])+)")


def wrong_transpose(source, args, func=None, groups=None):
    """Treats every `.t` as `.n`."""
    fixed = _TRANSPOSED.sub(lambda m: m.group(1) + m.group(2) + m.group(3).replace(".t", ".n"),
                            source)
    return _run_reference(fixed, args, func=func, groups=groups)


def rejects_foreach(source, args, func=None, groups=None):
    if "foreach" in source:
        raise tlinterp.SourceError("foreach is not supported")
    return _run_reference(source, args, func=func, groups=groups)


def _as_if_packed(x: np.ndarray, strides) -> np.ndarray:
    """What a kernel that addresses the buffer with `strides` sees when an implementation
    ignored them and packed `x` canonically (column-major)."""
    flat = x.ravel(order="F")
    idx = sum(np.arange(n).reshape([-1 if k == d else 1 for k in range(x.ndim)]) * s
              for d, (n, s) in enumerate(zip(x.shape, strides)))
    idx = np.broadcast_to(np.asarray(idx), x.shape)
    return np.where(idx < flat.size, flat[np.minimum(idx, flat.size - 1)], 0).astype(x.dtype)


def _non_canonical_args(function, args):
    """(key, strides) of every memref argument (group member) laid out non-canonically."""
    out = []
    for a in function.args:
        t, name = a.type, a.value.name
        mt = t.memref if isinstance(t, GroupType) else t
        if not isinstance(mt, MemrefType):
            continue
        keys = [k for k in args if k == name or re.fullmatch(rf"{re.escape(name)}\.\d+", k)]
        for k in keys:
            arr = np.asarray(args[k])
            shape = arr.shape[1:] if (isinstance(t, GroupType) and k == name) else arr.shape
            given = args.get(f"{name}.strides")
            strides = tuple(int(s) for s in given) if given is not None else tuple(
                s if s is not None else c for s, c in zip(mt.stride, canonical_strides(shape)))
            if strides != canonical_strides(shape):
                out.append((k, strides, isinstance(t, GroupType) and k == name))
    return out


def ignores_strides(source, args, func=None, groups=None):
    program = tlinterp.check(tlinterp.parse(source))  # reject before binding
    args = dict(args)
    for key, strides, stacked in _non_canonical_args(program.function(func), args):
        x = args[key]
        args[key] = (np.stack([_as_if_packed(m, strides) for m in x]) if stacked
                     else _as_if_packed(x, strides))
    return _run_reference(source, args, func=func, groups=groups)


def _uses_matrix_transpose(case) -> bool:
    for inst in walk(tlinterp.parse(case.source(), lang=case.lang).function(case.func).body):
        if isinstance(inst, BLAS):
            flags = [(getattr(inst, "trans", False) or getattr(inst, "trans_a", False),
                      inst.a_type),
                     (getattr(inst, "trans_b", False), getattr(inst, "b_type", None))]
            if any(f and t is not None and t.order == 2 for f, t in flags):
                return True
    return False


def _strided_arguments(case) -> bool:
    function = tlinterp.parse(case.source(), lang=case.lang).function(case.func)
    return bool(_non_canonical_args(function, case.args()))


@pytest.mark.parametrize("plugin, should_fail", [
    ("wrong_transpose", _uses_matrix_transpose),
    ("ignores_strides", _strided_arguments),
    ("rejects_foreach", lambda case: "foreach" in case.source()),
])
def test_broken_implementation_fails_exactly_its_cases(corpus, plugin, should_fail):
    verdicts = run_all(from_spec(f"python:{__name__}:{plugin}"), corpus, jobs=2)
    expected = {c.id for c in corpus if c.kind == "valid" and should_fail(c)}
    assert len(expected) >= 10
    assert _failed(verdicts) == expected
    assert not any(v.status == "fail" for v in verdicts if v.case.kind == "undefined")


def test_broken_implementation_exit_status(tmp_path):
    assert main(["--impl", f"python:{__name__}:rejects_foreach", "--filter", "valid/control",
                 "--quiet"]) == 1


# --- the CLI's contract ----------------------------------------------------------------------

def test_expand_template_optional_parts():
    t = "tool {kernel} --out {out} [--func {func}] [--groups {groups}]"
    assert expand_template(t, {"kernel": "a b.tl", "out": "o", "func": None,
                               "groups": "3"}) == ["tool", "a b.tl", "--out", "o",
                                                   "--groups", "3"]


@pytest.mark.parametrize("argv", [
    ["--impl", "nonsense"], ["--impl", "python:no_such_module:f"],
    ["--impl", "python:tlinterp:no_such_function"], ["--impl", "tool {kernel} {bogus}"],
    ["--impl", "tlinterp", "--corpus", "/nonexistent"],
    ["--impl", "tlinterp", "--filter", "no-case-has-this-name"],
    ["--impl", "tlinterp", "-j", "0"],
    ["--impl", "opencl", "--lowering", "no_such_knob=1"],
    ["--impl", "opencl", "--lowering", "max_tile=many"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "tlconform:" in capsys.readouterr().err


@pytest.mark.opencl
def test_lowering_overrides_reach_the_opencl_implementation(capsys):
    """--lowering is applied to every case: a 1-byte local-memory budget fails the cases with
    an alloca, and only those; the defaults pass them."""
    argv = ["--impl", "opencl", "--device", "pocl", "--quiet", "--filter", "views/alloca_"]
    assert main(argv) == 0
    assert main(argv + ["--lowering", "local_memory_bytes=1"]) == 1
    assert "local memory" in capsys.readouterr().out


def test_spec_errors_are_clear():
    with pytest.raises(SpecError, match="python:MODULE:FUNCTION"):
        from_spec("python:only_module")


def slow(source, args, func=None, groups=None):
    time.sleep(2)
    return {}


def crashes(source, args, func=None, groups=None):
    raise ZeroDivisionError("boom")


def test_timeouts_and_crashes_fail_the_case(corpus):
    case = [c for c in corpus if c.id == "valid/views/fuse_static"]
    (v,) = run_all(from_spec(f"python:{__name__}:slow"), case, timeout=0.2)
    assert v.status == "fail" and "within 0.2 s" in v.detail
    (v,) = run_all(from_spec(f"python:{__name__}:crashes"), case)
    assert v.status == "fail" and "ZeroDivisionError: boom" in v.detail


class Exits(BaseException):
    """Not an Exception: what a plug-in's own control flow might raise."""


def raises_base_exception(source, args, func=None, groups=None):
    raise Exits("out")


def raises_keyboard_interrupt(source, args, func=None, groups=None):
    raise KeyboardInterrupt


@pytest.mark.parametrize("fn, words", [("raises_base_exception", "Exits: out"),
                                       ("raises_keyboard_interrupt", "KeyboardInterrupt")])
def test_a_plugin_raising_a_base_exception_crashes_its_case(corpus, fn, words):
    case = [c for c in corpus if c.id == "valid/views/fuse_static"]
    (v,) = run_all(from_spec(f"python:{__name__}:{fn}"), case, timeout=30)
    assert v.status == "fail" and words in v.detail


def _tiny_corpus(root: Path) -> Path:
    """One case of each kind, copied from the real corpus."""
    import shutil

    for case in load_corpus(CORPUS):
        if case.kind == "valid" and not (root / "valid").exists() or \
                case.kind != "valid" and not (root / case.kind).exists():
            stem = case.kernel.with_suffix("")
            target = root / case.id
            target.parent.mkdir(parents=True, exist_ok=True)
            for f in stem.parent.glob(stem.name + ".*"):
                shutil.copy(f, target.parent / f.name)
    return root


@pytest.mark.parametrize("kind, meta, words", [
    ("valid", [1, 2], "must be a JSON object, got list"),
    ("valid", None, "must be a JSON object, got NoneType"),
    ("valid", {"func": 7}, '"func" must be a function name'),
    ("valid", {"tags": "x"}, '"tags" must be an object of lists'),
    ("valid", {"tags": {"instruction": 5}}, '"tags" must be an object of lists'),
    ("valid", {"groups": 0}, '"groups" must be a work-group count'),
    ("valid", {"groups": [2, 0]}, '"groups" must be a work-group count >= 1, a grid'),
    ("valid", {"groups": [1, 1, 1, 1]}, '"groups" must be a work-group count >= 1, a grid'),
    ("valid", {"warning": {"range": 5}}, '"warning" must be an object'),
    ("invalid", [], "must be a JSON object"),
    ("undefined", {"kind": 5}, '"kind" must be the name'),
    ("undefined", {"kind": ["a"]}, '"kind" must be the name'),
])
def test_a_malformed_case_description_is_a_corpus_error(tmp_path, capsys, kind, meta, words):
    import json

    root = _tiny_corpus(tmp_path / "c")
    (desc,) = [p for p in (root / kind).rglob("*.json")]
    desc.write_text(json.dumps(meta))
    assert main(["--impl", "interp", "--corpus", str(root), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_a_case_description_without_its_kernel_is_a_corpus_error(tmp_path, capsys):
    root = _tiny_corpus(tmp_path / "c")
    (kernel,) = [p for p in (root / "valid").rglob("*.tl")]
    kernel.unlink()
    assert main(["--impl", "interp", "--corpus", str(root), "--quiet"]) == 2
    assert "without its kernel source" in capsys.readouterr().err


@pytest.mark.parametrize("options, words", [
    pytest.param(["--impl", "opencl", "--device", "no-such-device"],
                 "no OpenCL device matches", marks=pytest.mark.opencl),
    pytest.param(["--impl", "interp", "--device", "no-such-device"],
                 "no OpenCL device matches", marks=pytest.mark.opencl),
    (["--impl", "interp", "--lowering", "load_batch=2"], "--lowering needs --impl opencl"),
    (["--impl", "interp", "--work-group-size", "0x0"], "expects W0xW1"),
])
def test_setup_mistakes_exit_2_before_any_case(options, words, capsys):
    assert main([*options, "--filter", "gemm_f32", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and "passed" not in err


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, left unreaped by a container's init, does
    not: Linux names it by state Z in /proc; elsewhere init reaps it and it is gone)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if not Path("/proc/self").exists():  # no /proc: the signal's answer is all there is
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:  # it ended meanwhile
        return False
    return state != "Z"


def test_a_command_answers_when_it_ends_not_when_its_helpers_do(corpus, tmp_path):
    """A background helper holding stdout open must neither turn an instant answer into a
    timeout nor outlive the case; endless output is read up to a bound."""
    import stat

    from tlinterp.impl.command import MAX_OUTPUT

    pidfile = tmp_path / "helper.pid"
    script = tmp_path / "answers.sh"
    script.write_text(f'#!/bin/sh\nsleep 60 &\necho $! > "{pidfile}"\n'
                      'yes spam | head -c 40000000\ncp "$2" "$3"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    case = [c for c in corpus if c.id == "valid/views/fuse_static"]
    start = time.monotonic()
    (v,) = run_all(from_spec(f"{script} {{kernel}} {{args}} {{out}}"), case, timeout=20)
    assert time.monotonic() - start < 15
    assert v.outcome.status == "ok", v.detail
    assert len(v.outcome.message) < 2 * MAX_OUTPUT + 1000
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _running(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(helper)

