"""Corpus cases added for code of tinytc that nothing reached (docs/testing-a-compiler.md,
"How much of your compiler do we reach?"): corpus/cases/v04/folding.py, the scalar operations
on constants only (a compiler with constant propagation computes them itself), and the
matrix-engine shapes of corpus/cases/v04/coop.py's mixed-precision mul_add; on disk as
generated, agreeing with the reference interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from corpus.cases.v04 import coop, folding
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


def test_mixed_precision_mul_add_has_matrix_engine_shapes() -> None:
    """M = 16 rows, N = 8 columns and K = 32 (i8) or 16 (f16, bf16): shapes of Intel's DPAS,
    besides K = 8 under the old names."""
    shapes = {}
    for case in coop.mixed_precision():
        a = case.args["A"].shape
        assert case.args["B"].shape == (a[1], 8) and case.expected["D"].shape == (a[0], 8)
        shapes[case.name] = a
    assert shapes["coopmatrix_mul_add_i8_i32"] == (16, 8)
    assert shapes["coopmatrix_mul_add_i8_i32_k32"] == (16, 32)
    assert shapes["coopmatrix_mul_add_f16_f16_k16"] == shapes["coopmatrix_mul_add_bf16_f32_k16"] \
        == (16, 16)


def test_the_cases_are_on_disk_and_the_interpreter_agrees() -> None:
    for pattern in ("*folded*", "*coopmatrix_mul_add*"):
        done = subprocess.run([sys.executable, "-m", "corpus.generate", "--check", "--filter",
                               pattern], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "0 problem(s)" in done.stdout
