"""The parser: every instruction and type form, the spec's examples, spans, v0.2 spellings,
constants, and syntax errors (message and exact range)."""

from __future__ import annotations

import math

import pytest
from kernels import SAMPLE
from parsimonious.expressions import Literal, Regex

from tlinterp.lang import ir, ops
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.ir import Const, Slice, Span, Value
from tlinterp.lang.types import GroupType, MemrefType, ScalarType, VoidType
from tlinterp.lang.v03.parser import GRAMMAR, parse

f32, f64, i1, i32, i64, idx = (ScalarType.f32, ScalarType.f64, ScalarType.i1, ScalarType.i32,
                               ScalarType.i64, ScalarType.index)


def M(elem, *shape, stride=None) -> MemrefType:
    return MemrefType.make(elem, shape, stride)


def V(name: str) -> Value:
    return Value(name)


def C(v) -> Const:
    return Const(v, isinstance(v, float))


def body(text: str, args: str = "") -> list:
    """The instructions of `text` wrapped in a function."""
    return parse(f"func @f({args}) {{\n{text}\n}}\n").functions[0].body.instructions


def one(text: str):
    insts = body(text)
    assert len(insts) == 1
    return insts[0]


def error_of(text: str) -> tuple[str, Span]:
    with pytest.raises(SourceError) as e:
        parse(text, "k.tl")
    (d,) = e.value.diagnostics
    assert d.filename == "k.tl"
    return d.message, d.span


# --- the spec's sample kernel ----------------------------------------------------------------



def test_sample_kernel():
    p = parse(SAMPLE, "sample.tl")
    assert p.filename == "sample.tl" and p.source == SAMPLE
    f = p.function()
    assert f.name == "fused_kernel"
    assert [a.value.name for a in f.args] == ["alpha", "A", "B", "C", "D"]
    assert f.args[1].type == GroupType(M(f32, 16, 8))
    assert f.args[4].type == M(f32, 16, 16, None)
    assert f.work_group_size is None and f.subgroup_size is None
    assert f.body.instructions == [
        ir.GroupId(V("0")),
        ir.Load(V("1"), V("A"), (V("0"),), GroupType(M(f32, 16, 8))),
        ir.Subview(V("2"), V("D"), (Slice(C(0), None, True), Slice(C(0), None, True),
                                    Slice(V("0"))), M(f32, 16, 16, None)),
        ir.Alloca(V("tmp0"), M(f32, 16, 8)),
        ir.Gemm(False, C(1.0), V("1"), V("B"), C(0.0), V("tmp0"), f32, M(f32, 16, 8), M(f32, 8, 8),
                f32, M(f32, 16, 8), trans_a=False, trans_b=True),
        ir.Gemm(False, V("alpha"), V("tmp0"), V("C"), C(1.0), V("2"), f32, M(f32, 16, 8),
                M(f32, 8, 16), f32, M(f32, 16, 16), trans_a=False, trans_b=False),
    ]


def test_sample_kernel_spans():
    f = parse(SAMPLE).function()
    insts = f.body.instructions
    assert f.span == Span(1, 1, 14, 1)
    assert f.body.span == Span(5, 45, 14, 1)
    assert f.args[0].span == Span(1, 20, 1, 30)
    assert f.args[0].value.span == Span(1, 20, 1, 25)
    assert insts[0].span == Span(6, 3, 6, 15)
    assert insts[0].result.span == Span(6, 3, 6, 4)
    # the comment after the type is not part of the instruction
    assert insts[1].span == Span(7, 3, 7, 44)
    assert insts[1].indices[0].span == Span(7, 16, 7, 17)
    assert insts[2].slices[0].span == Span(8, 19, 8, 19)
    assert insts[2].slices[2].span == Span(8, 23, 8, 24)
    # an instruction over two lines ends with its last type
    assert insts[4].span == Span(10, 3, 11, 67)
    assert insts[4].alpha.span == Span(10, 12, 10, 14)


def test_example_file_parses():
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "fused_kernel.tl"
    if path.exists():
        parse(path.read_text(), str(path))


# --- types -------------------------------------------------------------------------------------

