"""Hostile inputs whose answer was wrong or unclear: the versions disagreeing on an integer
constant that does not fit its type, and messages that misled or said nothing (a -D on a v0.3
file, a 100 KB -D value, a group count too large for memory, a deep attribute, a corpus case
of an unknown version, options silently ignored, a listing cut without saying so, messages
that depend on the terminal's width)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.cli import main as tlfuzz
from fuzz.conform.cli import main as tlconform
from tlinterp.cli import tlrun as cli
from tlinterp.front import migrate
from tlinterp.lang.v03 import printer
from tlinterp.lang.v03.parser import MAX_NESTING

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CORPUS = ROOT / "corpus"
V04 = CORPUS / "v04" / "valid"

SECONDS = 60  # generous for a loaded 2-core machine


def run_tool(main, argv: list, capsys) -> tuple[int, str]:
    """A tool's `main` in-process: (exit status, stdout + stderr), with no traceback, no
    internal error and bounded time."""
    start = time.perf_counter()
    rc = main([str(a) for a in argv])
    seconds = time.perf_counter() - start
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc in (0, 1, 2, 130), text[-2000:]
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    return rc, text


# --- an integer constant that does not fit its type: an error in both versions ----------------

V04_CONSTANT = """func @k(%A: memref<{type} x 4>) {
    %c = constant {value} : {type}
    %i = constant 0 : index
    store %c, %A[%i]
}
"""


@pytest.mark.parametrize("value,type_", [(300, "i8"), (-129, "i8"), (128, "i8"),
                                         (65536, "i16"), (2**31, "i32")])
@pytest.mark.parametrize("mode", [["--check"], ["--emit", "ir", "--lang", "v0.3"]])
def test_v04_rejects_an_integer_constant_outside_its_type(value, type_, mode, tmp_path,
                                                          capsys):
    """v0.4 wrapped `constant 300 : i8` to 44, and its v0.3 form was a program the v0.3
    checker rejects; now both versions say the same, at the constant."""
    k = tmp_path / "k.tl"
    k.write_text(V04_CONSTANT.replace("{value}", str(value)).replace("{type}", type_))
    rc, text = run_tool(cli.main, [k, *mode], capsys)
    assert rc == 2
    end = 21 + len(str(value)) + len(type_)  # the constant instruction, whole
    assert f"k.tl:2.5-{end}: constant {value} does not fit type {type_}" in text
    v03 = f"func @k(%A: memref<{type_}x4>) {{\n  store {value}, %A[0] : memref<{type_}x4>\n}}\n"
    with pytest.raises(tlinterp.SourceError, match=f"constant {value} does not fit type"):
        tlinterp.check(tlinterp.parse(v03))


@pytest.mark.parametrize("value,type_", [(127, "i8"), (-128, "i8"), (2**31 - 1, "i32"),
                                         (2**63 - 1, "i64")])
def test_v04_constants_at_the_ends_of_their_range_migrate(value, type_):
    text = V04_CONSTANT.replace("{value}", str(value)).replace("{type}", type_)
    program = tlinterp.check(tlinterp.parse(text, lang="v0.4"))
    v03 = printer.format_program(migrate.to_v03(program))
    assert f"store {value}, %A[0]" in v03
    tlinterp.check(tlinterp.parse(v03, lang="v0.3"))


# --- -D -------------------------------------------------------------------------------------


def test_d_on_a_v03_file_says_so(capsys):
    """It said "expected 'x', found '>'" (the v0.3 group type read as v0.4)."""
    rc, text = run_tool(cli.main, [EXAMPLES / "fused_kernel.tl", "-D", "n=3", "--check"],
                        capsys)
    assert rc == 2
    assert ("fused_kernel.tl: -D makes definitions for the v0.4 preprocessor, but this file "
            "reads as tensor language v0.3") in text
    assert "expected 'x'" not in text


@pytest.mark.parametrize("flag", ["x=" + "!" * 100_000, "x=" + " " * 100_000],
                         ids=["bad-value", "empty-value"])
def test_a_100kb_d_value_is_cut_in_messages(flag, capsys):
    """The preprocessor's error and argparse's both echoed the whole flag."""
    rc, text = run_tool(cli.main, [V04 / "preprocessor.tl", "-D", flag, "--check"], capsys)
    assert rc == 2
    assert re.search(r"-D '?x=", text) and f"... ({len(flag)} characters)" in text
    assert len(text) < 3000


def test_too_many_work_groups_for_memory_name_the_count(tmp_path, capsys):
    """10^9 work-groups were "out of memory ... reading or comparing arguments"."""
    (tmp_path / "k.tl").write_text("func @m(%A: memref<f32x4>) {\n"
                                   "  store 1.0, %A[0] : memref<f32x4>\n}\n")
    np.savez(tmp_path / "a.npz", A=np.zeros(4, np.float32))
    for groups in ("1000000000", "1000000000,1,1", "1000,1000,1000"):
        rc, text = run_tool(cli.main, [tmp_path / "k.tl", "--args", tmp_path / "a.npz",
                                       "--groups", groups], capsys)
        assert rc == 1
        assert "error: the group count 1000000000 (96 bytes of interpreter state per " \
               "work-group) needs 89.41 GiB, more than the" in text
        assert "reading or comparing" not in text


# --- deep attributes ----------------------------------------------------------------------------


def _attribute_kernel(opening: str, closing: str, levels: int, where: str = "function") -> str:
    value = opening * levels + "1" + closing * levels
    if where == "function":
        return f'func @k() attributes{{"x"={value}}} {{\n}}\n'
    return f'func @k(%a: f32 {{"x"={value}}}) {{\n}}\n'


@pytest.mark.parametrize("where", ["function", "parameter"])
@pytest.mark.parametrize("kind,opening,closing", [
    ("attribute arrays", "[", "]"),
    ("regions and attribute dictionaries", '{"a"=', "}")])
def test_a_100000_deep_attribute_names_the_nesting(kind, opening, closing, where, tmp_path,
                                                    capsys):
    """It was a wrong syntax error ("expected ',' or ')'", "regions nested too deeply").
    100,000 levels once; 5,000 elsewhere, as the version detection takes seconds to scan
    100,000 (tlinterp/front/detect.py)."""
    levels = 100_000 if opening == "[" and where == "function" else 5_000
    k = tmp_path / "k.tl"
    k.write_text(_attribute_kernel(opening, closing, levels, where))
    rc, text = run_tool(cli.main, [k, "--check"], capsys)
    assert rc == 2
    assert f": {kind} nested deeper than {MAX_NESTING} levels are not supported" in text


@pytest.mark.parametrize("opening,closing,levels", [("[", "]", MAX_NESTING),
                                                    ('{"a"=', "}", MAX_NESTING - 2)])
def test_the_deepest_attribute_prints_back(opening, closing, levels, tmp_path, capsys):
    """As deep as the parser takes (a dictionary inside the function's attributes, inside
    the function's braces): checked, and printed back unchanged."""
    k = tmp_path / "k.tl"
    k.write_text(_attribute_kernel(opening, closing, levels))
    rc, text = run_tool(cli.main, [k, "--emit", "ir"], capsys)
    assert rc == 0 and text == k.read_text()


# --- a corpus case of an unknown version ------------------------------------------------------


@pytest.mark.parametrize("lang", ["v9", 4, ""])
def test_a_corpus_case_of_an_unknown_version_is_a_corpus_error(lang, tmp_path, capsys):
    """It was run and blamed on the implementation ("crashed: raised ValueError")."""
    case = tmp_path / "corpus" / "valid" / "x"
    case.mkdir(parents=True)
    for kind in ("invalid", "undefined"):
        (tmp_path / "corpus" / kind).mkdir()
    for suffix in (".tl", ".args.npz", ".expected.npz"):
        shutil.copy(CORPUS / "valid" / "v04" / f"arith_bf16{suffix}", case / f"k{suffix}")
    (case / "k.json").write_text(json.dumps({"func": None, "groups": None, "lang": lang}))
    rc, text = run_tool(tlconform, ["--corpus", tmp_path / "corpus", "--impl", "interp"],
                        capsys)
    assert rc == 2
    assert f'k.json: "lang" must be "v0.3" or "v0.4" (absent: v0.3), got {lang!r}' in text
    assert "crashed" not in text and "FAIL" not in text


# --- options that were silently ignored ---------------------------------------------------------


@pytest.mark.parametrize("extra,words", [
    (["--impl", "interp"], "--mutation plants a bug in our OpenCL lowering, which --impl "
                           "interp does not run"),
    (["--frontend"], "--mutation plants a bug in our OpenCL lowering, which --frontend never "
                     "runs")])
def test_tlfuzz_refuses_a_mutation_nothing_would_plant(extra, words, tmp_path, capsys):
    rc, text = run_tool(tlfuzz, ["--mutation", "rem-sign", *extra, "--time", "5",
                                 "--out", tmp_path / "out"], capsys)
    assert rc == 2 and f"tlfuzz: {words}" in text
    assert not (tmp_path / "out").exists()


def test_emit_writes_to_out(tmp_path, capsys):
    """--out was silently ignored with --emit (the code went to stdout only)."""
    out = tmp_path / "k.v04.tl"
    rc, text = run_tool(cli.main, [EXAMPLES / "fused_kernel.tl", "--emit", "ir", "--lang",
                                   "v0.4", "--out", out], capsys)
    assert rc == 0 and "func @fused_kernel" not in text
    emitted = out.read_text()
    assert f"tlrun: wrote {out} (v0.4 text, {emitted.count(chr(10))} lines)" in text
    assert tlinterp.parse(emitted, lang="v0.4").functions[0].name == "fused_kernel"
    rc, text = run_tool(cli.main, [EXAMPLES / "fused_kernel.tl", "--emit", "ir", "--out",
                                   EXAMPLES / "fused_kernel.tl"], capsys)
    assert rc == 2 and "is the kernel source; --out would replace it" in text


def test_a_repeated_d_name_is_an_error(capsys):
    """The second -D n silently overrode the first."""
    rc, text = run_tool(cli.main, [V04 / "preprocessor.tl", "-D", "n=3", "-D", "m=1", "-D",
                                   "n=4", "--check"], capsys)
    assert rc == 2 and "-D n is given twice ('3' and '4'): define each name once" in text


# --- listings cut without saying so -------------------------------------------------------------


def test_the_per_group_listing_says_how_many_more(capsys):
    """--groups 9 on a group of 4 members: work-groups 4-7 listed, 8 dropped without a word."""
    rc, text = run_tool(cli.main, [EXAMPLES / "fused_kernel.tl", "--args",
                                   EXAMPLES / "fused_kernel.npz", "--groups", "9"], capsys)
    assert rc == 1
    assert [g for g in range(9) if f"work-group {g} loads member {g} of %A" in text] == \
        [4, 5, 6, 7]
    assert "out of bounds: 1 more like the above" in text


# --- messages independent of the terminal's width -----------------------------------------------


@pytest.mark.parametrize("columns", ["40", "80"])
def test_tlconform_messages_are_whole_lines_at_any_width(columns, tmp_path):
    """tests/test_spirv.py matched a message that rich wrapped at 80 columns."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": columns}
    r = subprocess.run([sys.executable, "-m", "fuzz.conform.cli", "--corpus",
                        tmp_path / "nothing", "--impl", "interp"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == (f"tlconform: {tmp_path / 'nothing'}: not a corpus directory (needs "
                        "valid, invalid, undefined/; regenerate with: python -m "
                        "corpus.generate)\n")
