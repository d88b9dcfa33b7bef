"""`tlfuzz --passes`: every pass of an IR optimiser validated (fuzz/suites/passes.py) and
the round trip of `ir:` (--roundtrip-check). The optimiser is a stand-in written in Python,
with tinytc-opt's command line (`[-O2] [-d X] -p PASS ... FILE`, `--help` listing "Passes:",
IR printed after the last pass unless it is a dump), whose passes plant the bugs: one that
changes a result, one whose output does not read back, one that hangs, analyses that print
nothing or change the IR. No tinytc here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.harness import differential
from fuzz.strategies import FuzzCase
from fuzz.suites.passes import NEEDS, PIPELINES, PassSuite, is_analysis, tool_passes
from tlinterp.impl import ImplOptions, Job, resolve

ROOT = Path(__file__).resolve().parent.parent

KERNEL = """\
func @k(%A: memref<i32 x 2>, %F: memref<f32 x 2>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %two = constant 2 : i32
    %three = constant 3 : i32
    %s = add %two, %three : i32
    store %s, %A[%c0]
    %x = load %F[%c0] : f32
    %y = add %x, %x : f32
    store %y, %F[%c1]
}
"""

# tinytc-opt's command line; each pass is a text rewrite (or a dump) of the kernel
OPTIMISER = r'''
import re, sys, time
PASSES = {
    "check-ir": lambda t: t,
    "identity": lambda t: t,
    "dump-ir": lambda t: t,
    # changes a result: 2 + 3 becomes 2 - 3
    "wrong-fold": lambda t: t.replace("add %two, %three", "sub %two, %three"),
    # prints an instruction without its mnemonic, which nobody reads back
    "no-readback": lambda t: t.replace("= add %x, %x", "= %x, %x"),
    # reads back in our front end only: the stand-in's checker refuses the word "dropped"
    "their-readback": lambda t: t.replace(") {\n", ") { ; dropped\n", 1),
    "work-group-size": lambda t: t,
    "lower-linalg": lambda t: t,
    # every output is followed by a line that is no IR
    "garbage-tail": lambda t: t + "this is not IR\n",
}
ANALYSES = {"dump-good": "analysis of @k\n", "dump-silent": "", "dump-eats": None}
args = sys.argv[1:]
if args == ["--help"]:
    print("Usage: opt [-O arg] [-p arg]... file\n\nPasses:")
    for p in [*PASSES, *ANALYSES, "hang"]:
        print("    " + p)
    print("\nOptimization flags:\n    unsafe-fp-math")
    sys.exit(0)
passes, i, path = [], 0, None
while i < len(args):
    if args[i] == "-p":
        passes.append(args[i + 1]); i += 2
    elif args[i] in ("-d", "-f"):
        i += 2
    elif args[i].startswith("-O"):
        i += 1
    else:
        path = args[i]; i += 1
text = open(path).read()
if "dropped" in text:
    print(f"{path}:1.1: Unknown token", file=sys.stderr)
    sys.exit(1)
if "lower-linalg" in passes and "work-group-size" not in passes[:passes.index("lower-linalg")]:
    print(f"{path}:1.1-8: Internal compiler error (Subgroup size is missing)", file=sys.stderr)
    sys.exit(1)
for p in passes:
    if p == "hang":
        time.sleep(300)
    if p == "dump-ir":
        sys.stdout.write(text)
    elif p in ANALYSES:
        if ANALYSES[p] is None:
            text = text.replace("store %y, %F[%c1]\n", "")
        else:
            sys.stdout.write(ANALYSES[p])
    else:
        text = PASSES[p](text)
if not passes or not passes[-1].startswith("dump"):
    sys.stdout.write(text)
'''


@pytest.fixture
def tool(tmp_path: Path) -> str:
    path = tmp_path / "opt.py"
    path.write_text(OPTIMISER)
    path.chmod(0o755)
    wrapper = tmp_path / "opt"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {path} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def case() -> FuzzCase:
    program = tlinterp.check(tlinterp.parse(KERNEL, "k.tl", lang="v0.4"))
    return FuzzCase(program, "k", {"A": np.zeros(2, np.int32),
                                   "F": np.array([1.5, 0], np.float32)}, 1, "v0.4")


def suite(tool: str, passes: list[str], pipelines=None, timeout: float = 20.0) -> PassSuite:
    return PassSuite(tool, passes, "-d pvc", ImplOptions(reject_status=(1,)), timeout,
                     pipelines={} if pipelines is None else pipelines)


def keys(findings) -> dict[str, object]:
    return {getattr(f, "construct", f.kind): f for f in findings}


def test_the_pass_list_comes_from_the_tools_help(tool):
    passes = tool_passes(tool)
    assert passes[:2] == ["check-ir", "identity"] and "hang" in passes
    assert is_analysis("dump-good") and not is_analysis("dump-ir")
    with pytest.raises(ValueError, match="lists no 'Passes:'"):
        tool_passes("/bin/true")


def test_a_correct_pass_has_no_finding(tool):
    assert suite(tool, ["identity", "check-ir", "dump-ir"]).differential([case()]) == []


def test_a_pass_that_changes_a_result_is_a_mismatch_named_by_the_pass(tool):
    found = keys(suite(tool, ["identity", "wrong-fold"]).differential([case()]))
    assert list(found) == ["wrong-fold: mismatch"]
    f = found["wrong-fold: mismatch"]
    assert f.kind == "pass-mismatch"
    assert "A[0]: expected 5, got -1" in f.message
    assert f.impl[0] == f"ir:{tool} -d pvc -p wrong-fold {{tl}}"
    # the reproduce line reruns the pass with its round trip
    header = f.header("/f/x")
    assert "--roundtrip-check" in header and "-p check-ir {tl}" in header


def test_an_output_that_does_not_read_back_is_a_roundtrip_finding(tool):
    found = keys(suite(tool, ["no-readback", "their-readback"]).differential([case()]))
    # keyed by pass, kind and what the reader refused (two printer bugs of one pass are two)
    assert set(found) == {"no-readback: roundtrip: expected an instruction or 'for', found '%_'",
                          "their-readback: roundtrip: Unknown token"}, set(found)
    found = {k.split(": ")[0]: f for k, f in found.items()}
    assert {f.kind for f in found.values()} == {"pass-roundtrip"}
    ours = found["no-readback"].message
    # our front end refuses it; the stand-in's checker reads anything without "dropped"
    assert "the rewritten program is not valid v0.4" in ours
    assert "refuses what the pass wrote" not in ours
    theirs = found["their-readback"].message
    assert "round trip: the checker" in theirs and "-p check-ir rewritten.tl" in theirs
    assert "rewritten.tl:1.1: Unknown token" in theirs
    assert "not valid v0.4" not in theirs  # our front end reads the comment


def test_a_hanging_pass_is_bounded_and_reported(tool):
    s = suite(tool, ["hang"], timeout=2.0)
    found = keys(s.differential([case()]))
    assert list(found) == ["hang: hang"]
    assert "no answer within 2 s" in found["hang: hang"].message


def test_analyses_must_print_something_and_pass_the_ir_on(tool):
    found = keys(suite(tool, ["dump-good", "dump-silent", "dump-eats"]).differential([case()]))
    assert set(found) == {"dump-silent: analysis", "dump-eats: analysis"}
    assert "printed nothing" in found["dump-silent: analysis"].message
    assert "the IR after the analysis is not the IR before it" in \
        found["dump-eats: analysis"].message
    # no tlfuzz line reruns an analysis: the finding's first line is the tool's own command
    assert found["dump-eats: analysis"].header("/f/x") == \
        f"{tool} -d pvc -p dump-eats -p dump-ir /f/x.tl"


def test_a_pass_runs_with_the_passes_it_needs_and_pipelines_run_in_order(tool):
    assert NEEDS["lower-linalg"] == ("work-group-size",)
    assert PIPELINES["-O0"][0] == PIPELINES["-O0"][-1] == "check-ir"
    assert "constant-propagation" in PIPELINES["-O2"]
    assert "constant-propagation" not in PIPELINES["-O0"]
    # lower-linalg alone stops as tinytc's lowerings do: it runs after work-group-size
    s = suite(tool, ["lower-linalg"])
    assert s.checks() == [("lower-linalg",
                           f"{tool} -d pvc -p work-group-size -p lower-linalg {{tl}}")]
    assert keys(s.differential([case()])) == {}
    s = suite(tool, [], pipelines={"-O2": ("identity", "wrong-fold", "check-ir")})
    assert s.checks() == [("pipeline -O2",
                           f"{tool} -O2 -d pvc -p identity -p wrong-fold -p check-ir {{tl}}")]
    assert list(keys(s.differential([case()]))) == ["pipeline -O2: mismatch"]


def test_the_sandbox_hands_the_batch_to_the_suite(tool):
    found = differential([case()], impl=suite(tool, ["wrong-fold"]), timeout=5)
    assert [f.kind for f in found] == ["pass-mismatch"]


def test_roundtrip_check_through_tlrun(tool, tmp_path):
    """--roundtrip-check is an implementation flag: tlrun says the round trip failed."""
    kernel = tmp_path / "k.tl"
    kernel.write_text(KERNEL)
    np.savez(tmp_path / "k.npz", **case().args)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "tlinterp.cli", str(kernel), "--args",
                        str(tmp_path / "k.npz"), "--impl", f"ir:{tool} -p their-readback {{tl}}",
                        "--roundtrip-check", f"{tool} -p check-ir {{tl}}"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "refuses what the pass wrote" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "tlinterp.cli", str(kernel), "--impl",
                        f"ir:{tool} {{tl}}", "--roundtrip-check", "checker"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "the template needs {tl}" in r.stderr


def test_the_roundtrip_outcome_names_its_kind(tool):
    spec = f"ir:{tool} -p their-readback {{tl}}"
    job = Job(KERNEL, case().args, filename="k.tl")
    o = resolve(spec, ImplOptions(roundtrip_check=f"{tool} -p check-ir {{tl}}")).run(job)
    assert o.status == "crashed" and o.finding == "roundtrip"
    o = resolve(spec).run(job)  # without a checker only our front end reads it: it can
    assert o.status == "ok" and o.finding == ""


def test_the_campaign_saves_one_finding_per_pass_and_kind(tool, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--lang", "v0.4",
                        "--passes", "identity,garbage-tail", "--pass-tool", tool,
                        "--reject-status", "1", "--time", "60s", "-j", "1", "-q", "--batch",
                        "1", "--shrink-time", "3", "--out", str(out)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stderr
    # every generated kernel goes wrong in garbage-tail: saved once, the others counted
    saved = sorted(p.name for p in out.glob("pass-*.tl"))
    assert len(saved) == 1 and saved[0].startswith("pass-roundtrip-garbage-tail-"), saved
    text = (out / saved[0]).with_suffix(".txt").read_text()
    assert text.startswith("tlfuzz reproduce ") and "key: garbage-tail: roundtrip" in text
    assert "this is not IR" in text
    assert len((out / saved[0]).with_suffix(".cases").read_text().splitlines()) >= 2


def test_usage_errors(tool, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for argv, says in ((["--passes", "all"], "--passes needs --pass-tool"),
                       (["--pass-tool", tool], "--pass-tool needs --passes"),
                       (["--passes", "nope", "--pass-tool", tool], "nope: not a pass of"),
                       (["--passes", "all", "--pass-tool", tool, "--compare-levels",
                         "x {flags} {kernel}"], "two modes")):
        r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--lang", "v0.4",
                            "--out", str(tmp_path / "o"), *argv], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 2 and says in r.stderr, (argv, r.stderr)
        assert "Traceback" not in r.stderr
