"""The v0.4 preprocessor (tlinterp/front/preprocess.py): expansion, scopes, !calc, errors pointing
into the original text, the position map, hostile inputs, and `-D` flags."""

from __future__ import annotations

import argparse
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlinterp.front.preprocess import MAX_EXPANDED, MAX_NESTING, parse_define_flag, preprocess
from tlinterp.lang.diagnostics import SourceError

KERNEL = """\
$elem = f32
$n = 16
$half = !calc($n 2 /)
$tile = memref<$elem x $n x $half, local>
$gcd = {alignment=64, shape_gcd=[$n, $half]}
func @scale(%A: memref<$elem x $n x ?> $gcd) attributes{subgroup_size=$n} {
    %t = alloca : $tile
    %c = constant $half : index
}
"""


def test_expands_types_attributes_and_calc() -> None:
    r = preprocess(KERNEL)
    assert "$" not in r.text and "!calc" not in r.text
    assert "func @scale(%A: memref<f32 x 16 x ?> {alignment=64, shape_gcd=[16, 8]})" in r.text
    assert "attributes{subgroup_size=16}" in r.text
    assert "%t = alloca : memref<f32 x 16 x 8, local>" in r.text
    assert "%c = constant 8 : index" in r.text
    assert [d.name for d in r.definitions] == ["elem", "n", "half", "tile", "gcd"]
    assert [d.kind for d in r.definitions] == ["type", "int", "int", "type", "dict"]


def test_positions_map_back_to_the_use_and_to_copied_text() -> None:
    r = preprocess(KERNEL)
    at = r.text.index("memref<f32 x 16 x 8, local>")
    # inside the expansion of $tile: the whole `$tile` use on line 7
    assert str(r.span(at + 3, at + 5)) == "7.19-23"
    # copied text keeps its place: `alloca` on line 7
    a = r.text.index("alloca")
    assert str(r.span(a, a + 6)) == "7.10-15"
    # a Span reported on the expanded text maps too
    line = r.text.count("\n", 0, at) + 1
    col = at - r.text.rfind("\n", 0, at)
    from tlinterp.lang.ir import Span
    assert str(r.original_span(Span(line, col, line, col + 5))) == "7.19-23"


def test_text_without_definitions_is_returned_unchanged() -> None:
    src = "func @f() {\n}\n"
    r = preprocess(src)
    assert r.identity and r.text is src and str(r.span(0, 4)) == "1.1-4"


def test_scopes_end_with_their_region() -> None:
    src = ("func @f() {\n  $a = 1\n  %x = constant $a : i32\n}\n"
           "func @g() {\n  $a = 2\n  %x = constant $a : i32\n}\n")
    r = preprocess(src)
    assert r.text.count("constant 1 : i32") == 1 and r.text.count("constant 2 : i32") == 1
    with pytest.raises(SourceError, match=r"5.17-18: undefined identifier \$a"):
        preprocess("func @f() {\n  $a = 1\n}\nfunc @g() {\n  %x = constant $a : i32\n}\n")


def test_every_place_a_definition_can_stand_for() -> None:
    src = """$1 = 4
$g = 2
$z = [$1, $g]
$d = {alignment=$1, "k"=true, unroll=$z}
$ty = group<memref<f32 x $1 x ?> x ?, offset: $g>
func @f(%G: $ty $d) attributes $d {
    $m = !calc($1 $g ^ 3 - 2 % -5 max)
    %s = constant $m : index
    %e = expand %a[1 -> $g x %s] : memref<f32 x $1 x $g x ?>
    %f = fuse %e[1, $g] : memref<f32 x 4 x ?>
    %v = subview %a[$g:$g, %c0] : memref<f32 x $g>
    foreach_tile (%i) = (%c0), (%n) as (%t) <= ($1) {
        $k = 5
        cooperative_matrix_prefetch $k, %C[%c0, %c0], $1, $1
    }
}
"""
    r = preprocess(src)
    for piece in ('%G: group<memref<f32 x 4 x ?> x ?, offset:2> {alignment=4, "k"=true,'
                  " unroll=[4, 2]}) attributes {alignment=4,",
                  "%s = constant 1 : index",
                  "%e = expand %a[1 -> 2 x %s] : memref<f32 x 4 x 2 x ?>",
                  "fuse %e[1, 2]", "subview %a[2:2, %c0] : memref<f32 x 2>", "<= (4)",
                  "cooperative_matrix_prefetch 5, %C[%c0, %c0], 4, 4"):
        assert piece in r.text, piece


