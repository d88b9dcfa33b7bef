"""v0.4's static rules (tlinterp/checker_v04.py and the result-type rules of the v0.4 parser):
each rule rejects at its LINE.COL-COL, and independent errors are reported together."""

from __future__ import annotations

import pytest

from tlinterp import check, parse
from tlinterp.checker_v04 import promotable
from tlinterp.diagnostics import SourceError
from tlinterp.types import ScalarType as S


def errors(body: str, args: str = "", attrs: str = "") -> list[tuple[str, str]]:
    lines = "".join(f"    {line}\n" for line in body.strip("\n").split("\n"))
    src = f"func @f({args}){attrs} {{\n{lines}}}\n"
    with pytest.raises(SourceError) as info:
        check(parse(src, "t.tl", lang="v0.4"))
    return [(d.message, str(d.span)) for d in info.value.diagnostics]


CASES = {
    "layout-rule": (
        "", "%C: memref<i16 x 8 x 8, strided<8, 1>>", "",
        "argument %C: layout restriction violated: stride 8 x size 8 of mode 0", "1.9-46"),
    "negative-size": (
        "", "%A: memref<f32 x 8 x -1>", "", "argument %A: mode 1 has negative size -1", "1.9-32"),
    "group-negative-offset": (
        "", "%G: group<memref<f32 x 2> x 4, offset: -1>", "",
        "argument %G: the group has negative offset -1", "1.9-50"),
    "subgroup-broadcast-lane-type": (
        "parallel {\n    %i = constant 1 : index\n    %x = subgroup_broadcast %a, %i : f32\n}",
        "%a: f32", "", "the sub-group lane %i has type index, not i32", "4.9-44"),
    "subgroup-reduce-result-type": (
        "parallel {\n    %x = subgroup_reduce_add %a : f64\n}", "%a: f32", "",
        "operand %a has type f32, not f64", "3.9-41"),
    "subgroup-reduce-memref": (
        "parallel {\n    %x = subgroup_reduce_add %A : f32\n}", "%A: memref<f32x4>", "",
        "subgroup_reduce_add needs a number operand, not memref<f32x4>", "3.9-41"),
    "subgroup-max-complex": (
        "parallel {\n    %x = subgroup_inclusive_scan_max %z : c32\n}", "%z: c32", "",
        "subgroup_inclusive_scan_max is not defined on complex c32", "3.9-49"),
    "cast-memref": (
        "%x = cast %A : index", "%A: memref<f32x4>", "",
        "cast needs number types, not memref<f32x4>", "2.5-24"),
    "subview-offset-not-index": (
        "%c = constant 1 : index\n%v = subview %A[%c:2, %x:%c] : memref<f32 x 2 x ?, "
        "strided<1, 4>>", "%A: memref<f32 x 4 x 4>, %x: i32", "",
        "offset or size %x has type i32, not index", "3.27-28"),
    "expand-size-not-index": (
        "%v = expand %A[0 -> 4 x %x] : memref<f32 x 4 x 2>", "%A: memref<f32 x 8>, %x: i32",
        "", "expanded size %x has type i32, not index", "2.29-30"),
    "collective-in-spmd": (
        "%c0 = constant 0 : index\nforeach (%i) = (%c0), (%c0) {\n"
        "    axpby %a, %A, %a, %A\n}", "%a: f32, %A: memref<f32x4>", "",
        "collective instruction axpby must not be in an SPMD region", "4.9-28"),
    "spmd-in-collective": (
        "%x = subgroup_local_id : i32", "", "",
        "SPMD instruction subgroup_local_id must be in an SPMD region", "2.5-32"),
    "bool-is-not-a-number-cast": (
        "%b = cast %x : bool", "%x: i32", "",
        "bool is not a number: no casts to or from it", "2.5-23"),
    "bool-arithmetic": (
        "%b = add %p, %p : bool", "%p: bool", "", "add is not defined on bool", "2.5-26"),
    "complex-ordering": (
        "%b = less_than %z, %z : bool", "%z: c32", "",
        "less_than is not defined on c32", "2.5-32"),
    "complex-to-real-cast": (
        "%b = cast %z : f32", "%z: c32", "", "cast from complex c32 to f32 is forbidden",
        "2.5-22"),
    "shift-on-float": (
        "%b = shl %x, %x : f32", "%x: f32", "", "shl is not defined on f32", "2.5-25"),
    "operand-type": (
        "%b = add %x, %y : f32", "%x: f32, %y: f64", "", "operand %y has type f64, not f32",
        "2.18-19"),
    "if-condition": (
        "if %x {\n}", "%x: i32", "", "if needs a bool condition, not i32", "2.5-3.5"),
    "atomic-beta": (
        "gemm.atomic %a, %A, %A, %a, %A", "%a: f32, %A: memref<f32x4x4>", "",
        ".atomic needs beta to be a constant 0 or 1", "2.29-30"),
    "atomic-beta-two": (
        "%two = constant 2.0 : f32\naxpby.atomic %two, %A, %two, %A", "%A: memref<f32x4>", "",
        ".atomic needs beta to be a constant 0 or 1", "3.28-31"),
    "promotion": (
        "%one = constant 1.0 : f32\ngemm %one, %A, %A, %one, %C",
        "%A: memref<f32x4x4>, %C: memref<i32x4x4>", "", "gemm: f32 does not promote to i32",
        "3.5-31"),
    "alloca-not-local": (
        "%t = alloca : memref<f32x4>", "", "",
        "alloca's memref type needs the local address space", "2.5-31"),
    "alignment": (
        "", "%A: memref<f64x4> {alignment=4}", "",
        "alignment must be a positive multiple of 8, the size of f64", "1.9-39"),
    "shape-gcd-too-long": (
        "", "%A: memref<f32x4> {shape_gcd=[2,2]}", "",
        "shape_gcd has 2 entries, more than the order 1", "1.9-43"),
    "work-group-size": (
        "", "", " attributes{subgroup_size=16, work_group_size=[24,1]}",
        "work_group_size[0] must be a multiple of subgroup_size", "1.1-3.1"),
    "constant-kind": (
        "%c = constant 1 : f32", "", "", "a f32 constant needs a floating literal", "2.5-25"),
    "yield-type": (
        "%r = if %p -> (f32) {\n    yield (%x)\n} else {\n    yield (%x)\n}", "%p: bool, %x: i32",
        "", "yielded %x has type i32, not f32", "3.9-18"),
    "result-type": (
        "%c0 = constant 0 : index\n%x = load %A[%c0] : f64", "%A: memref<f32x4>", "",
        "result type f64 does not match f32, the type loading from %A gives", "3.25-27"),
    "coop-use": (
        "parallel {\n    %c0 = constant 0 : index\n"
        "    %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32x16x8,matrix_b>\n"
        "    %b = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32x8x8,matrix_b>\n"
        "    %c = constant 0.0 : coopmatrix<f32x16x8,matrix_acc>\n"
        "    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x16x8,matrix_acc>\n}",
        "%A: memref<f32x32x32>", "",
        "A of cooperative_matrix_mul_add needs use matrix_a, not matrix_b", "7.9-84"),
    "coop-shape": (
        "parallel {\n    %c0 = constant 0 : index\n"
        "    %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32x16x4,matrix_a>\n"
        "    %b = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32x8x8,matrix_b>\n"
        "    %c = constant 0.0 : coopmatrix<f32x16x8,matrix_acc>\n"
        "    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x16x8,matrix_acc>\n}",
        "%A: memref<f32x32x32>", "",
        "cooperative_matrix_mul_add shapes (16, 4) x (8, 8) + (16, 8) -> (16, 8) do not fit",
        "7.9-84"),
    "coop-cast-use": (
        "parallel {\n    %c = constant 0.0 : coopmatrix<f32x16x8,matrix_a>\n"
        "    %d = cast %c : coopmatrix<f32x16x8,matrix_b>\n}", "", "",
        "cast changes the use matrix_a to matrix_b (only matrix_acc may become matrix_a or "
        "matrix_b)", "4.9-52"),
    "undefined": ("%y = neg %x : f32", "", "", "%x is not defined", "2.14-15"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_rule(case):
    body, args, attrs, message, where = CASES[case]
    found = errors(body, args, attrs)
    assert any(m.startswith(message) and w == where for m, w in found), found


def test_independent_errors_are_all_reported():
    found = errors("%b = cast %x : bool\n%c = add %p, %p : bool\n%t = alloca : memref<f32x4>",
                   "%x: i32, %p: bool")
    assert [w for _, w in found] == ["2.5-23", "3.5-26", "4.5-31"]


def test_promotion_order_of_the_reference():
    assert promotable(S.i8, S.bf16) and promotable(S.i16, S.f32) and promotable(S.f16, S.c32)
    assert not promotable(S.i16, S.f16) and not promotable(S.i64, S.f64)
    assert not promotable(S.f64, S.c32) and not promotable(S.bf16, S.f16)


def test_a_valid_program_passes():
    src = ("func @f(%A: memref<f32x8x8>, %B: memref<f64x8x8>) {\n"
           "    %one = constant 1.0 : f32\n    %zero = constant 0.0 : f64\n"
           "    gemm.atomic %one, %A, %A, %zero, %B\n}\n")
    check(parse(src, "ok.tl", lang="v0.4"))


def test_diagnostics_after_the_preprocessor_quote_and_count_in_the_text_as_written():
    """A `$name` expanded to text of another length before the error: the range and the quoted
    line are the original's (the checker's rules, the parser's result-type rules)."""
    src = ("$longname = 4\n$t = f32\nfunc @k(%A: memref<$t x 4 x 4>, %x: i32) {\n"
           "    %v = subview %A[$longname:%x, 0:1] : memref<$t x ?>\n"
           "    %w = load %A[%x, %x] : $t\n}\n")
    with pytest.raises(SourceError) as info:
        check(parse(src, "p.tl", lang="v0.4"))
    spans = [str(d.span) for d in info.value.diagnostics]
    # the second is the parser's result-type rule (memref<f32x?> is not the derived type)
    assert spans == ["4.31-32", "4.42-55", "5.18-19", "5.22-23"], spans
    shown = info.value.format()
    assert "subview %A[$longname:%x" in shown and "load %A[%x, %x] : $t" in shown
