"""Hostile inputs whose answer was wrong or unclear: the versions disagreeing on an integer
constant that does not fit its type, and messages that misled or said nothing (a -D on a v0.3
file, a 100 KB -D value, a group count too large for memory, a deep attribute, a corpus case
of an unknown version, options silently ignored, a listing cut without saying so, messages
that depend on the terminal's width)."""

from __future__ import annotations

import time

import pytest

import tlinterp
from tlinterp import cli, migrate, printer

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
