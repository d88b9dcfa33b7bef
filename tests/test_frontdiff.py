"""The front-end differential campaign (`tlfuzz --frontend --against 'COMMAND {tl}'`) with
stand-in front ends written here (never tinytc): one that rejects every program using `mul`
disagrees with us, one that is our own checker agrees."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import tlinterp
from fuzz.campaign.frontdiff import DISAGREEMENT, OtherFrontEnd, disagreement
from fuzz.campaign.hunt import HuntOptions, hunt
from fuzz.campaign.rejections import count, save_rejection
from fuzz.strategies import FuzzCase

ROOT = Path(__file__).resolve().parent.parent

# rejects, with a diagnostic, every program that uses `mul` (and nothing else)
NO_MUL = ("sh -c 'if grep -q mul \"$1\"; then echo \"$1:1.1-5: mul is not supported\" >&2; "
          "exit 1; fi' sh {tl}")

# our own parser and checker as "another" front end: it always agrees
AGREE = """\
import sys
import tlinterp
try:
    tlinterp.check(tlinterp.parse(open(sys.argv[1]).read(), sys.argv[1], lang=sys.argv[2]))
except tlinterp.TLError as e:
    print(e.format(), file=sys.stderr)
    sys.exit(1)
"""


def kernel(op: str, name: str = "k") -> str:
    return (f"func @{name}(%a: i32, %A: memref<i32 x 1>) {{\n"
            f"    %c0 = constant 0 : index\n"
            f"    %x = {op} %a, %a : i32\n"
            f"    store %x, %A[%c0]\n"
            f"}}\n")


def case_of(text: str) -> FuzzCase:
    program = tlinterp.check(tlinterp.parse(text, "k.tl"))
    return FuzzCase(program, "k", {"a": np.int32(1), "A": np.zeros(1, np.int32)}, 1)


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                        os.environ.get("PYTHONPATH", "")]))


def test_each_class_of_disagreement():
    other = OtherFrontEnd(NO_MUL)
    found = disagreement(case_of(kernel("mul")), kernel("mul"), "v0.4", other)
    assert found is not None and found.kind == DISAGREEMENT
    assert found.klass == "we-accept-they-reject"
    assert found.construct == "we-accept-they-reject: mul is not supported"
    assert "our checker: accepted" in found.message
    assert "kernel.tl:1.1-5: mul is not supported" in found.message  # theirs, quoted
    assert disagreement(case_of(kernel("add")), kernel("add"), "v0.4", other) is None
    # an invalid program they accept: our diagnostic decides the key
    bad = kernel("add").replace("store %x", "store %y")
    found = disagreement(case_of(kernel("add")), bad, "v0.4", other)
    assert found.klass == "we-reject-they-accept"
    assert found.construct == "we-reject-they-accept: %_ is not defined"
    assert "kernel.tl:4.11-12: %y is not defined" in found.message
    # both reject: no disagreement, wherever each points
    assert disagreement(case_of(kernel("add")), bad.replace("add", "mul"), "v0.4",
                        other) is None


def test_crashing_and_hanging_front_ends(tmp_path):
    text = kernel("add")
    crash = OtherFrontEnd("sh -c 'echo assertion failed >&2; kill -ABRT $$' sh {tl}")
    found = disagreement(case_of(text), text, "v0.4", crash)
    assert found.klass == "they-crash"
    assert found.construct == "they-crash: killed by signal SIGABRT: assertion failed"
    pidfile = tmp_path / "pid"
    hang = OtherFrontEnd(f"sh -c 'sleep 300 & echo $! > {pidfile}; wait' sh {{tl}}",
                         timeout=1.0)
    start = time.monotonic()
    found = disagreement(case_of(text), text, "v0.4", hang)
    assert time.monotonic() - start < 20
    assert found.klass == "they-hang" and found.construct == "they-hang: no answer within N s " \
        "(killed)"
    pid = int(pidfile.read_text())
    for _ in range(50):  # killed with its process group
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(") ")[1].startswith("Z"):
                break
        time.sleep(0.1)
    else:
        raise AssertionError("the front end's child still runs")


def test_one_rule_is_one_finding(tmp_path):
    """Two programs breaking the same rule of theirs: one saved finding, counted twice."""
    other = OtherFrontEnd(NO_MUL)
    first = disagreement(case_of(kernel("mul")), kernel("mul"), "v0.4", other)
    text = kernel("mul").replace("%x", "%product")
    second = disagreement(case_of(text), text, "v0.4", other)
    assert first.construct == second.construct
    out = str(tmp_path / "out")
    (base, new), (base2, new2) = save_rejection(first, out), save_rejection(second, out)
    assert (base, new, new2) == (base2, True, False) and count(base) == 2
    saved = Path(base + ".txt").read_text()
    ours, theirs = saved.splitlines()[:2]
    assert ours == f"ours:   tlrun {base}.tl --check --lang v0.4"
    # the saved commands rerun both sides on the saved file: we accept, they reject
    assert subprocess.run(ours.split(":", 1)[1], shell=True, env=_env(),
                          capture_output=True).returncode == 0
    assert subprocess.run(theirs.split(":", 1)[1], shell=True,
                          capture_output=True).returncode == 1


def test_a_campaign_against_a_front_end_without_mul(tmp_path):
    """tlfuzz end to end: generated v0.3 programs and mutants; the `mul` rule is found."""
    out = tmp_path / "found"
    r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--frontend", "--against",
                        NO_MUL, "--time", "20", "-j", "1", "--shrink-time", "2", "-q",
                        "--out", str(out), "--seed", "1"],
                       capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120)
    assert r.returncode == 1, r.stderr
    keys = {p.read_text().split("\n\n")[1].splitlines()[0] for p in out.glob("*.txt")}
    assert "key: we-accept-they-reject: mul is not supported" in keys, keys
    # the rest are mutants we reject and it accepts (it checks nothing else)
    assert all(k.startswith(("key: we-accept-they-reject: mul",
                             "key: we-reject-they-accept: ")) for k in keys), keys


def test_a_front_end_that_agrees_gives_no_findings(tmp_path, monkeypatch):
    script = tmp_path / "agree.py"
    script.write_text(AGREE)
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the stand-in imports tlinterp
    opts = HuntOptions(frontend=True, against=f"{sys.executable} {script} {{tl}} v0.3",
                       shrink_time=2, out=str(tmp_path / "out"))
    ran = []
    findings = hunt(opts, seed=2, max_batches=12, stop_at=time.time() + 40,
                    progress=lambda n, cov: ran.append(n))
    assert findings == []
    assert len(ran) >= 8


def test_against_usage_errors(capsys, tmp_path):
    from fuzz.campaign.cli import main

    out = str(tmp_path / "out")
    assert main(["--against", "cat {tl}", "--out", out]) == 2
    assert main(["--frontend", "--against", "cat {kernel}", "--out", out]) == 2
    assert main(["--frontend", "--against", "no-such-front-end {tl}", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "--against needs --frontend" in err
    assert "unknown placeholder {kernel}" in err
    assert "cannot run 'no-such-front-end'" in err
    assert not os.path.exists(out)  # a usage error leaves nothing behind


def test_the_shape_of_a_rule():
    from fuzz.campaign.rejections import message_shape

    # tinytc's words for one rule about two programs of different shapes
    assert message_shape("Incompatible tensor shapes (Got A=1x1, B=1x-9223372036854775808, "
                         "C=1x1)") == message_shape("Incompatible tensor shapes (Got a=14, "
                                                    "b=-9223372036854775808, c=14)") \
        == message_shape("Incompatible tensor shapes") == "Incompatible tensor shapes"
    assert message_shape("expected 'func' or end of input, found 'garbage'") == \
        message_shape("expected ')' or end of input, found '%x'")
    assert message_shape("%y is not defined") == "%_ is not defined"


def test_a_mutant_keeps_the_programs_layout():
    """Only the edits differ: v0.4 reads `memref<` as one word, so a mutant spaced out token
    by token (`memref < i32 x 1 >`) was rejected by our parser for its layout alone."""
    from fuzz.campaign.frontend import TOKEN, mutate

    text = kernel("mul")
    assert mutate(text, lambda strategy: 0, min_edits=0) == text
    tokens = TOKEN.findall(text)

    def scripted(*choices):
        answers = list(choices)
        return lambda strategy: answers.pop(0)

    # one edit (the count), at the token `mul`, a word of the vocabulary: `add`
    assert mutate(text, scripted(1, tokens.index("mul"), "vocab", "add")) == kernel("add")
    # a word put between two tokens that touched is kept apart from both
    at = tokens.index("[")
    assert "store %x, %A func %c0]\n" in mutate(text, scripted(1, at, "vocab", "func"))