TYPES = [
    ("f32", f32), ("f64", f64), ("i1", i1), ("i8", ScalarType.i8), ("i16", ScalarType.i16),
    ("i32", i32), ("i64", i64), ("index", idx), ("bool", i1), ("u8", ScalarType.u8),
    ("u16", ScalarType.u16), ("u32", ScalarType.u32), ("u64", ScalarType.u64),
    ("void", VoidType()),
    ("memref<f32>", M(f32)),
    ("memref<f32,strided<>>", M(f32)),
    ("memref<f64x4>", M(f64, 4)),
    ("memref<f32x4x8>", M(f32, 4, 8)),
    ("memref<f32x4x?>", M(f32, 4, None)),
    ("memref<f32x5x6x7>", M(f32, 5, 6, 7)),
    ("memref<f32x5x6x7,strided<1,5,30>>", M(f32, 5, 6, 7)),
    ("memref<f32x4x?,strided<1,?>>", M(f32, 4, None, stride=(1, None))),
    ("memref<i8x32x7,strided<2,64>>", M(ScalarType.i8, 32, 7, stride=(2, 64))),
    ("memref< f32 x 4 x ? , strided< 1 , ? > >", M(f32, 4, None, stride=(1, None))),
    ("memref<boolx2>", M(i1, 2)),
    ("memref<f32x0x8>", M(f32, 0, 8)),
    ("group<memref<f32x16x16>>", GroupType(M(f32, 16, 16))),
    ("group<memref<f32x42>, offset: ?>", GroupType(M(f32, 42), None)),
    ("group<memref<f32x42>, offset: 5>", GroupType(M(f32, 42), 5)),
    ("group<memref<f32x?,strided<2>>,offset:0>", GroupType(M(f32, None, stride=(2,)), 0)),
]


@pytest.mark.parametrize("text,expected", TYPES, ids=[t for t, _ in TYPES])
def test_argument_types(text, expected):
    (arg,) = parse(f"func @f(%a: {text}) {{}}").function().args
    assert arg.type == expected
    assert type(arg.type) is type(expected)


# --- instructions ------------------------------------------------------------------------------