def test_a_region_ends_its_names_for_the_code_after_it() -> None:
    src = ("func @f(%x: bool) {\n  $a = 1\n  if %x {\n    $b = $a\n    %q = constant $b : i32\n"
           "  }\n  $b = 3\n  %r = constant $b : i32\n  %t = constant $a : i32 $c = true"
           " %u = constant $c : bool\n}\n")
    r = preprocess(src)
    assert "%q = constant 1 : i32" in r.text and "%r = constant 3 : i32" in r.text
    assert "%t = constant 1 : i32  %u = constant true : bool" in r.text


def test_calc_is_int64_arithmetic_truncating_toward_zero() -> None:
    r = preprocess("$a = !calc(7 -2 /)\n$b = !calc(-7 2 %)\n$c = !calc(2 10 ^ 3 min 5 max)\n"
                   "$d = !calc(9223372036854775807 1 - 1 +)\n$e = !calc(0 0 ^)\n")
    assert [d.value for d in r.definitions] == [-3, -1, 5, 2**63 - 1, 1]


@pytest.mark.parametrize("src, where, message", [
    ("$a = $a\n", "1.6-7", "used in its own definition"),
    ("$a = 1\n$a = 2\n", "2.1-2", r"already defined at 1.1-6"),
    ("func @f() {\n  $a = 1\n  %x = constant $a : i32\n}\n$b = 1\nfunc @g() {\n $b = 2\n}\n",
     "7.2-3", "already defined at 5.1-6"),
    ("func @f() {\n %x = constant $b : f32\n}\n", "2.16-17", r"undefined identifier \$b"),
    ("$c = !calc(1 0 /)\n", "1.12-16", "division by zero"),
    ("$c = !calc(5 0 %)\n", "1.12-16", "division by zero"),
    ("$c = !calc(2 64 ^)\n", "1.12-17", "does not fit a 64-bit integer"),
    ("$c = !calc(9223372036854775807 1 +)\n", "1.12-34", "does not fit a 64-bit integer"),
    ("$c = !calc(2 -1 ^)\n", "1.12-17", "exponent must be larger or equal than 0"),
    ("$c = !calc(1 +)\n", "1.14-14", "needs two operands"),
    ("$c = !calc(1 2)\n", "1.11-15", "leaves 2 values"),
    ("$c = !calc()\n", "1.11-12", "leaves nothing"),
    ("$c = !calc(1 1.5 +)\n", "1.14-16", "expected an integer"),
    ("$f = 1.5\n$c = !calc($f 1 +)\n", "2.12-13", "not an integer"),
    ("$c = 99999999999999999999\n", "1.6-25", "integer overflow"),
    ("$c = -9223372036854775808\n", "1.6-25", "integer overflow"),
    ("$t = memref<f32 x 1.5>\n", "1.19-21", "expected an integer or ?"),
    ("$i = 4\n$t = memref<$i x 4>\n", "2.13-14", "not a type"),
    ("$t = f32\n$u = {alignment=$t}\n", "2.17-18", "not an attribute"),
    ("$u = {align=8}\n", "1.7-7", "expected an attribute name"),
    ("$a = foo\n", "1.6-6", "expected a constant"),
    ("$a =\n", "2.1-1", "found end of input"),
    ("func @k() {\n %x = constant [$a, 1.0] : c32\n}\n", "2.17-18", "complex constant"),
    ("func @k() {\n %x = $a = 1 add %a, %b : f32\n}\n", "2.7-8", "cannot follow '='"),
    ("func @k() attributes{$k=1} {\n}\n", "1.22-23", r"\$k cannot be defined here"),
    ("func @k(%a: f32, $b = 1) {\n}\n", "1.18-19", "only stand at global scope or in a region"),
    ("func @k() $a = 1 {\n}\n", "1.18-18", "unexpected '{'"),
    ("func @k() {\n  %x = constant 1 : i32 $a = 1 attributes{}\n}\n", "2.32-41", "unexpected"),
    ("func @k() {\n  $a = 1 {\n  }\n}\n", "2.10-10", "unexpected '{'"),
    ("!calc(1)\n", "1.1-5", "only stand on the right of a definition"),
    # what tinytc checks when it makes a type, also for a definition never used
    ("$d = memref<bool x 4>\n", "1.13-16", "element type of a memref must be a number"),
    ("$d = group<f32 x 4>\n", "1.12-14", "members must be memrefs"),
    ("$t = memref<f32 x 4>\n$d = memref<$t x 4>\n", "2.13-14", "must be a number type"),
    ("$d = coopmatrix<bool x 4 x 4, matrix_a>\n", "1.17-20", "must be a number type"),
    ("$d = memref<f32 x 4, strided<1, 4>>\n", "1.30-33", "2 strides for 1 modes"),
    ("$d = memref<f32 x 4, strided<>>\n", "1.30-30", "0 strides for 1 modes"),
])
def test_errors_point_into_the_original_text(src: str, where: str, message: str) -> None:
    with pytest.raises(SourceError) as e:
        preprocess(src)
    text = str(e.value)
    assert text.startswith(f"<input>:{where}: "), text
    assert re.search(message, text), text


