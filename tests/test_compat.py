"""What the original compiler accepts: names scoped by region, `if %c -> ()`, order-0 axpby,
a group type written without its offset (a warning), and the diagnostics that go with them
(severities, `--werror`, the layout rule's hint)."""

from __future__ import annotations

import numpy as np
import pytest

from tlinterp import check, parse
from tlinterp.cli import tlrun as cli
from tlinterp.interp import run
from tlinterp.lang.diagnostics import WARNING, Diagnostic, SourceError
from tlinterp.lang.ir import Span
from tlinterp.lang.v03.printer import format_program


def kernel(args: str, body: str) -> str:
    lines = "".join(f"  {line}\n" for line in body.strip("\n").split("\n"))
    return f"func @f({args}) {{\n{lines}}}\n"


def errors(src: str) -> list[tuple[str, str]]:
    with pytest.raises(SourceError) as info:
        check(parse(src, "t.tl", lang="v0.3"))  # `barrier` alone reads as v0.3 and v0.4
    return [(d.message, str(d.span)) for d in info.value.diagnostics]


def warnings_of(src: str) -> list[tuple[str, str]]:
    found: list[Diagnostic] = []
    check(parse(src, "t.tl"), found)
    assert all(d.severity == WARNING for d in found)
    return [(d.message, str(d.span)) for d in found]


# --- 1. names scoped by region ---------------------------------------------------------------

SIBLINGS = kernel("%A: memref<f32x6x8>, %m: index, %r: i32, %o: memref<f32x8>", """
%c = cmp.ne %r, 0 : i32
if %c {
  %a = subview %A[%m:?, 0:8] : memref<f32x6x8>
  %x = load %a[0, 1] : memref<f32x?x8,strided<1,6>>
  store %x, %o[0] : memref<f32x8>
} else {
  %a = subview %A[%m:4, 0:8] : memref<f32x6x8>
  %x = load %a[0, 2] : memref<f32x4x8,strided<1,6>>
  store %x, %o[0] : memref<f32x8>
}
for %i = 1, 3 {
  %v = load %A[%i, 3] : memref<f32x6x8>
  store %v, %o[%i] : memref<f32x8>
}
for %i = 3, 5 {
  %v = load %A[%i, 3] : memref<f32x6x8>
  store %v, %o[%i] : memref<f32x8>
}
%v = load %A[0, 0] : memref<f32x6x8>
store %v, %o[7] : memref<f32x8>""")


@pytest.mark.parametrize("ragged", [True, False])
def test_sibling_regions_reuse_names(ragged):
    assert warnings_of(SIBLINGS) == []
    A = np.arange(48, dtype=np.float32).reshape(6, 8)
    out = run(SIBLINGS, {"A": A, "m": np.int64(1), "r": np.int32(ragged),
                         "o": np.zeros(8, np.float32)})
    want = np.zeros(8, np.float32)
    want[0] = A[1, 1] if ragged else A[1, 2]
    want[1:5] = A[1:5, 3]
    want[7] = A[0, 0]
    np.testing.assert_array_equal(out["o"], want)


def test_if_results_may_reuse_names_of_a_branch():
    src = kernel("%c: i1, %o: memref<i32>", """
%y = if %c -> (i32) {
  %t = arith.add 1, 2 : i32
  yield %t : i32
} else {
  yield 7 : i32
}
%t = arith.mul %y, 2 : i32
store %t, %o[] : memref<i32>""")
    out = run(src, {"c": np.bool_(True), "o": np.zeros((), np.int32)})
    assert int(out["o"]) == 6


