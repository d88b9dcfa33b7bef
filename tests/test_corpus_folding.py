"""corpus/cases/v04/folding.py: the scalar operations on constants only (so a compiler with
constant propagation computes them itself), on disk as generated, agreeing with the reference
interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from corpus.cases.v04 import folding
from tlinterp import parse
from tlinterp.lang import ir

ROOT = Path(__file__).resolve().parents[1]


def test_every_operand_is_a_constant_or_a_folded_result() -> None:
    cases = folding.cases()
    assert {c.name for c in cases} >= {"folded_int_ops_i8", "folded_float_ops_f16",
                                       "folded_complex_ops_c64", "folded_casts_from_i32"}
    for case in cases:
        fn = parse(case.source, lang="v0.4").functions[0]
        kinds = {type(inst).__name__ for inst in ir.walk(fn.body)}
        # nothing comes from memory or from the launch: every value is known when compiling
        assert not kinds & {"Load", "Foreach", "ForeachNd", "ForeachTile"}, case.name
        assert "Constant" in kinds, case.name
        assert all(a.value.name in case.expected for a in fn.args), case.name


def test_the_folded_cases_are_on_disk_and_the_interpreter_agrees() -> None:
    done = subprocess.run([sys.executable, "-m", "corpus.generate", "--check", "--filter",
                           "*folded*"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 problem(s)" in done.stdout