def test_filename_is_used_in_diagnostics() -> None:
    with pytest.raises(SourceError, match=r"^k\.tl:1\.6-7: "):
        preprocess("$a = $b\n", filename="k.tl")


# hostile inputs ---------------------------------------------------------------------------


def test_long_alias_chain_is_linear() -> None:
    n = 20000
    src = "$a0 = 1\n" + "".join(f"$a{i} = $a{i - 1}\n" for i in range(1, n))
    src += f"func @f() {{\n %x = constant $a{n - 1} : i32\n}}\n"
    assert "constant 1 : i32" in preprocess(src).text


def test_doubling_definitions_stop_at_the_expansion_limit() -> None:
    src = "$a0 = [1, 2]\n" + "".join(f"$a{i} = [$a{i - 1}, $a{i - 1}]\n" for i in range(1, 40))
    src += "func @f() attributes{unroll=$a39} {\n}\n"
    with pytest.raises(SourceError, match=f"exceeds {MAX_EXPANDED} characters"):
        preprocess(src)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    depth = 100 * MAX_NESTING
    with pytest.raises(SourceError, match="nested more than"):
        preprocess("$a = " + "[" * depth + "]" * depth + "\n")
    ok = MAX_NESTING - 1
    assert preprocess("$a = " + "[" * ok + "]" * ok + "\n").definitions[0].kind == "array"


def test_huge_literal_does_not_hang() -> None:
    with pytest.raises(SourceError, match="integer overflow"):
        preprocess("$a = " + "9" * 1_000_000 + "\n")
    with pytest.raises(SourceError, match="does not fit"):
        preprocess("$a = !calc(3 1000000000000000000 ^)\n")
    assert preprocess("$a = !calc(1 1000000000000000000 ^)\n").definitions[0].value == 1


def test_one_megabyte_input() -> None:
    body = "    %x{i} = constant $c : $t\n"
    lines = [body.format(i=i) for i in range(40000)]
    src = "$c = 3\n$t = i32\nfunc @f() {\n" + "".join(lines) + "}\n"
    assert len(src) > 1_000_000
    r = preprocess(src)
    assert r.text.count("constant 3 : i32") == 40000
    last = r.text.rindex("i32")
    assert str(r.span(last, last + 3)) == f"{40000 + 3}.29-30"


def test_unterminated_string_and_stray_braces_reach_the_parser() -> None:
    # not the preprocessor's to judge: they pass through and the parser reports them
    for src in ('$a = 1\nfunc @f() { "abc\n', "$a = 1\n}}}\n"):
        assert preprocess(src).text.startswith("\n")


# the position map -------------------------------------------------------------------------

_PLAIN = st.sampled_from(["func", "@f", "(", ")", "{", "}", "%x", "=", "constant", ":",
                          "index", "\n", " ", "  ", "; c $z\n", '"$s"', "memref<f32 x 4>",
                          ","])