INSTRUCTIONS = [
    ("%r = alloca -> memref<f32x4x4>", ir.Alloca(V("r"), M(f32, 4, 4))),
    *[(f"%r = arith.{op} %a, %b : i32", ir.Arith(V("r"), op, V("a"), V("b"), i32))
      for op in ops.names(ops.BINARY)],
    ("%r = arith.add %a, 2.5 : f32", ir.Arith(V("r"), "add", V("a"), C(2.5), f32)),
    ("%r = arith.mul -3, %b : i64", ir.Arith(V("r"), "mul", C(-3), V("b"), i64)),
    ("%r = arith.neg %a : f64", ir.ArithUnary(V("r"), "neg", V("a"), f64)),
    ("%r = arith.not true : i1", ir.ArithUnary(V("r"), "not", C(1), i1)),
    ("%r = cast %a : i32 -> f32", ir.Cast(V("r"), V("a"), i32, f32)),
    ("%r = cast 1.5 : f64 -> bool", ir.Cast(V("r"), C(1.5), f64, i1)),
    *[(f"%r = cmp.{c} %a, 16 : i32", ir.Compare(V("r"), c, V("a"), C(16), i32))
      for c in ops.names(ops.COMPARE)],
    ("%r = expand %a[1 -> 2x8] : memref<f32x32x16x8>",
     ir.Expand(V("r"), V("a"), 1, (2, 8), M(f32, 32, 16, 8))),
    ("%r = expand %a[1 -> %1 x ? x 4] : memref<f32x32x?>",
     ir.Expand(V("r"), V("a"), 1, (V("1"), None, 4), M(f32, 32, None))),
    ("%r = fuse %a[1,3] : memref<f32x32x16x8x4x42>",
     ir.Fuse(V("r"), V("a"), 1, 3, M(f32, 32, 16, 8, 4, 42))),
    ("%r = group_id", ir.GroupId(V("r"))),
    ("%r = group_size", ir.GroupSize(V("r"))),
    ("%r = load %a[] : memref<f32>", ir.Load(V("r"), V("a"), (), M(f32))),
    ("%r = load %a[5, %i] : memref<f32x10x?>",
     ir.Load(V("r"), V("a"), (C(5), V("i")), M(f32, 10, None))),
    ("%r = load %g[%i] : group<memref<f32x42>, offset: ?>",
     ir.Load(V("r"), V("g"), (V("i"),), GroupType(M(f32, 42), None))),
    ("%r = size %a[1] : memref<f32x4x?>", ir.Size(V("r"), V("a"), 1, M(f32, 4, None))),
    ("%r = subview %a[4:8, %i, :, 5:?, %j:%k, %j:?] : memref<f32x32x16x7x9x9x9>",
     ir.Subview(V("r"), V("a"), (Slice(C(4), C(8), True), Slice(V("i")),
                                 Slice(C(0), None, True), Slice(C(5), None, True),
                                 Slice(V("j"), V("k"), True), Slice(V("j"), None, True)),
                M(f32, 32, 16, 7, 9, 9, 9))),
    ("%r = subview %a[] : memref<f32>", ir.Subview(V("r"), V("a"), (), M(f32))),
    ("store %v, %a[%i, 0] : memref<f32x4x4>",
     ir.Store(V("v"), V("a"), (V("i"), C(0)), M(f32, 4, 4))),
    ("store %v, %a[] : memref<f32>", ir.Store(V("v"), V("a"), (), M(f32))),
    ("barrier", ir.Barrier()),
    ("lifetime_stop %t", ir.LifetimeStop(V("t"))),
    ("yield : ", ir.Yield((), ())),
    ("yield %a, 16 : i32, i32", ir.Yield((V("a"), C(16)), (i32, i32))),
    ("yield -2.5e-3 : f32", ir.Yield((C(-2.5e-3),), (f32,))),
    ("axpby.n %alpha, %A, 0.0, %B : f32, memref<f32x8x16>, f32, memref<f32x8x16>",
     ir.Axpby(False, False, V("alpha"), V("A"), C(0.0), V("B"), f32, M(f32, 8, 16), f32,
              M(f32, 8, 16))),
    ("axpby.t.atomic 1.0, %A, 1.0, %B : f64, memref<f64x8x16>, f64, memref<f64x16x8>",
     ir.Axpby(True, True, C(1.0), V("A"), C(1.0), V("B"), f64, M(f64, 8, 16), f64,
              M(f64, 16, 8))),
    ("gemm.t.n.atomic 1.0, %A, %B, %beta, %C "
     ": f32, memref<f32x4x8>, memref<f32x4x2>, f32, memref<f32x8x2>",
     ir.Gemm(True, C(1.0), V("A"), V("B"), V("beta"), V("C"), f32, M(f32, 4, 8), M(f32, 4, 2), f32,
             M(f32, 8, 2), trans_a=True, trans_b=False)),
    ("gemv.t 1.0, %A, %b, 0.0, %c : f32, memref<f32x4x8>, memref<f32x4>, f32, memref<f32x8>",
     ir.Gemv(False, C(1.0), V("A"), V("b"), C(0.0), V("c"), f32, M(f32, 4, 8), M(f32, 4), f32,
             M(f32, 8), trans_a=True)),
    ("ger.atomic 1.0, %a, %b, 1.0, %C : f32, memref<f32x4>, memref<f32x8>, f32, "
     "memref<f32x4x8>",
     ir.Ger(True, C(1.0), V("a"), V("b"), C(1.0), V("C"), f32, M(f32, 4), M(f32, 8), f32,
            M(f32, 4, 8))),
    ("hadamard_product 1.0, %a, %b, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, "
     "memref<f32x4>",
     ir.Hadamard(False, C(1.0), V("a"), V("b"), C(0.0), V("c"), f32, M(f32, 4), M(f32, 4),
                 f32, M(f32, 4))),
    ("sum.n.atomic 1.0, %A, 0.0, %b : f32, memref<f32x4x8>, f32, memref<f32x4>",
     ir.Sum(False, True, C(1.0), V("A"), C(0.0), V("b"), f32, M(f32, 4, 8), f32, M(f32, 4))),
    ("gemm.n.n 1, %A, %B, 0, %C : i32, memref<i32x2x2>, memref<i32x2x2>, i32, "
     "memref<i32x2x2>",
     ir.Gemm(False, C(1), V("A"), V("B"), C(0), V("C"), i32, M(i32, 2, 2), M(i32, 2, 2), i32, M(i32,
             2, 2), trans_a=False, trans_b=False)),
]


