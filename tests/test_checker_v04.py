"""v0.4's static rules (tlinterp/checker/v04.py and the result-type rules of the v0.4 parser):
each rule rejects at its LINE.COL-COL, and independent errors are reported together."""

from __future__ import annotations

import pytest

from tlinterp import check, parse
from tlinterp.checker.v04 import promotable
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.types import ScalarType as S


def errors(body: str, args: str = "", attrs: str = "") -> list[tuple[str, str]]:
    lines = "".join(f"    {line}\n" for line in body.strip("\n").split("\n"))
    src = f"func @f({args}){attrs} {{\n{lines}}}\n"
    with pytest.raises(SourceError) as info:
        check(parse(src, "t.tl", lang="v0.4"))
    return [(d.message, str(d.span)) for d in info.value.diagnostics]


# coopmatrix cases: a parallel region with an index %c (and a loaded %a in _L)
_P = "parallel {\n    %c = constant 0 : index\n"
_M = "%A: memref<f32x32x32>, %x: i32, %s: f32"
_SG = " attributes{subgroup_size=16}"
_T = "coopmatrix<f32x16x8,matrix_acc>"
_L = f"    %a = cooperative_matrix_load %A[%c, %c] : {_T}\n"

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
    "atomic-load-result-type": (
        "%c = constant 0 : index\n%a = atomic_load %A[%c] : i32", "%A: memref<f32x4>", "",
        "result type i32 does not match f32, the type atomic_load from %A gives", "3.5-33"),
    "atomic-load-group": (
        "%c = constant 0 : index\n%a = atomic_load %G[%c] : memref<f32>",
        "%G: group<memref<f32>x4>", "",
        "the tensor of atomic_load: %G must be a memref, not group", "3.22-23"),
    "atomic-add-value-type": (
        "%c = constant 0 : index\n%h = constant 1.0 : f16\n%a = atomic_add %h, %A[%c] : f32",
        "%A: memref<f32x4>", "", "value %h has type f16, the memref %A holds f32", "4.21-22"),
    "atomic-add-result-type": (
        "%c = constant 0 : index\n%v = constant 1.0 : f32\n%a = atomic_max %v, %A[%c] : f64",
        "%A: memref<f32x4>", "", "result type f64 does not match f32, the element type of %A",
        "4.5-36"),
    "atomic-store-group": (
        "%c = constant 0 : index\natomic_store %v, %G[%c]", "%v: f32, %G: group<memref<f32>x4>",
        "", "the tensor of atomic_store: %G must be a memref, not group", "3.22-23"),
    "atomic-store-memref-value": (
        "%c = constant 0 : index\natomic_store %B, %A[%c]", "%A: memref<f32x4>, %B: memref<f32x4>",
        "", "the value of atomic_store: %B must be a number, not memref<f32x4>", "3.18-19"),
    "size-of-scalar": (
        "%n = size %m[0] : index", "%m: f32", "",
        "the operand of size: %m must be a memref or group, not f32", "2.15-16"),
    "subview-of-scalar": (
        "%v = subview %m[0:1] : memref<f32x1>", "%m: f32", "",
        "the operand of subview: %m must be a memref, not f32", "2.18-19"),
    "associated-of-scalar": (
        "%b = associated %m : bool", "%m: f32", "",
        "the operand of associated: %m must be a memref or group, not f32", "2.21-22"),
    "blas-alpha-memref": (
        "%one = constant 1.0 : f32\naxpby %A, %A, %one, %A", "%A: memref<f32x4>", "",
        "alpha of axpby: %A must be a number, not memref<f32x4>", "3.11-12"),
    "blas-beta-bool": (
        "%one = constant 1.0 : f32\ngemv %one, %A, %x, %p, %x",
        "%A: memref<f32x4x4>, %x: memref<f32x4>, %p: bool", "",
        "beta of gemv: %p must be a number, not bool", "3.24-25"),
    "hadamard-orders": (
        "%one = constant 1.0 : f32\nhadamard %one, %x, %B, %one, %x",
        "%x: memref<f32x4>, %B: memref<f32x4x4>", "",
        "incompatible tensor shapes: a is 4, b is 4x4, c is 4: orders differ", "3.5-35"),
    "axpby-orders": (
        "%one = constant 1.0 : f32\naxpby %one, %x, %one, %B",
        "%x: memref<f32x4>, %B: memref<f32x4x4>", "",
        "incompatible tensor shapes: op(A) is 4 and B is 4x4: orders differ", "3.5-28"),
    "cumsum-memref-operand": (
        "%one = constant 1.0 : f32\ncumsum %one, %A, 0, %one, %one", "%A: memref<f32x4>", "",
        "B of cumsum: %one must be a memref, not f32", "3.31-34"),
    "cumsum-alpha-memref": (
        "%one = constant 1.0 : f32\ncumsum %A, %A, 0, %one, %A", "%A: memref<f32x4>", "",
        "alpha of cumsum: %A must be a number, not memref<f32x4>", "3.12-13"),
    "cumsum-promotion": (
        "%one = constant 1.0 : f32\ncumsum %one, %A, 0, %one, %H",
        "%A: memref<f32x4>, %H: memref<f16x4>", "", "cumsum: f32 does not promote to f16",
        "3.5-32"),
    "constant-complex-literal": (
        "%c = constant 1.0 : c64", "", "",
        "a c64 constant needs a complex literal [re, im], not a floating literal", "2.5-27"),
    "constant-bool-literal": (
        "%c = constant 1 : bool", "", "", "a bool constant is true or false, not an integer",
        "2.5-26"),
    "constant-int-from-bool": (
        "%c = constant true : i32", "", "", "an i32 constant needs an integer literal, not true",
        "2.5-28"),
    "coop-load-position": (
        _P + f"    %a = cooperative_matrix_load %A[%c, %x] : {_T}\n}}", _M, _SG,
        "the position of cooperative_matrix_load: %x must be of type index, not i32", "4.45-46"),
    "coop-store-value": (
        _P + "    cooperative_matrix_store %s, %A[%c, %c]\n}", _M, _SG,
        "the matrix of cooperative_matrix_store: %s must be a coopmatrix, not f32", "4.34-35"),
    "coop-atomic-add-value": (
        _P + f"    %a = cooperative_matrix_atomic_add %s, %A[%c, %c] : {_T}\n}}", _M, _SG,
        "the matrix of cooperative_matrix_atomic_add: %s must be a coopmatrix, not f32", "4.44-45"),
    "coop-atomic-add-result": (
        _P + _L + "    %b = cooperative_matrix_atomic_add %a, %A[%c, %c] : "
        "coopmatrix<f32x16x16,matrix_acc>\n}", _M, _SG,
        f"result type coopmatrix<f32x16x16,matrix_acc> does not match {_T}, the type of %a",
        "5.9-92"),
    "coop-prefetch-position": (
        _P + "    cooperative_matrix_prefetch 1, %A[%c, %x], 16, 8\n}", _M, _SG,
        "the position of cooperative_matrix_prefetch: %x must be of type index, not i32",
        "4.47-48"),
    "coop-construct-type": (
        _P + f"    %a = cooperative_matrix_construct %x : {_T}\n}}", _M, _SG,
        "%x has type i32, the component type is f32", "4.43-44"),
    "coop-extract-result": (
        _P + _L + "    %e = cooperative_matrix_extract %a[0] : f64\n}", _M, _SG,
        "result type f64 does not match f32, the component type of %a", "5.9-51"),
    "coop-insert-value": (
        _P + _L + f"    %e = cooperative_matrix_insert %x, %a[0] : {_T}\n}}", _M, _SG,
        "%x has type i32, the component type is f32", "5.40-41"),
    "coop-scale-matrix": (
        _P + f"    %a = cooperative_matrix_scale %s, %s : {_T}\n}}", _M, _SG,
        "the matrix of cooperative_matrix_scale: %s must be a coopmatrix, not f32", "4.43-44"),
    "coop-reduce-operand": (
        _P + "    %a = cooperative_matrix_reduce_add.row %s : coopmatrix<f32x16x1,matrix_acc>\n}",
        _M, _SG,
        "the matrix of cooperative_matrix_reduce_add: %s must be a coopmatrix, not f32", "4.48-49"),
    "coop-negative-shape": (
        _P + "    %a = cooperative_matrix_load %A[%c, %c] : coopmatrix<f32x16x-1,matrix_acc>\n}",
        _M, _SG,
        "%a: a coopmatrix shape needs non-negative sizes, not 16x-1", "4.9-10"),
    "coop-rows-power-of-two": (
        _P + "    %a = cooperative_matrix_load %A[%c, %c] : coopmatrix<f32x12x8,matrix_acc>\n}",
        _M, _SG,
        "%a: coopmatrix rows must be a power of two, not 12", "4.9-10"),
    "coop-extract-index-range": (
        _P + _L + "    %e = cooperative_matrix_extract %a[8] : f32\n}", _M, _SG,
        f"component index 8 is outside 0..7 for {_T} with sub-group", "5.9-51"),
    "coop-extract-index-negative": (
        _P + _L + "    %e = cooperative_matrix_extract %a[-1] : f32\n}", _M, _SG,
        "the work-item vector index -1 is negative", "5.9-52"),
    "coop-reduce-rows": (
        _P + "    %a = cooperative_matrix_load %A[%c, %c] : coopmatrix<f32x8x8,matrix_acc>\n"
        "    %r = cooperative_matrix_reduce_add.row %a : coopmatrix<f32x8x1,matrix_acc>\n}",
        _M, _SG,
        "rows of the reduced matrix must be a multiple of the subgroup size 16", "5.9-82"),
    "coop-prefetch-cache-level": (
        _P + "    cooperative_matrix_prefetch -1, %A[%c, %c], 16, 8\n}", _M, _SG,
        "the cache level must be non-negative, not -1", "4.9-57"),
    "fuse-of-scalar": (
        "%v = fuse %m[0,1] : memref<f32x4>", "%m: f32", "",
        "the operand of fuse: %m must be a memref, not f32", "2.15-16"),
    "view-size-name-is-dynamic": (
        "%c = constant 4 : index\n%v = subview %A[%j:%c] : memref<f32x4>",
        "%A: memref<f32x16>, %j: index", "",
        "result type memref<f32x4> does not match memref<f32x?>", "3.30-42"),
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