SCOPE_ERRORS = {
    "shadows-argument-in-loop": (
        kernel("%a: index", "for %i = 0, 4 {\n  %a = group_id\n}"),
        [("%a shadows the definition at 1.9 in an enclosing region (a name visible here "
          "cannot be defined again)", "3.5-6")]),
    "shadows-outer-value-in-branch": (
        kernel("%c: i1", "%x = group_id\nif %c {\n  %x = group_size\n}"),
        [("%x shadows the definition at 2.3 in an enclosing region (a name visible here "
          "cannot be defined again)", "4.5-6")]),
    "loop-variable-shadows": (
        kernel("", "for %i = 0, 4 {\n  for %i = 0, 2 {\n  }\n}"),
        [("%i shadows the definition at 2.7 in an enclosing region (a name visible here "
          "cannot be defined again)", "3.9-10")]),
    "use-after-both-branches": (
        kernel("%c: i1", "if %c {\n  %a = group_id\n} else {\n  %a = group_size\n}\n"
                         "%b = arith.add %a, 1 : index"),
        [("%a is not visible here: it is defined inside a nested region at 5.5", "7.18-19")]),
    "use-of-sibling-definition": (
        kernel("%c: i1", "if %c {\n  %a = group_id\n} else {\n  %b = arith.add %a, 1 : index\n}"),
        [("%a is not visible here: it is defined inside a nested region at 3.5", "5.20-21")]),
    "twice-in-one-branch": (
        kernel("%c: i1", "if %c {\n  %a = group_id\n  %a = group_size\n}"),
        [("%a is already defined at 3.5", "4.5-6")]),
}


@pytest.mark.parametrize("case", SCOPE_ERRORS.values(), ids=SCOPE_ERRORS.keys())
def test_scope_errors_point_at_the_definition(case):
    src, expected = case
    assert errors(src) == expected


# --- 3. `if %c -> ()` ------------------------------------------------------------------------

def test_empty_result_list_means_no_results():
    src = kernel("%c: i1, %o: memref<f32>", "if %c -> () {\n  store 2.0, %o[] : memref<f32>\n}")
    program = check(parse(src))
    assert program.functions[0].body.instructions[0].result_types == ()
    assert "if %c -> () {" in format_program(program)  # the spelling survives printing
    assert parse(format_program(program)) == program
    assert parse(src.replace(" -> ()", "")) == program  # the same program as no arrow
    assert float(run(program, {"c": np.bool_(True), "o": np.zeros((), np.float32)})["o"]) == 2


def test_empty_result_list_with_names_is_an_error():
    src = kernel("%c: i1", "%x = if %c -> () {\n} else {\n}")
    assert errors(src) == [("if returns 0 values but 1 name assigned", "2.3-4.3")]


# --- 2. order-0 axpby ------------------------------------------------------------------------

AXPBY0 = kernel("%a: memref<f32>, %b: memref<f32>, %s: memref<f64>, %i: memref<i32>", """
%g = group_id
%z = cmp.eq %g, 0 : index
if %z {
  axpby.n 2.0, %a, 0.0, %b : f32, memref<f32>, f32, memref<f32>
}
axpby.t.atomic 0.5, %a, 1.0, %s : f32, memref<f32>, f32, memref<f64>
axpby.n.atomic 3, %i, 1, %i2 : i32, memref<i32>, i32, memref<i32>""").replace(
    "%i: memref<i32>", "%i: memref<i32>, %i2: memref<i32>")


def axpby0_args():
    return {"a": np.float32(1.5), "b": np.float32(9), "s": np.float64(0.25),
            "i": np.int32(2), "i2": np.int32(-1)}


def test_order0_axpby_is_a_scalar_update():
    out = run(AXPBY0, axpby0_args(), groups=4)
    assert float(out["b"]) == 3.0
    assert float(out["s"]) == 0.25 + 4 * 0.5 * 1.5
    assert int(out["i2"]) == -1 + 4 * 3 * 2


def test_order0_axpby_orders_must_agree():
    src = kernel("%a: memref<f32>, %b: memref<f32x4>",
                 "axpby.n 1.0, %a, 0.0, %b : f32, memref<f32>, f32, memref<f32x4>")
    assert errors(src) == [("incompatible tensor shapes: op(A) is a scalar (order 0) and B is "
                            "4: orders differ", "2.3-65")]


# --- 4. a group type without its offset --------------------------------------------------------

GROUP = "group<memref<f32x42>, offset: 21>"