@pytest.mark.parametrize("text,expected", INSTRUCTIONS, ids=[t for t, _ in INSTRUCTIONS])
def test_instruction(text, expected):
    inst = one(text)
    assert inst == expected
    assert inst.span is not None


def test_if_forms():
    (i,) = body("if %c { barrier }")
    assert i == ir.If((), V("c"), (), ir.Region([ir.Barrier()]), None)
    (i,) = body("if true { } else { }")
    assert i == ir.If((), C(1), (), ir.Region([]), ir.Region([]))
    (i,) = body("%a, %b = if %c -> (i32, f64) { yield 1, 2.0 : i32, f64 } "
                "else { yield %x, %y : i32, f64 }")
    assert i == ir.If((V("a"), V("b")), V("c"), (i32, f64),
                      ir.Region([ir.Yield((C(1), C(2.0)), (i32, f64))]),
                      ir.Region([ir.Yield((V("x"), V("y")), (i32, f64))]))
    assert ir.results_of(i) == (V("a"), V("b"))


def test_for_forms():
    (i,) = body("for %i = 0, %n { }")
    assert i == ir.For(V("i"), C(0), V("n"), None, idx, ir.Region([]))
    (i,) = body("for %i = %a, 64, 2 : i32 { barrier }")
    assert i == ir.For(V("i"), V("a"), C(64), C(2), i32, ir.Region([ir.Barrier()]))
    (i,) = body("foreach %i = 0, 16 { }")
    assert i == ir.Foreach(V("i"), C(0), C(16), idx, ir.Region([]))
    (i,) = body("foreach %i = 0, 16 : i64 { }")
    assert i == ir.Foreach(V("i"), C(0), C(16), i64, ir.Region([]))


def test_nested_regions_and_spans():
    text = ("func @f(%n: index) {\n"
            "  for %i = 0, %n {\n"
            "    %c = cmp.lt %i, 4 : index\n"
            "    if %c {\n"
            "      barrier\n"
            "    } else {\n"
            "    }\n"
            "  }\n"
            "}\n")
    f = parse(text).function()
    (loop,) = f.body.instructions
    assert loop.span == Span(2, 3, 8, 3)
    assert loop.var.span == Span(2, 7, 2, 8)
    assert loop.body.span == Span(2, 18, 8, 3)
    cmp, cond = loop.body.instructions
    assert cmp.span == Span(3, 5, 3, 29)
    assert cmp.rhs.span == Span(3, 21, 3, 21)
    assert cond.span == Span(4, 5, 7, 5)
    assert cond.then.instructions[0].span == Span(5, 7, 5, 13)
    assert cond.otherwise.span == Span(6, 12, 7, 5)


def test_function_attributes_and_several_functions():
    p = parse("func @a() work_group_size(64,2) subgroup_size(32) {}\n"
              "func @b(%x: f32) subgroup_size(16) {}\n"
              "func @1() {}")
    a, b, c = p.functions
    assert (a.name, a.work_group_size, a.subgroup_size) == ("a", (64, 2), 32)
    assert (b.name, b.work_group_size, b.subgroup_size) == ("b", None, 16)
    assert c.name == "1" and c.args == ()
    assert p.function("@b") is b


def test_empty_file_and_comments_only():
    assert parse("").functions == ()
    assert parse("; nothing here\n  ; at all\n").functions == ()


def test_comments_and_whitespace_anywhere():
    insts = body("  %r = ; the result\n load ; op\n %a [ ; idx\n %i ] ; end\n"
                 " : memref< f32 x ? > ; type\n")
    assert insts == [ir.Load(V("r"), V("a"), (V("i"),), M(f32, None))]
    assert insts[0].span == Span(2, 3, 6, 20)