def test_a_constant_name_in_a_view_is_dynamic():
    """A view size given by a name is '?' even when the name is a `constant`: a constant 0
    slice size or a wrong expand product is undefined behaviour at run time (the interpreter
    reports it), not a static error."""
    src = ("func @f(%A: memref<f32x64>, %j: index) {\n    %z = constant 0 : index\n"
           "    %v = subview %A[%j:%z] : memref<f32x?>\n    %two = constant 2 : index\n"
           "    %w = expand %A[0 -> 4 x %two] : memref<f32x4x?>\n}\n")
    check(parse(src, "ok.tl", lang="v0.4"))


def test_bool_constants_built_as_ir_keep_their_kind():
    """The checker tells `true` from `1` by the literal's Python type (the parser keeps true and
    false as bools); the generator's and the migration's bool constants are bools too, so
    programs built as IR pass."""
    import dataclasses

    from fuzz.gen.spmd_model import literal

    program = parse("func @f() {\n    %p = constant true : bool\n}\n", "b.tl", lang="v0.4")
    inst = program.functions[0].body.instructions[0]
    program.functions[0].body.instructions[0] = dataclasses.replace(
        inst, value=literal(1, S.i1))
    check(program)
    with pytest.raises(SourceError, match="a bool constant is true or false"):
        program.functions[0].body.instructions[0] = dataclasses.replace(
            inst, value=dataclasses.replace(inst.value, value=1))
        check(program)
