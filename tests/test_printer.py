"""The printer: canonical v0.3 text, and parse(format_program(p)) == p for every program."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_parser import INSTRUCTIONS, SAMPLE, SPEC_IF, SPEC_VIEWS, TYPES, view_function

from tlinterp.lang import ir, ops
from tlinterp.lang.ir import Const, Slice, Value
from tlinterp.lang.types import V03_SCALARS, GroupType, MemrefType, ScalarType, VoidType
from tlinterp.lang.v03.parser import INT_MAX, parse
from tlinterp.lang.v03.printer import (
    format_function,
    format_instruction,
    format_operand,
    format_program,
    format_type,
)

f32, i32 = ScalarType.f32, ScalarType.i32


def roundtrip(text: str) -> str:
    p = parse(text)
    printed = format_program(p)
    q = parse(printed)
    assert q == p
    assert format_program(q) == printed  # printing is a fixed point
    return printed


# --- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize("t,text", [
    (f32, "f32"),
    (ScalarType.index, "index"),
    (ScalarType.u16, "u16"),
    (VoidType(), "void"),
    (MemrefType.make(f32, ()), "memref<f32>"),
    (MemrefType.make(f32, (5, 6, 7)), "memref<f32x5x6x7>"),
    (MemrefType.make(f32, (5, 6, 7), (1, 5, 30)), "memref<f32x5x6x7>"),
    (MemrefType.make(f32, (4, None)), "memref<f32x4x?>"),
    (MemrefType.make(f32, (4, None), (1, 8)), "memref<f32x4x?,strided<1,8>>"),
    (MemrefType.make(f32, (None, 7), (2, None)), "memref<f32x?x7,strided<2,?>>"),
    (GroupType(MemrefType.make(f32, (16, 16))), "group<memref<f32x16x16>>"),
    (GroupType(MemrefType.make(f32, (42,)), None), "group<memref<f32x42>, offset: ?>"),
    (GroupType(MemrefType.make(f32, (42,)), 3), "group<memref<f32x42>, offset: 3>"),
])
def test_format_type(t, text):
    assert format_type(t) == text
    if not isinstance(t, (ScalarType, VoidType)):
        assert str(t) == text  # types.py prints through format_type


def test_format_operand():
    assert format_operand(Value("x")) == "%x"
    assert format_operand(Const(-3)) == "-3"
    assert format_operand(Const(1.0, True)) == "1.0"
    assert format_operand(Const(1e20, True)) == "1e+20"
    assert format_operand(Const(2, True)) == "2.0"  # a float constant stays a float
    with pytest.raises(ValueError):
        format_operand(Const(float("inf"), True))
    with pytest.raises(ValueError):
        format_operand(Const(float("nan"), True))


# --- canonical text ----------------------------------------------------------------------------

SAMPLE_CANONICAL = """\
func @fused_kernel(%alpha: f32, %A: group<memref<f32x16x8>>, %B: memref<f32x8x8>, \
%C: memref<f32x8x16>, %D: memref<f32x16x16x?>) {
  %0 = group_id
  %1 = load %A[%0] : group<memref<f32x16x8>>
  %2 = subview %D[:, :, %0] : memref<f32x16x16x?>
  %tmp0 = alloca -> memref<f32x16x8>
  gemm.n.t 1.0, %1, %B, 0.0, %tmp0 : f32, memref<f32x16x8>, memref<f32x8x8>, f32, \
memref<f32x16x8>
  gemm.n.n %alpha, %tmp0, %C, 1.0, %2 : f32, memref<f32x16x8>, memref<f32x8x16>, f32, \
memref<f32x16x16>
}
"""


def test_sample_canonical():
    assert roundtrip(SAMPLE) == SAMPLE_CANONICAL


OLD_SPELLINGS = """\
func @old(%a: f32, %b: bool, %A: memref<f32x4,strided<1>>, %c: memref<f32x4>) \
subgroup_size(16) work_group_size(32,2) {
  %0 = add %a, %a : f32
  %1 = neg %0 : f32
  %2 = cmp.ne %b, false : bool
  hadamard.atomic 1.0, %A, %A, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, memref<f32x4>
  gemm.t.n, 1.0, %A, %A, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, memref<f32x4>
  %r = if %2 -> (f32) { yield %1 : f32 } else { yield 0x1.8p1 : f32 }
  for %i = 0, 8, 2 : index { yield : }
}
"""

OLD_CANONICAL = """\
func @old(%a: f32, %b: i1, %A: memref<f32x4>, %c: memref<f32x4>) work_group_size(32,2) \
subgroup_size(16) {
  %0 = arith.add %a, %a : f32
  %1 = arith.neg %0 : f32
  %2 = cmp.ne %b, 0 : i1
  hadamard_product.atomic 1.0, %A, %A, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, \
memref<f32x4>
  gemm.t.n 1.0, %A, %A, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, memref<f32x4>
  %r = if %2 -> (f32) {
    yield %1 : f32
  } else {
    yield 3.0 : f32
  }
  for %i = 0, 8, 2 {
    yield :
  }
}
"""


def test_old_spellings_print_canonical():
    assert roundtrip(OLD_SPELLINGS) == OLD_CANONICAL


def test_format_instruction_and_function():
    (f,) = parse("func @f(%x: i32) { %y = arith.add %x, 16 : i32 foreach %i = 0, 4 : i32 "
                 "{ if %c { } } }").functions
    add, loop = f.body.instructions
    assert format_instruction(add) == "%y = arith.add %x, 16 : i32"
    assert format_instruction(loop) == "foreach %i = 0, 4 : i32 {\n  if %c {\n  }\n}"
    assert format_instruction(loop, 1) == "  foreach %i = 0, 4 : i32 {\n    if %c {\n    }\n  }"
    assert format_function(f).startswith("func @f(%x: i32) {\n  %y = ")


def test_expand_spacing():
    # `%nx8` would lex as one identifier, so values get spaces around the x
    assert roundtrip("func @f() { %r = expand %a[0 -> %n x 8] : memref<f32x?> }") == (
        "func @f() {\n  %r = expand %a[0 -> %n x 8] : memref<f32x?>\n}\n")
    assert "[1 -> 2x?x4]" in roundtrip(
        "func @f() { %r = expand %a[1 -> 2 x ? x 4] : memref<f32x3x?> }")


def test_float_repr_roundtrip():
    for v in [0.1, 1e20, 1e-7, 5e-324, 1.7976931348623157e308, -0.0, 123456789.125, 2.0**-1074]:
        text = roundtrip(f"func @f() {{ yield {v!r} : f64 }}")
        (y,) = parse(text).function().body.instructions
        assert y.values[0].value == v and y.values[0].is_float


def test_empty_program():
    assert format_program(ir.Program(())) == ""
    assert parse(format_program(parse("; nothing"))) == parse("")


def test_several_functions():
    text = "func @a() {}\nfunc @b() {}\n"
    assert roundtrip(text) == "func @a() {\n}\n\nfunc @b() {\n}\n"


# --- round trips -------------------------------------------------------------------------------

PROGRAMS = [SAMPLE, SPEC_IF, OLD_SPELLINGS]
PROGRAMS += [view_function(v) for v, _ in SPEC_VIEWS]
PROGRAMS += [f"func @f() {{\n  {t}\n}}\n" for t, _ in INSTRUCTIONS]
PROGRAMS += [f"func @f(%a: {t}) {{}}\n" for t, _ in TYPES]


@pytest.mark.parametrize("text", PROGRAMS)
def test_roundtrip_test_programs(text):
    roundtrip(text)


def test_roundtrip_example_files():
    from pathlib import Path

    root = Path(__file__).parent.parent
    for path in sorted(root.glob("examples/**/*.tl")) + sorted(root.glob("corpus/**/*.tl")):
        try:
            parse(path.read_text())
        except Exception:  # a corpus case may be a deliberately rejected program
            continue
        roundtrip(path.read_text())


# --- random IR: every program the grammar can express prints and re-parses equal ----------------

_LETTERS = "abcxyzABXZ"
names = st.one_of(st.integers(0, 999).map(str),
                  st.builds(str.__add__, st.sampled_from(_LETTERS),
                            st.text(_LETTERS + "0123456789_", max_size=4)))
values = st.builds(Value, names)
ints = st.integers(-INT_MAX, INT_MAX)
int_consts = st.builds(Const, ints)
float_consts = st.builds(lambda v: Const(v, True),
                         st.floats(allow_nan=False, allow_infinity=False))
operands = st.one_of(values, int_consts, float_consts)
index_operands = st.one_of(values, int_consts)
scalars = st.sampled_from(V03_SCALARS)
int_types = st.sampled_from([t for t in V03_SCALARS if t.is_int])
dyns = st.one_of(st.none(), st.integers(0, 2**40), st.integers(-5, -1))


@st.composite
def memrefs(draw) -> MemrefType:
    shape = draw(st.lists(dyns, max_size=3))
    stride = draw(st.one_of(st.none(), st.lists(dyns, min_size=len(shape),
                                                max_size=len(shape))))
    return MemrefType.make(draw(scalars), shape, stride)


groups = st.builds(GroupType, memrefs(), dyns)
types = st.one_of(scalars, memrefs(), groups, st.just(VoidType()))
slices = st.one_of(
    st.builds(Slice, index_operands),
    st.builds(lambda o, s: Slice(o, s, True), index_operands,
              st.one_of(st.none(), index_operands)))


def simple_instructions() -> st.SearchStrategy:
    m = memrefs()
    return st.one_of(
        st.builds(ir.Alloca, values, m),
        st.builds(ir.Arith, values, st.sampled_from(ops.names(ops.BINARY)), operands, operands,
                  scalars),
        st.builds(ir.ArithUnary, values, st.sampled_from(ops.names(ops.UNARY)), operands,
                  scalars),
        st.builds(ir.Cast, values, operands, scalars, scalars),
        st.builds(ir.Compare, values, st.sampled_from(ops.names(ops.COMPARE)), operands, operands,
                  scalars),
        st.builds(ir.Expand, values, values, st.integers(0, 5),
                  st.lists(st.one_of(st.none(), st.integers(-3, 99), values), min_size=2,
                           max_size=4).map(tuple), m),
        st.builds(ir.Fuse, values, values, st.integers(0, 5), st.integers(0, 5), m),
        st.builds(ir.GroupId, values),
        st.builds(ir.GroupSize, values),
        st.builds(ir.Load, values, values, st.lists(index_operands, max_size=3).map(tuple),
                  st.one_of(m, groups)),
        st.builds(ir.Size, values, values, st.integers(0, 5), m),
        st.builds(ir.Subview, values, values, st.lists(slices, max_size=4).map(tuple), m),
        st.builds(ir.Store, operands, values, st.lists(index_operands, max_size=3).map(tuple),
                  m),
        st.builds(ir.Barrier),
        st.builds(ir.LifetimeStop, values),
        st.builds(ir.Yield, st.lists(operands, max_size=3).map(tuple),
                  st.lists(scalars, max_size=3).map(tuple)),
        *(st.builds(cls, st.booleans(), st.booleans(), operands, values, operands, values,
                    scalars, m, scalars, m) for cls in (ir.Axpby, ir.Sum)),
        *(st.builds(cls, st.booleans(), operands, values, values, operands, values, scalars,
                    m, m, scalars, m,
                    **{f.name: st.booleans() for f in dataclasses.fields(cls) if f.kw_only})
          for cls in (ir.Gemm, ir.Gemv, ir.Ger, ir.Hadamard)),
    )


def regions(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(ir.Region, st.lists(inner, max_size=3))


instructions = st.recursive(
    simple_instructions(),
    lambda inner: st.one_of(
        st.builds(ir.If, st.lists(values, max_size=3).map(tuple), index_operands,
                  st.lists(scalars, max_size=3).map(tuple), regions(inner),
                  st.one_of(st.none(), regions(inner))),
        st.builds(ir.For, values, index_operands, index_operands,
                  st.one_of(st.none(), index_operands), int_types, regions(inner)),
        st.builds(ir.Foreach, values, index_operands, index_operands, int_types,
                  regions(inner)),
    ),
    max_leaves=6,
)

functions = st.builds(
    ir.Function, names,
    st.lists(st.builds(ir.Argument, values, types), max_size=3).map(tuple),
    regions(instructions),
    st.one_of(st.none(), st.tuples(st.integers(0, 1024), st.integers(0, 1024))),
    st.one_of(st.none(), st.integers(0, 128)),
)
programs = st.builds(ir.Program, st.lists(functions, min_size=1, max_size=2).map(tuple))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs)
def test_print_parse_roundtrip_random_ir(program):
    text = format_program(program)
    assert parse(text) == program