def test_keywords_are_not_identifiers():
    insts = body("%load = load %subview[%sub] : memref<f32x4>\n"
                 "%arith = arith.add %load, %arith2 : f32\n"
                 "%sum = sub %load, %x : f32\n"
                 "%if = cmp.eq %for, %foreach : index")
    assert [type(i) for i in insts] == [ir.Load, ir.Arith, ir.Arith, ir.Compare]
    assert insts[0].operand == V("subview") and insts[1].rhs == V("arith2")
    assert insts[2].op == "sub"


def test_numbered_and_named_identifiers():
    (i,) = body("%0 = arith.add %a_1, %B2 : f32")
    assert i.result.name == "0" and i.lhs.name == "a_1" and i.rhs.name == "B2"


# --- the spec's code snippets ------------------------------------------------------------------

# (instruction, type of %0): every view example of the spec, wrapped in a function below.
SPEC_VIEWS = [
    ("expand %0[1 -> 2x8] : memref<f32x32x16x8>", None),
    ("expand %0[1 -> 2x?] : memref<f32x32x16x8>", None),
    ("expand %0[1 -> ?x8] : memref<f32x32x16x8>", None),
    ("expand %0[1 -> 2x?] : memref<f32x32x?x8>", None),
    ("expand %0[1 -> ?x8] : memref<f32x32x?x8>", None),
    ("expand %0[1 -> %1 x ?] : memref<f32x32x?>", None),
    ("expand %0[1 -> %1 x ?] : memref<f32x32x16>", None),
    ("expand %0[1 -> %1 x %2] : memref<f32x32x?>", None),
    ("expand %0[1 -> 4 x %1] : memref<f32x32x?>", None),
    ("expand %0[0->4x8] : memref<f32x32x7,strided<2,64>>", None),
    ("expand %0[0->4x?] : memref<f32x32x7,strided<2,64>>", None),
    ("expand %0[0->?x4] : memref<f32x?x7,strided<2,?>>", None),
    ("expand %0[0->4x?] : memref<f32x?x7,strided<2,?>>", None),
    ("fuse %0[1,3] : memref<f32x32x16x8x4x42>", None),
    ("fuse %0[1,3] : memref<f32x32x16x?x4x42,strided<1,16,?,?,?>>", None),
    ("fuse %0[1,2] : memref<f32x32x16x2x2,strided<1,48,768,1536>>", None),
    ("fuse %0[0,1] : memref<f32x8x?x32,strided<1,?,?>>", None),
    ("fuse %0[0,1] : memref<f32x8x16,strided<1,10>>", None),
    ("fuse %0[0,1] : memref<f32x8x16,strided<1,?>>", None),
    ("load %0[] : memref<f32>", None),
    ("load %0[5, %1] : memref<f32x10x?>", None),
    ("load %0[%1] : group<memref<f32x42>>", None),
    ("load %0[%1] : group<memref<f32x42>, offset: ?>", None),
    ("subview %0[4:8,8:4] : memref<f32x32x16>", None),
    ("subview %0[2:4, %1] : memref<f32x16x8>", None),
    ("subview %0[2:4, %1:1] : memref<f64x16x8>", None),
    ("subview %0[%1:4] : memref<f32x16>", None),
    ("subview %0[%2:%2] : memref<f32x16>", None),
    ("subview %0[2:4, %2:%2, 6:7] : memref<f32x16x42x13>", None),
    ("subview %0[2:4, %2:%2, 6:7] : memref<f32x16x42x13,strided<1,?,?>>", None),
    ("subview %0[:] : memref<f32x16>", None),
    ("subview %0[:] : memref<f32x?>", None),
    ("subview %0[5:?] : memref<f32x16>", None),
    ("subview %0[%2:?] : memref<f32x16>", None),
]


def view_function(inst: str) -> str:
    """A function whose %0 has the type the example is written for."""
    ty = inst.rsplit(" : ", 1)[1]
    return f"func @view(%0: {ty}, %1: index, %2: index) {{\n  %r = {inst}\n}}\n"