def group_kernel(written: str) -> str:
    return kernel(f"%c: {GROUP}, %o: memref<f32>",
                  f"%0 = group_id\n%m = load %c[%0] : {written}\n"
                  "%x = load %m[3] : memref<f32x42>\nstore %x, %o[] : memref<f32>")


def test_group_offset_omitted_is_a_warning_naming_both_types():
    src = group_kernel("group<memref<f32x42>>")
    assert warnings_of(src) == [
        (f"the type written for %c lacks its offset: %c has type {GROUP}, the instruction says "
         f"group<memref<f32x42>>; the load uses {GROUP}", "3.13-14")]
    c = np.arange(84, dtype=np.float32).reshape(2, 42)
    out = run(src, {"c": c, "o": np.float32(0)}, groups=1)
    assert float(out["o"]) == 3.0  # member 0, element 3, wherever the offset placed it


def test_dynamic_group_offset_omitted_is_a_warning_too():
    src = group_kernel("group<memref<f32x42>>").replace(GROUP, "group<memref<f32x42>, offset: ?>")
    [(msg, where)] = warnings_of(src)
    assert where == "3.13-14" and "%c has type group<memref<f32x42>, offset: ?>" in msg


@pytest.mark.parametrize("written, shown", [
    ("group<memref<f32x42>, offset: 5>", "group<memref<f32x42>, offset: 5>"),
    ("group<memref<f32x42>, offset: ?>", "group<memref<f32x42>, offset: ?>"),
    ("group<memref<f32x41>>", "group<memref<f32x41>>"),
    ("group<memref<f64x42>, offset: 21>", "group<memref<f64x42>, offset: 21>"),
])
def test_other_group_mismatches_stay_errors(written, shown):
    msgs = errors(group_kernel(written))
    assert msgs[0] == (f"type mismatch: %c has type {GROUP}, the instruction says {shown}",
                       "3.13-14")


def test_warning_format():
    d = Diagnostic("something odd", Span(2, 3, 2, 5), "k.tl", WARNING)
    assert d.format("line one\n  abc\n") == "k.tl:2.3-5: warning: something odd\n  abc\n  ~~~"
    assert Diagnostic("x", None, "<input>", WARNING).format() == "warning: x"
    assert Diagnostic("x", None, "k.tl", WARNING).format() == "k.tl: warning: x"
    assert Diagnostic("x", Span(1, 1, 1, 1), "k.tl").format() == "k.tl:1.1-1: x"


def test_tlrun_prints_warnings_and_werror_rejects(tmp_path, capsys):
    path = tmp_path / "w.tl"
    path.write_text(group_kernel("group<memref<f32x42>>"))
    assert cli.main([str(path), "--check"]) == 0
    err = capsys.readouterr().err
    assert f"{path}:3.13-14: warning: the type written for %c lacks its offset" in err
    assert cli.main([str(path), "--check", "--werror"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3.13-14: the type written for %c" in err and ": warning:" not in err
    args = tmp_path / "a.npz"
    np.savez(args, c=np.ones((1, 42), np.float32), o=np.float32(0))
    assert cli.main([str(path), "--args", str(args)]) == 0  # runs, with the warning
    assert "warning:" in capsys.readouterr().err


def test_errors_and_warnings_are_reported_together():
    src = group_kernel("group<memref<f32x42>>").replace("%x = load %m[3]", "%x = load %m[3, 1]")
    with pytest.raises(SourceError) as info:
        check(parse(src, "t.tl"))
    assert [(d.severity, str(d.span)) for d in info.value.diagnostics] == [
        ("warning", "3.13-14"), ("error", "4.3-37")]


# --- the layout rule's hint ----------------------------------------------------------------------

def test_layout_error_names_the_rule_and_a_correct_type():
    [(msg, where)] = errors(kernel("%K: memref<f64x56x56,strided<1,35>>", "barrier"))
    assert where == "1.9-43"
    assert msg.startswith("argument %K: layout restriction violated: stride 1 x size 56 of "
                          "mode 0 exceeds the stride 35 of mode 1; hint: the spec's layout rule")
    assert "write memref<f64x56x56> (the least strides allowed)" in msg
    assert "subview of a larger memref" in msg
