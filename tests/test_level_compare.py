"""`tlfuzz --compare-levels`: one compiler at several flag sets (fuzz/suites/levels.py).
The compiler is a stand-in command template written in Python: it runs the interpreter and,
at the flags that plant a bug, changes the result (-O2: an integer off by one; unsafe:
floats off by a relative 1e-6 or 1e-1), crashes (-O3), or rejects. No tinytc here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.findings import Finding
from fuzz.strategies import FuzzCase
from fuzz.suites.levels import LevelSuite, unsafe
from tlinterp.impl import ImplOptions

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

# a compiler as a command template: FLAGS... KERNEL --args ARGS --out OUT
COMPILER = r'''
import sys
sys.path.insert(0, ROOT)
import numpy as np
import tlinterp
from tlinterp.io.args import load_npz, parse_groups, save_npz
argv = sys.argv[1:]
at = argv.index("--args")
kernel, flags = argv[at - 1], argv[:at - 1]
args, out = argv[at + 1], argv[argv.index("--out") + 1]
func = argv[argv.index("--func") + 1] if "--func" in argv else None
groups = parse_groups(argv[argv.index("--groups") + 1]) if "--groups" in argv else None
if "-O3" in flags:
    sys.exit(134)  # an abort
if "-Oreject" in flags:
    print(f"{kernel}:5.5-40: not supported", file=sys.stderr)
    sys.exit(2)
program = tlinterp.check(tlinterp.parse(open(kernel).read(), kernel, lang="v0.4"))
result = tlinterp.run(program, load_npz(args), func=func, groups=groups)
for k, v in result.items():
    v = np.array(v)
    if "-O2" in flags and v.dtype.kind in "iu" and v.size:
        v.flat[0] += 1  # every integer array's first element off by one
    for f in flags:
        if f.startswith("unsafe=") and v.dtype.kind == "f":
            v = v * v.dtype.type(1 + float(f[7:]))
    result[k] = v
save_npz(out, result)
'''


@pytest.fixture
def template(tmp_path: Path) -> str:
    path = tmp_path / "cc.py"
    path.write_text(COMPILER.replace("ROOT", repr(str(ROOT))))
    return (f"{sys.executable} {path} {{flags}} {{kernel}} --args {{args}} --out {{out}} "
            "[--func {func}] [--groups {groups}]")


def case() -> FuzzCase:
    program = tlinterp.check(tlinterp.parse(KERNEL, "k.tl", lang="v0.4"))
    return FuzzCase(program, "k", {"A": np.zeros(2, np.int32),
                                   "F": np.array([1.5, 0], np.float32)}, 1, "v0.4")


def suite(template: str, variants: list[str], tolerance: float = 1e-3) -> LevelSuite:
    return LevelSuite.make(template, variants, ImplOptions(), 60.0, tolerance)


def test_equal_levels_have_no_finding(template):
    assert suite(template, ["-O0", "-O1"]).differential([case()]) == []


def test_two_levels_that_differ_name_the_one_the_interpreter_agrees_with(template):
    s = suite(template, ["-O0", "-O2"])
    found = s.differential([case()])
    assert [(f.kind, f.construct) for f in found] == [("levels-differ", "-O0 vs -O2: differ")]
    f = found[0]
    assert "A[0]: expected 5, got 6" in f.message
    assert "the interpreter agrees with -O0, not with -O2" in f.message
    assert f.impl[0] == template.replace("{flags}", "-O2")  # rerun: the one that differs
    assert f.header("/f/x").startswith("tlfuzz reproduce /f/x.tl --args /f/x.npz")


def test_a_difference_is_a_finding_where_the_interpreter_cannot_run_the_kernel(template):
    s = suite(template, ["-O0", "-O2"])
    c = case()
    problem = Finding(c, "interp-error", "NotExecutable: not yet executable: foo at 3.5-9")
    found = s.check_case(c, None, problem, 60.0)
    assert [f.kind for f in found] == ["interp-error", "levels-differ"]
    assert "the interpreter cannot run this kernel (NotExecutable: not yet executable" \
        in found[1].message
    assert "no reference" in found[1].message


def test_unsafe_math_is_compared_within_a_tolerance(template):
    assert suite(template, ["-O0", "unsafe=1e-6"]).differential([case()]) == []
    found = suite(template, ["-O0", "unsafe=1e-1"]).differential([case()])
    assert [f.construct for f in found] == ["-O0 vs unsafe=1e-1: differ"]
    assert "F[1]" in found[0].message
    assert unsafe("-O2 -f unsafe-fp-math") and not unsafe("-O2 -f no-unsafe-fp-math")
    # the same difference without "unsafe" in the variant's name is compared by the oracle
    plain = suite(template, ["-O0", "unsafe=1e-6"], tolerance=1e-9).differential([case()])
    assert [f.construct for f in plain] == ["-O0 vs unsafe=1e-6: differ"]


def test_a_crash_or_rejection_at_one_level_is_a_status_finding(template):
    found = suite(template, ["-O0", "-O3", "-Oreject"]).differential([case()])
    kinds = {f.construct: f for f in found}
    assert set(kinds) == {"-O0 vs -O3: status", "-O0 vs -Oreject: status", None} - {None} \
        | {k for k in kinds if kinds[k].kind == "rejected-construct"}
    assert "-O0 ok, -O3 crashed" in kinds["-O0 vs -O3: status"].message
    assert any(f.kind == "rejected-construct" for f in found)


def test_every_level_wrong_is_a_mismatch_with_the_interpreter(template):
    found = suite(template, ["-O2", "-O2 -g"]).differential([case()])
    assert [(f.kind, f.construct) for f in found] == [
        ("levels-mismatch", "every variant: differs from the interpreter")]


def test_usage_errors(template, tmp_path):
    with pytest.raises(ValueError, match="needs {flags}"):
        suite(template.replace("{flags}", ""), ["-O0", "-O2"])
    with pytest.raises(ValueError, match="at least two"):
        suite(template, ["-O0"])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--variants", "-O0",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "--variants needs --compare-levels" in r.stderr


def test_the_campaign_finds_two_levels_that_differ(template, tmp_path):
    """Generated kernels at -O0 and -O2: every one with an integer argument differs, saved
    once for the pair."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--lang", "v0.4",
                        "--compare-levels", template, "--variants", "-O0", "-O2",
                        "--time", "60s", "-j", "1", "-q", "--batch", "1", "--shrink-time", "3",
                        "--out", str(out)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stderr
    saved = sorted(p.name for p in out.glob("levels-*.tl"))
    assert len(saved) == 1 and saved[0].startswith("levels-differ-O0-vs-O2-"), saved
    text = (out / saved[0]).with_suffix(".txt").read_text()
    assert "the interpreter agrees with -O0, not with -O2" in text