@pytest.mark.parametrize("inst", [v for v, _ in SPEC_VIEWS])
def test_spec_view_examples(inst):
    f = parse(view_function(inst)).function()
    (i,) = f.body.instructions
    assert i.result == V("r") and i.operand == V("0")
    assert i.type == f.args[0].type


SPEC_IF = """\
func @f(%0: i32) {
  %1 = cmp.lt %0, 16 : i32
  %x = if %1 -> (i32) {
      yield %0 : i32
  } else {
      yield 16 : i32
  }
}
"""


def test_spec_if_example():
    cmp, cond = parse(SPEC_IF).function().body.instructions
    assert cmp == ir.Compare(V("1"), "lt", V("0"), C(16), i32)
    assert cond == ir.If((V("x"),), V("1"), (i32,), ir.Region([ir.Yield((V("0"),), (i32,))]),
                         ir.Region([ir.Yield((C(16),), (i32,))]))


def test_spec_type_examples():
    args = ("%a: memref<f32x4x8>, %b: memref<f32x4x?>, %c: memref<f32>, %d: memref<f64x4>, "
            "%e: memref<f64x4x4>, %f: memref<f32x5x6x7>, %g: memref<f32x5x6x7,strided<1,5,30>>, "
            "%h: group<memref<f32x16x16>>")
    f = parse(f"func @types({args}) {{}}").function()
    assert f.args[5].type == f.args[6].type


# --- older spellings (docs/semantics.md "Accepted syntax") --------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rem"])
def test_v02_binary_ops(op):
    assert one(f"%r = {op} %a, %b : f32") == one(f"%r = arith.{op} %a, %b : f32")


def test_v02_neg_bool_unsigned_hadamard():
    assert one("%r = neg %a : u32") == ir.ArithUnary(V("r"), "neg", V("a"), ScalarType.u32)
    assert one("%r = cmp.eq %a, 0 : bool") == ir.Compare(V("r"), "eq", V("a"), C(0), i1)
    tail = "1.0, %a, %b, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, memref<f32x4>"
    assert one(f"hadamard {tail}") == one(f"hadamard_product {tail}")
    assert one(f"hadamard.atomic {tail}").atomic


def test_optional_comma_after_modifiers():
    gemm = ("1.0, %A, %B, 0.0, %C : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
            "memref<f32x4x4>")
    assert one(f"gemm.n.t {gemm}") == one(f"gemm.n.t, {gemm}")
    assert one(f"gemm.n.t.atomic {gemm}") == one(f"gemm.n.t.atomic, {gemm}")
    gemv = "1.0, %A, %b, 0.0, %c : f32, memref<f32x4x4>, memref<f32x4>, f32, memref<f32x4>"
    assert one(f"gemv.n {gemv}") == one(f"gemv.n, {gemv}")
    s = "1.0, %A, 0.0, %b : f32, memref<f32x4x4>, f32, memref<f32x4>"
    assert one(f"sum.t {s}") == one(f"sum.t, {s}")


# --- constants ---------------------------------------------------------------------------------

FLOATS = [
    ("1.0", 1.0), ("-1.5", -1.5), ("+.5", 0.5), ("2.", 2.0), ("1e3", 1000.0),
    ("1.5e-3", 1.5e-3), ("1E+2", 100.0), ("1e+20", 1e20), ("5e-324", 5e-324),
    ("0.1", 0.1), ("1.7976931348623157e308", 1.7976931348623157e308),
    ("0x1p3", 8.0), ("0x1.8p1", 3.0), ("-0x.8", -0.5), ("0x1.", 1.0), ("0X1P-2", 0.25),
    ("0xA.8p0", 10.5), ("0x1.fffffffffffffp1023", 1.7976931348623157e308),
    ("1e-400", 0.0),
]


@pytest.mark.parametrize("text,value", FLOATS, ids=[t for t, _ in FLOATS])
def test_float_constants(text, value):
    c = one(f"%r = arith.add {text}, %a : f64").lhs
    assert c.is_float and c.value == value and isinstance(c.value, float)