@st.composite
def programs(draw) -> str:
    names = draw(st.lists(st.sampled_from(["a", "b", "n1", "7"]), unique=True, max_size=4))
    values = ["5", "-3", "f32", "memref<i8 x 2 x ?>", "[1, 2]", "{unroll=true}", '"s"',
              "!calc(2 3 *)", "1.5e3", "true"]
    out = [f"${n} = {draw(st.sampled_from(values))}\n" for n in names]
    for _ in range(draw(st.integers(0, 30))):
        if names and draw(st.booleans()):
            out.append(" $" + draw(st.sampled_from(names)) + " ")
        else:
            out.append(draw(_PLAIN))
    return "".join(out)


@given(programs())
def test_every_expanded_position_maps_into_the_original(src: str) -> None:
    try:
        r = preprocess(src)
    except SourceError:
        return  # e.g. a definition after a token that cannot end a statement
    uses = {(m.start(), m.end()) for m in re.finditer(r"\$[A-Za-z0-9_]+", src)}
    for pos, ch in enumerate(r.text):
        a, b = r.origin(pos)
        assert 0 <= a < b <= len(src)
        if (a, b) in uses:
            continue  # inside the expansion of a use
        # copied (or an inserted separating space): the same character, or a space
        assert b == a + 1 and (src[a] == ch or ch == " "), (pos, ch, a, src)
    # the copied text is the original minus definitions and uses, in order
    copied = [r.text[s.out:s.out + s.length] for s in r.segments if s.expansion is None]
    assert all(c in src or c == " " for c in copied)


# -D flags ---------------------------------------------------------------------------------


def test_define_flags() -> None:
    assert parse_define_flag("n=16") == ("n", "16")
    assert parse_define_flag("$ty=memref<f32 x 4>") == ("ty", "memref<f32 x 4>")
    for bad in ("n", "=4", "1x=4", "n=", "n=  "):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_define_flag(bad)


def test_defines_come_before_the_text() -> None:
    r = preprocess("$m = !calc($n 2 *)\nfunc @f(%a: memref<$ty x $m>) {\n}\n",
                   defines=dict([parse_define_flag("n=8"), parse_define_flag("ty=f16")]))
    assert "memref<f16 x 16>" in r.text
    with pytest.raises(SourceError, match=r"^error: -D n=1\.5x: unexpected 'x'"):
        preprocess("", defines={"n": "1.5x"})
    with pytest.raises(SourceError, match=r"1\.1-2: \$n is already defined by -D"):
        preprocess("$n = 2\n", defines={"n": "1"})


DEFINED = """func @k(%A: memref<$dt x $n>) {
  %c = constant 1.0 : $dt
  %z = constant 0 : index
  %m = constant $n : index
  foreach (%i) = (%z), (%m) {
    store %c, %A[%i]
  }
}
"""


def test_definitions_reach_the_front_end_from_the_api_and_tlrun(tmp_path, capsys):
    import numpy as np

    import tlinterp
    from tlinterp.cli import main as tlrun

    program = tlinterp.parse(DEFINED, defines={"dt": "f64", "n": "4"})
    assert str(program.functions[0].args[0].type) == "memref<f64x4>"
    with pytest.raises(ValueError, match="v0.4"):
        tlinterp.parse(DEFINED, lang="v0.3", defines={"n": "4"})
    kernel, args, out = tmp_path / "k.tl", tmp_path / "a.npz", tmp_path / "o.npz"
    kernel.write_text(DEFINED)
    np.savez(args, A=np.zeros(8, np.float32))
    assert tlrun([str(kernel), "--args", str(args), "--out", str(out), "-q",
                  "-D", "dt=f32", "-D", "n=8"]) == 0
    np.testing.assert_array_equal(np.load(out)["A"], np.ones(8, np.float32))
    capsys.readouterr()
    assert tlrun([str(kernel), "--check", "-D", "dt=f32"]) == 2  # $n undefined, at its use
    assert "1.26-27: undefined identifier $n" in capsys.readouterr().err
    assert tlrun([str(kernel), "--check", "--lang", "v0.3", "-D", "n=8"]) == 2