@pytest.mark.parametrize("text", ["1e400", "-1e309", "0x1p1024", "0x2.0p1023"])
def test_float_overflow_rejected(text):
    msg, span = error_of(f"func @f() {{\n  %r = arith.add {text}, %a : f64\n}}")
    assert "outside the range of double precision" in msg
    assert span == Span(2, 18, 2, 17 + len(text))


def test_integer_constants():
    assert one("%r = arith.add true, false : i1") == ir.Arith(V("r"), "add", C(1), C(0), i1)
    big = 2**63 - 1
    (i,) = body(f"%r = arith.add {big}, -{big} : i64")
    assert i.lhs == C(big) and i.rhs == C(-big) and not i.lhs.is_float
    assert one("%r = arith.add +7, 007 : i32").lhs == C(7)


@pytest.mark.parametrize("text", [str(2**63), str(-2**63), "99999999999999999999999",
                                  "1" * 5000])
def test_integer_out_of_range(text):
    msg, span = error_of(f"func @f() {{\n  %r = arith.add {text}, %a : i64\n}}")
    assert "outside the range [-2^63+1, 2^63-1]" in msg
    assert span == Span(2, 18, 2, 17 + len(text))


def test_integer_out_of_range_in_type_and_index():
    msg, span = error_of("func @f(%a: memref<f32x9223372036854775808>) {}")
    assert "outside the range" in msg and span == Span(1, 24, 1, 42)
    msg, span = error_of("func @f() {\n  %r = load %a[-9223372036854775808] : memref<f32x4>\n}")
    assert span == Span(2, 16, 2, 35)


def test_all_range_errors_reported():
    with pytest.raises(SourceError) as e:
        parse("func @f() {\n  %r = arith.add 1e999, 99999999999999999999 : f64\n}")
    assert [d.span for d in e.value.diagnostics] == [Span(2, 18, 2, 22), Span(2, 25, 2, 44)]


# --- syntax errors -----------------------------------------------------------------------------

SYNTAX_ERRORS = [
    ("func @f() {\n  %x = lod %a : f32\n}", "expected an instruction, found 'lod'",
     Span(2, 8, 2, 10)),
    ("func @f() {\n  foo\n}", "expected an instruction or '}', found 'foo'", Span(2, 3, 2, 5)),
    ("func @f() {\n  %x = arith.foo %a, %b : f32\n}",
     "expected '.add', '.sub', '.mul', '.div', '.rem', '.shl', '.shr', '.and', '.or', "
     "'.xor', '.min', '.max', '.neg' or '.not', found '.foo'", Span(2, 13, 2, 16)),
    ("func @f() {\n  %x = arith.add %a, %b : f33\n}", "expected a scalar type, found 'f33'",
     Span(2, 27, 2, 29)),
    ("func @f() {\n  %x = arith.add %a %b : f32\n}", "expected ',', found '%b'",
     Span(2, 21, 2, 22)),
    ("func @f() {\n  %x = load %a[1.5] : memref<f32x4>\n}", "expected ',' or ']', found '.5'",
     Span(2, 17, 2, 18)),
    ("func @f() {\n  %x = load %a[1] : memref<f32x4>\n",
     "expected '}', found end of input", Span(3, 1, 3, 1)),
    ("func @f() {} junk", "expected 'func' or end of input, found 'junk'",
     Span(1, 14, 1, 17)),
    ("junk", "expected 'func' or end of input, found 'junk'", Span(1, 1, 1, 4)),
    ("func f() {}", "expected a global identifier (@name), found 'f'", Span(1, 6, 1, 6)),
    ("func @f(%a: foo) {}", "expected a type, found 'foo'", Span(1, 13, 1, 15)),
    ("func @f(%a: memref<f32x4, strided<1>) {}", "expected '>', found ')'",
     Span(1, 37, 1, 37)),
    ("func @f() {\n  gemm.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, "
     "memref<f32x4>\n}", "expected '.n' or '.t', found '1.0'", Span(2, 10, 2, 12)),
    ("func @f() {\n  %x = subview %a[4:] : memref<f32x4>\n}",
     "expected a local identifier (%name), an integer constant or '?', found ']'",
     Span(2, 21, 2, 21)),
    ("func @f() {\n  for %i = 0, 4 : f32 {}\n}", "expected an integer type, found 'f32'",
     Span(2, 19, 2, 21)),
    ("func @f() {\n  %x = loadx %a[] : memref<f32>\n}", "expected an instruction, found 'loadx'",
     Span(2, 8, 2, 12)),
    ("func @f() {\n  %x = arith.add %a, %b : f32 f32\n}",
     "expected an instruction or '}', found 'f32'", Span(2, 31, 2, 33)),
    ("func @f() work_group_size(16) {}", "expected ',', found ')'", Span(1, 29, 1, 29)),
    ("func @f() {\n  %x = expand %a[0 -> 4] : memref<f32x4>\n}", "expected 'x', found ']'",
     Span(2, 24, 2, 24)),
]


@pytest.mark.parametrize("text,message,span", SYNTAX_ERRORS,
                         ids=[m for _, m, _ in SYNTAX_ERRORS])
def test_syntax_error(text, message, span):
    assert error_of(text) == (message, span)


def test_syntax_error_format_underlines_token():
    with pytest.raises(SourceError) as e:
        parse("func @f() {\n  %x = lod %a : f32\n}", "kernel.tl")
    assert str(e.value) == ("kernel.tl:2.8-10: expected an instruction, found 'lod'\n"
                            "  %x = lod %a : f32\n"
                            "       ~~~")
    assert e.value.exit_status == 2


def test_duplicate_attribute():
    msg, span = error_of("func @f() subgroup_size(16) subgroup_size(32) {}")
    assert msg == "subgroup_size given twice" and span == Span(1, 29, 1, 45)


def test_non_string_input():
    with pytest.raises(TypeError):
        parse(b"func @f() {}")  # type: ignore[arg-type]


# --- grammar hygiene ---------------------------------------------------------------------------


def test_every_terminal_has_a_readable_name():
    """Error messages show terminals by name: each must be a named rule with a readable word."""
    from tlinterp.lang.v03.parser import _words

    seen, todo = set(), list(GRAMMAR.values())
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, (Regex, Literal)):
            assert e.name, f"unnamed terminal {e.as_rule()}"
            words = _words(e)
            assert e.name == "_" or (words and all(w.strip("'") for w in words)), e.name
            assert all("~" not in w and "\\" not in w for w in words), (e.name, words)
        todo.extend(getattr(e, "members", ()))


def test_builders_cover_every_instruction_rule():
    from tlinterp.lang.v03.parser import _OTHER_BUILDERS, _VALUE_BUILDERS

    value_ops = GRAMMAR["value_instruction"].members[2].members
    assert set(_VALUE_BUILDERS) == {m.name for m in value_ops}
    assert set(_OTHER_BUILDERS) | {"value_instruction"} == {
        m.name for m in GRAMMAR["instruction"].members}


def test_float_values_are_python_floats_and_finite():
    for text, _ in FLOATS:
        c = one(f"%r = arith.add {text}, %a : f64").lhs
        assert math.isfinite(c.value)


def test_instructions_need_no_line_breaks():
    insts = body("%a = group_id %b = group_size barrier store %a, %m[] : memref<index>")
    assert [type(i) for i in insts] == [ir.GroupId, ir.GroupSize, ir.Barrier, ir.Store]


def test_v02_spec_code_blocks():
    """Every code block of the v0.2 spec (a copy of the spec lives in tests/data/spec)."""
    import re
    from pathlib import Path

    spec = Path(__file__).resolve().parent / "data" / "spec" / "tensor-language-v0.2.rst"
    blocks = re.findall(r"\n *\.\. code::\n\n((?:(?: +[^\n]*)?\n)+)", spec.read_text())
    assert len(blocks) >= 12
    seen = 0
    for block in blocks:
        text = block.strip()
        if text.startswith("func"):
            parse(text)
        elif text.startswith("%1 = cmp.lt"):
            parse("func @f(%0: i32) {\n" + text + "\n}")
        else:
            for line in text.splitlines():
                inst = line.split(";")[0].strip()
                if inst:
                    parse(view_function(re.sub(r"\s+:", " :", inst)))
        seen += 1
    assert seen == len(blocks)
