"""The static checker: every rule has a negative test asserting message and exact range.

Negative cases assert the *complete* list of diagnostics, so they also prove that one
mistake gives one diagnostic (no cascades). Kernels are built by `kernel(args, body)`:
line 1 is the header, the body starts on line 2, indented by two blanks.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernels import SAMPLE

from tlinterp import check, parse
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.types import ScalarType


def kernel(args: str, body: str, attrs: str = "") -> str:
    lines = "".join(f"  {line}\n" for line in body.strip("\n").split("\n"))
    return f"func @f({args}){attrs} {{\n{lines}}}\n"


def errors(src: str) -> list[tuple[str, str]]:
    with pytest.raises(SourceError) as info:
        check(parse(src, "t.tl", lang="v0.3"))
    return [(d.message, str(d.span)) for d in info.value.diagnostics]


def accepts(src: str) -> None:
    program = parse(src, "t.tl", lang="v0.3")
    assert check(program) is program


# --- positive: the spec's sample and examples -------------------------------------------------


def test_sample_kernel_checks():
    accepts(SAMPLE)


# (operand type, instruction with operand %0 and index values %1 %2, expected result type).
# The result is fed to `size`, whose written type must equal it exactly.
SPEC_RESULT_TYPES = [
    # expand
    ("memref<f32x32x16x8>", "expand %0[1 -> 2x8]", "memref<f32x32x2x8x8>"),
    ("memref<f32x32x16x8>", "expand %0[1 -> 2x?]", "memref<f32x32x2x8x8>"),
    ("memref<f32x32x16x8>", "expand %0[1 -> ?x8]", "memref<f32x32x2x8x8>"),
    ("memref<f32x32x?x8>", "expand %0[1 -> 2x?]", "memref<f32x32x2x?x8>"),
    ("memref<f32x32x?x8>", "expand %0[1 -> ?x8]", "memref<f32x32x?x8x8>"),
    ("memref<f32x32x?>", "expand %0[1 -> %1 x ?]", "memref<f32x32x?x?>"),
    ("memref<f32x32x16>", "expand %0[1 -> %1 x ?]", "memref<f32x32x?x?>"),
    ("memref<f32x32x?>", "expand %0[1 -> %1 x %2]", "memref<f32x32x?x?>"),
    ("memref<f32x32x?>", "expand %0[1 -> 4 x %1]", "memref<f32x32x4x?>"),
    ("memref<f32x32x7,strided<2,64>>", "expand %0[0->4x8]",
     "memref<f32x4x8x7,strided<2,8,64>>"),
    ("memref<f32x32x7,strided<2,64>>", "expand %0[0->4x?]",
     "memref<f32x4x8x7,strided<2,8,64>>"),
    # errata fixed per docs/semantics.md "Result types" (the spec prints memref<f32x?x8,...>
    # and memref<f32x4x?,...>)
    ("memref<f32x?x7,strided<2,?>>", "expand %0[0->?x4]", "memref<f32x?x4x7,strided<2,?,?>>"),
    ("memref<f32x?x7,strided<2,?>>", "expand %0[0->4x?]", "memref<f32x4x?x7,strided<2,8,?>>"),
    # fuse
    ("memref<f32x32x16x8x4x42>", "fuse %0[1,3]", "memref<f32x32x512x42>"),
    # the spec writes strided<1,16,?,?,?>, which breaks S_1 s_1 <= S_2; see test below
    ("memref<f32x32x16x?x4x42,strided<1,32,?,?,?>>", "fuse %0[1,3]",
     "memref<f32x32x?x42,strided<1,32,?>>"),
    ("memref<f32x32x16x2x2,strided<1,48,768,1536>>", "fuse %0[1,2]",
     "memref<f32x32x32x2,strided<1,48,1536>>"),
    ("memref<f32x8x?x32,strided<1,?,?>>", "fuse %0[0,1]", "memref<f32x?x32,strided<1,?>>"),
    # subview
    ("memref<f32x32x16>", "subview %0[4:8,8:4]", "memref<f32x8x4,strided<1,32>>"),
    # erratum: the spec prints memref<f32x4,strided<1,16>>, but the removed mode is mode 1, so
    # the remaining mode keeps stride 1
    ("memref<f32x16x8>", "subview %0[2:4, %1]", "memref<f32x4>"),
    ("memref<f64x16x8>", "subview %0[2:4, %1:1]", "memref<f64x4x1,strided<1,16>>"),
    ("memref<f32x16>", "subview %0[%1:4]", "memref<f32x4>"),
    ("memref<f32x16>", "subview %0[%2:%2]", "memref<f32x?>"),
    ("memref<f32x16x42x13>", "subview %0[2:4, %2:%2, 6:7]",
     "memref<f32x4x?x7,strided<1,16,672>>"),
    ("memref<f32x16x42x13,strided<1,?,?>>", "subview %0[2:4, %2:%2, 6:7]",
     "memref<f32x4x?x7,strided<1,?,?>>"),
    ("memref<f32x16>", "subview %0[:]", "memref<f32x16>"),
    ("memref<f32x?>", "subview %0[:]", "memref<f32x?>"),
    ("memref<f32x16>", "subview %0[5:?]", "memref<f32x11>"),  # erratum: the spec says 13
    ("memref<f32x16>", "subview %0[%2:?]", "memref<f32x?>"),
    # load from a group
    ("group<memref<f32x42>>", "load %0[%1]", "memref<f32x42>"),
    ("group<memref<f32x42>, offset: ?>", "load %0[%1]", "memref<f32x42>"),
]


@pytest.mark.parametrize("operand, inst, result", SPEC_RESULT_TYPES)
def test_spec_result_types(operand, inst, result):
    body = f"%r = {inst} : {operand}\n%s = size %r[0] : {result}"
    accepts(kernel(f"%0: {operand}, %1: index, %2: index", body))


def test_spec_result_type_is_exact():
    body = "%r = fuse %0[1,3] : memref<f32x32x16x8x4x42>\n%s = size %r[0] : memref<f32x32x511x42>"
    assert errors(kernel("%0: memref<f32x32x16x8x4x42>", body)) == [
        ("type mismatch: %r has type memref<f32x32x512x42>, the instruction says "
         "memref<f32x32x511x42>", "3.13-14")]


def test_spec_load_examples():
    accepts(kernel("%0: memref<f32>, %a: memref<f32x10x?>, %1: index",
                   "%x = load %0[] : memref<f32>\n%y = load %a[5, %1] : memref<f32x10x?>\n"
                   "%z = arith.add %x, %y : f32"))


def test_spec_if_example():
    accepts(kernel("%0: i32", "%1 = cmp.lt %0, 16 : i32\n"
                   "%x = if %1 -> (i32) {\n  yield %0 : i32\n} else {\n  yield 16 : i32\n}"))


ACCEPTED = {
    "yield-empty": ("%c: i1", "if %c {\n  yield :\n}"),
    "if-constant-condition": ("", "%x = if true -> (index) {\n  yield 1 : index\n} "
                              "else {\n  yield 2 : index\n}"),
    "bool-logic": ("%a: i1, %b: i1", "%c = arith.and %a, %b : i1\n%d = arith.not %c : i1\n"
                   "%e = cmp.ne %c, %d : i1\n%f = arith.xor %e, true : i1"),
    "cast-any": ("%a: i1", "%b = cast %a : i1 -> f64\n%c = cast %b : f64 -> u8\n"
                 "%d = cast %c : u8 -> index"),
    "int-constant-for-float": ("%a: f32", "%b = arith.mul %a, 2 : f32"),
    "unsigned-range": ("", "%a = arith.add 255, 0 : u8\n%b = arith.add -128, 127 : i8"),
    "loops": ("%n: i32", "for %i = 0, %n, 2 : i32 {\n  %j = arith.add %i, 1 : i32\n}\n"
              "foreach %k = 0, 8 {\n  %l = arith.add %k, 1 : index\n}"),
    "shadow-free-reuse-of-scope": ("%A: memref<f32x8>", "foreach %i = 0, 8 {\n"
                                   "  %x = load %A[%i] : memref<f32x8>\n"
                                   "  if true {\n    store %x, %A[%i] : memref<f32x8>\n  }\n}"),
    "outer-value-in-nested-region": ("%n: index", "%a = arith.add %n, 1 : index\n"
                                     "for %i = 0, %a {\n  for %j = %i, %a {\n"
                                     "    %b = arith.add %a, %j : index\n  }\n}"),
    "lifetime-stop": ("", "%t = alloca -> memref<f32x4>\nlifetime_stop %t"),
    "barrier-in-mixed": ("", "barrier\nfor %i = 0, 2 {\n  barrier\n}"),
    "hadamard-vectors-and-matrices": (
        "%a: memref<f32x4>, %M: memref<f64x2x3>",
        "hadamard_product 1.0, %a, %a, 0.0, %a : f32, memref<f32x4>, memref<f32x4>, f32, "
        "memref<f32x4>\n"
        "hadamard_product 1.0, %M, %M, 1.0, %M : f64, memref<f64x2x3>, memref<f64x2x3>, f64, "
        "memref<f64x2x3>"),
    "collectives-all-shapes": (
        "%A: memref<f32x4x3>, %B: memref<f32x3x5>, %C: memref<f32x4x5>, %x: memref<f32x3>, "
        "%y: memref<f32x4>, %s: memref<f32>, %D: memref<f32x?x?>, %E: memref<f32x5x4>, "
        "%F: memref<f32x3x4>",
        "gemm.n.n 1.0, %A, %B, 0.0, %C : f32, memref<f32x4x3>, memref<f32x3x5>, f32, "
        "memref<f32x4x5>\n"
        "gemm.t.t 1.0, %B, %A, 0.0, %E : f32, memref<f32x3x5>, memref<f32x4x3>, f32, "
        "memref<f32x5x4>\n"
        "gemm.n.n 1.0, %D, %D, 0.0, %C : f32, memref<f32x?x?>, memref<f32x?x?>, f32, "
        "memref<f32x4x5>\n"
        "gemv.n 1.0, %A, %x, 0.0, %y : f32, memref<f32x4x3>, memref<f32x3>, f32, memref<f32x4>\n"
        "gemv.t 1.0, %A, %y, 0.0, %x : f32, memref<f32x4x3>, memref<f32x4>, f32, memref<f32x3>\n"
        "ger 1.0, %y, %x, 1.0, %A : f32, memref<f32x4>, memref<f32x3>, f32, memref<f32x4x3>\n"
        "axpby.t 1.0, %A, 0.0, %F : f32, memref<f32x4x3>, f32, memref<f32x3x4>\n"
        "axpby.t 1.0, %A, 1.0, %D : f32, memref<f32x4x3>, f32, memref<f32x?x?>\n"
        "sum.n 1.0, %A, 0.0, %y : f32, memref<f32x4x3>, f32, memref<f32x4>\n"
        "sum.t 1.0, %A, 0.0, %x : f32, memref<f32x4x3>, f32, memref<f32x3>\n"
        "sum.n 1.0, %x, 0.0, %s : f32, memref<f32x3>, f32, memref<f32>"),
    "mixed-precision": (
        "%a: memref<i32x4>, %b: memref<f64x4>, %alpha: i16",
        "axpby.n %alpha, %a, 1, %b : i16, memref<i32x4>, f32, memref<f64x4>\n"
        "axpby.n 2.0, %a, 0.0, %a : i32, memref<i32x4>, i64, memref<i32x4>"),
    "attributes": ("", "barrier", " work_group_size(64,2) subgroup_size(16)"),
    "layout-restriction-equal": ("%A: memref<f32x4x4,strided<2,8>>", "barrier"),
    "group-offset": ("%g: group<memref<f32x4>, offset: 3>", "%i = group_id\n"
                     "%m = load %g[%i] : group<memref<f32x4>, offset: 3>"),
}


@pytest.mark.parametrize("case", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted(case):
    accepts(kernel(*case))


def test_several_functions_and_v02_spellings():
    accepts(kernel("%a: i32", "%b = add %a, %a : i32\n%c = neg %b : i32")
            + kernel("%a: bool", "%b = arith.or %a, %a : bool").replace("@f", "@g"))


# --- negative: one case per rule; the complete list of (message, range) -------------------------
# Each case is (arguments, body[, attributes], expected diagnostics).

LAYOUT_HINT = ("; hint: the spec's layout rule wants the stride of mode 0 at least 1 and each "
               "other stride at least the previous stride times the previous size, so that "
               "elements never overlap: write %s (the least strides allowed), or a subview of "
               "a larger memref for a block of one")

NEGATIVE = {
    "defined-twice": (
        "",
        "%a = group_id\n%a = group_size",
        [("%a is already defined at 2.3", "3.3-4")]),
    "argument-twice": (
        "%x: i32, %x: i32",
        "barrier",
        [("%x is already defined at 1.9", "1.18-19")]),
    "argument-redefined": (
        "%x: index",
        "%x = group_id",
        [("%x is already defined at 1.9", "2.3-4")]),
    "used-before-definition": (
        "",
        "%b = arith.add %a, 1 : index\n%a = group_id",
        [("%a is used before its definition", "2.18-19")]),
    "not-visible-after-region": (
        "",
        "for %i = 0, 4 {\n  %a = group_id\n}\n%b = arith.add %a, 1 : index",
        [("%a is not visible here: it is defined inside a nested region at 3.5", "5.18-19")]),
    "loop-variable-outside-body": (
        "",
        "foreach %i = 0, 4 {\n}\n%b = arith.add %i, 1 : index",
        [("%i is not visible here: it is defined inside a nested region at 2.11", "4.18-19")]),
    "loop-variable-in-own-bounds": (
        "",
        "for %i = 0, %i {\n}",
        [("%i is used before its definition", "2.15-16")]),
    "undefined": (
        "",
        "%b = arith.add %nope, 1 : index",
        [("%nope is not defined", "2.18-22")]),
    "if-result-inside-if": (
        "%c: i1",
        "%x = if %c -> (index) {\n  yield %x : index\n} else {\n  yield 0 : index\n}",
        [("%x is used before its definition", "3.11-12")]),
    "if-result-redefined-in-region": (
        "%c: i1",
        "%x = if %c -> (index) {\n  %x = group_id\n  yield %x : index\n} else {\n"
        "  yield 0 : index\n}",
        [("%x is already defined at 2.3", "3.5-6")]),
    "arith-operand": (
        "%a: i32",
        "%b = arith.add %a, 1 : i64",
        [("type mismatch: %a has type i32, the instruction says i64", "2.18-19")]),
    "cmp-operand": (
        "%a: f32",
        "%b = cmp.lt %a, %a : f64",
        [("type mismatch: %a has type f32, the instruction says f64", "2.15-16"),
         ("type mismatch: %a has type f32, the instruction says f64", "2.19-20")]),
    "cast-operand": (
        "%a: f32",
        "%b = cast %a : f64 -> i32",
        [("type mismatch: %a has type f32, the instruction says f64", "2.13-14")]),
    "load-operand": (
        "%A: memref<f32x16x8>",
        "%x = load %A[0, 0] : memref<f32x8x8>",
        [("type mismatch: %A has type memref<f32x16x8>, the instruction says "
          "memref<f32x8x8>", "2.13-14")]),
    "load-group-operand": (
        "%A: group<memref<f32x8>>",
        "%i = group_id\n%x = load %A[%i] : group<memref<f32x8>, offset: ?>",
        [("type mismatch: %A has type group<memref<f32x8>>, the instruction "
          "says group<memref<f32x8>, offset: ?>", "3.13-14")]),
    "store-value": (
        "%A: memref<f32x8>, %v: f64",
        "store %v, %A[0] : memref<f32x8>",
        [("the stored value must have type f32, %v has type f64", "2.9-10")]),
    "store-operand": (
        "%A: memref<f32x8>, %v: f32",
        "store %v, %A[0] : memref<f64x8>",
        [("the stored value must have type f64, %v has type f32", "2.9-10"),
         ("type mismatch: %A has type memref<f32x8>, the instruction says "
          "memref<f64x8>", "2.13-14")]),
    "subview-operand": (
        "%A: memref<f32x8>",
        "%B = subview %A[0:4] : memref<f32x?>",
        [("type mismatch: %A has type memref<f32x8>, the instruction says "
          "memref<f32x?>", "2.16-17")]),
    "expand-operand": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->2x4] : memref<f32x8,strided<2>>",
        [("type mismatch: %A has type memref<f32x8>, the instruction says "
          "memref<f32x8,strided<2>>", "2.15-16")]),
    "fuse-operand": (
        "%A: memref<f32x8x4>",
        "%B = fuse %A[0,1] : memref<f32x8x?>",
        [("type mismatch: %A has type memref<f32x8x4>, the instruction says "
          "memref<f32x8x?>", "2.13-14")]),
    "size-operand": (
        "%A: memref<f32x8x4>",
        "%n = size %A[0] : memref<f32x8>",
        [("type mismatch: %A has type memref<f32x8x4>, the instruction says "
          "memref<f32x8>", "2.13-14")]),
    "yield-operand": (
        "%c: i1, %a: i32",
        "%x = if %c -> (i64) {\n  yield %a : i64\n} else {\n  yield 0 : i64\n}",
        [("type mismatch: %a has type i32, the instruction says i64", "3.11-12")]),
    "scalar-for-memref": (
        "%a: f32",
        "%x = load %a[] : memref<f32>",
        [("type mismatch: %a has type f32, the instruction says memref<f32>", "2.13-14")]),
    "gemm-operands": (
        "%A: memref<f32x4x4>, %B: memref<f64x4x4>, %a: f64, %b: f32",
        "gemm.n.n %a, %A, %A, %b, %B : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
        "memref<f32x4x4>",
        [("type mismatch: %a has type f64, the instruction says f32", "2.12-13"),
         ("type mismatch: %B has type memref<f64x4x4>, the instruction says "
          "memref<f32x4x4>", "2.28-29")]),
    "axpby-operands": (
        "%A: memref<f32x4>, %B: memref<f32x5>",
        "axpby.n 1.0, %A, 0.0, %B : f32, memref<f32x4>, f32, memref<f32x4>",
        [("type mismatch: %B has type memref<f32x5>, the instruction says "
          "memref<f32x4>", "2.25-26")]),
    "lifetime-stop-not-alloca": (
        "%A: memref<f32x4>",
        "lifetime_stop %A",
        [("lifetime_stop needs the result of an alloca; %A is not one", "2.17-18")]),
    "int-constant-too-large": (
        "",
        "%a = arith.add 300, 1 : i8",
        [("constant 300 does not fit type i8 (range -128..127)", "2.18-20")]),
    "int-constant-255-i8": (
        "",
        "%a = arith.add 255, 1 : i8",
        [("constant 255 does not fit type i8 (range -128..127)", "2.18-20")]),
    "negative-unsigned": (
        "",
        "%a = arith.add -1, 1 : u8",
        [("negative constant -1 for unsigned type u8", "2.18-19")]),
    "bool-constant-2": (
        "",
        "%a = arith.and 2, true : i1",
        [("constant 2 does not fit type i1 (range 0..1)", "2.18-18")]),
    "float-constant-integer-type": (
        "",
        "%a = arith.add 1.5, 1 : i32",
        [("float constant 1.5 cannot have integer type i32", "2.18-20")]),
    "float-constant-overflows-f32": (
        "",
        "%a = arith.add 1e300, 1.0 : f32",
        [("constant 1e+300 is out of range for f32", "2.18-22")]),
    "collective-alpha-non-integral": (
        "%A: memref<i32x4>",
        "axpby.n 1.5, %A, 0.0, %A : i32, memref<i32x4>, i32, memref<i32x4>",
        [("float constant 1.5 cannot have integer type i32", "2.11-13")]),
    "collective-alpha-out-of-range": (
        "%A: memref<i8x4>",
        "axpby.n 1000, %A, 0, %A : i8, memref<i8x4>, i8, memref<i8x4>",
        [("constant 1000 does not fit type i8 (range -128..127)", "2.11-14")]),
    "store-constant": (
        "%A: memref<i16x4>",
        "store 70000, %A[0] : memref<i16x4>",
        [("the stored value: constant 70000 does not fit type i16 (range "
          "-32768..32767)", "2.9-13")]),
    "yield-constant": (
        "%c: i1",
        "%x = if %c -> (u8) {\n  yield -1 : u8\n} else {\n  yield 0 : u8\n}",
        [("negative constant -1 for unsigned type u8", "3.11-12")]),
    "load-index-type": (
        "%A: memref<f32x4>, %i: i32",
        "%x = load %A[%i] : memref<f32x4>",
        [("a load index must have type index, %i has type i32", "2.16-17")]),
    "store-index-type": (
        "%A: memref<f32x4>, %i: i64",
        "store 1.0, %A[%i] : memref<f32x4>",
        [("a store index must have type index, %i has type i64", "2.17-18")]),
    "subview-offset-type": (
        "%A: memref<f32x4>, %i: i32",
        "%B = subview %A[%i:2] : memref<f32x4>",
        [("a subview offset must have type index, %i has type i32", "2.19-20")]),
    "subview-size-type": (
        "%A: memref<f32x4>, %i: i32",
        "%B = subview %A[0:%i] : memref<f32x4>",
        [("a subview size must have type index, %i has type i32", "2.21-22")]),
    "expand-entry-type": (
        "%A: memref<f32x8>, %n: i32",
        "%B = expand %A[0->%n x ?] : memref<f32x8>",
        [("an expand shape entry must have type index, %n has type i32", "2.21-22")]),
    "load-index-count": (
        "%A: memref<f32x4x4>",
        "%x = load %A[0] : memref<f32x4x4>",
        [("load from a memref of order 2 takes 2 indices, got 1", "2.3-35")]),
    "load-group-index-count": (
        "%A: group<memref<f32x4>>",
        "%x = load %A[0, 1] : group<memref<f32x4>>",
        [("load from a group takes 1 index, got 2", "2.3-43")]),
    "store-index-count": (
        "%A: memref<f32x4x4>",
        "store 1.0, %A[0, 1, 2] : memref<f32x4x4>",
        [("store to a memref of order 2 takes 2 indices, got 3", "2.3-42")]),
    "subview-index-count": (
        "%A: memref<f32x4x4>",
        "%B = subview %A[0] : memref<f32x4x4>",
        [("subview needs 2 indices or slices for a memref of order 2, got 1", "2.3-38")]),
    "subview-negative-offset": (
        "%A: memref<f32x4>",
        "%B = subview %A[-1:2] : memref<f32x4>",
        [("subview offset must be non-negative", "2.19-22")]),
    "subview-zero-size": (
        "%A: memref<f32x4>",
        "%B = subview %A[0:0] : memref<f32x4>",
        [("subview size must be positive", "2.19-21")]),
    "subview-empty-rest": (
        "%A: memref<f32x4>",
        "%B = subview %A[4:?] : memref<f32x4>",
        [("subview offset 4 leaves no elements of a mode of size 4", "2.19-21")]),
    "expand-mode-range": (
        "%A: memref<f32x8>",
        "%B = expand %A[1->2x4] : memref<f32x8>",
        [("expand mode 1 out of range for a memref of order 1", "2.3-40")]),
    "expand-two-dynamic": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->?x?] : memref<f32x8>",
        [("at most one entry of the expand shape may be '?'", "2.3-40")]),
    "expand-product": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->2x2] : memref<f32x8>",
        [("expand shape product 4 differs from the mode size 8", "2.3-40")]),
    "expand-not-dividing": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->3x?] : memref<f32x8>",
        [("expand shape 3 does not evenly divide the mode size 8", "2.3-40")]),
    "expand-non-positive": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->0x?] : memref<f32x8>",
        [("expand shape entries must be positive", "2.3-40")]),
    "fuse-range": (
        "%A: memref<f32x8x4>",
        "%B = fuse %A[1,1] : memref<f32x8x4>",
        [("fuse needs 0 <= from < to < order (2), got [1,1]", "2.3-37")]),
    "fuse-illegal": (
        "%A: memref<f32x8x16,strided<1,10>>",
        "%B = fuse %A[0,1] : memref<f32x8x16,strided<1,10>>",
        [("modes 0 and 1 cannot be fused: stride 1 x size 8 != stride 10", "2.3-52")]),
    "size-mode-range": (
        "%A: memref<f32x8x4>",
        "%n = size %A[2] : memref<f32x8x4>",
        [("size mode 2 out of range for a memref of order 2", "2.3-35")]),
    "alloca-dynamic": (
        "",
        "%t = alloca -> memref<f32x?>",
        [("alloca needs a static shape and stride", "2.3-30")]),
    "no-cascade-after-rule": (
        "%A: memref<f32x8>",
        "%B = expand %A[0->3x3] : memref<f32x8>\n%n = size %B[0] : memref<f32x9>\n"
        "%m = size %B[0] : memref<f64x1>",
        [("expand shape product 9 differs from the mode size 8", "2.3-40")]),
    "shl-float": (
        "%a: f32",
        "%b = arith.shl %a, %a : f32",
        [("'arith.shl' needs an integer type, got f32", "2.3-29")]),
    "not-float": (
        "%a: f64",
        "%b = arith.not %a : f64",
        [("'arith.not' needs an integer type, got f64", "2.3-25")]),
    "and-float": (
        "%a: f32",
        "%b = arith.and %a, %a : f32",
        [("'arith.and' needs an integer type, got f32", "2.3-29")]),
    "add-bool": (
        "%a: i1",
        "%b = arith.add %a, %a : i1",
        [("'arith.add' is not defined on i1 (no arithmetic on booleans; and, "
          "or, xor and not are)", "2.3-28")]),
    "neg-bool": (
        "%a: i1",
        "%b = arith.neg %a : i1",
        [("'arith.neg' is not defined on i1 (no arithmetic on booleans; and, "
          "or, xor and not are)", "2.3-24")]),
    "shr-bool": (
        "%a: i1",
        "%b = arith.shr %a, %a : i1",
        [("'arith.shr' is not defined on i1 (no arithmetic on booleans; and, "
          "or, xor and not are)", "2.3-28")]),
    "cmp-order-bool": (
        "%a: i1",
        "%b = cmp.lt %a, false : i1",
        [("'cmp.lt' is not defined on i1 (booleans have no order; use cmp.eq "
          "or cmp.ne)", "2.3-28")]),
    "gemm-in-foreach": (
        "%A: memref<f32x4x4>",
        "foreach %i = 0, 4 {\n"
        "  gemm.n.n 1.0, %A, %A, 0.0, %A : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
        "memref<f32x4x4>\n}",
        [("collective instruction 'gemm' is not allowed inside a foreach "
          "(SPMD region)", "3.5-95")]),
    "alloca-in-if-in-foreach": (
        "%c: i1",
        "foreach %i = 0, 4 {\n  if %c {\n    %t = alloca -> memref<f32x4>\n  }\n}",
        [("collective instruction 'alloca' is not allowed inside a foreach "
          "(SPMD region)", "4.7-34")]),
    "foreach-in-foreach": (
        "",
        "foreach %i = 0, 4 {\n  foreach %j = 0, 4 {\n  }\n}",
        [("collective instruction 'foreach' is not allowed inside a foreach "
          "(SPMD region)", "3.5-4.5")]),
    "barrier-in-foreach": (
        "",
        "foreach %i = 0, 4 {\n  for %j = 0, 2 {\n    barrier\n  }\n}",
        [("barrier is not allowed inside a foreach (SPMD region)", "4.7-13")]),
    "sum-in-foreach": (
        "%A: memref<f32x4>, %s: memref<f32>",
        "foreach %i = 0, 4 {\n  sum.n 1.0, %A, 0.0, %s : f32, memref<f32x4>, f32, memref<f32>\n}",
        [("collective instruction 'sum' is not allowed inside a foreach "
          "(SPMD region)", "3.5-65")]),
    "if-condition-type": (
        "%c: i32",
        "if %c {\n}",
        [("the if condition must have type i1, %c has type i32", "2.6-7")]),
    "if-condition-constant": (
        "",
        "if 2 {\n}",
        [("the if condition: constant 2 does not fit type i1 (range 0..1)", "2.6-6")]),
    "if-missing-else": (
        "%c: i1",
        "%x = if %c -> (i32) {\n  yield 1 : i32\n}",
        [("an if with results needs an else region", "2.3-4.3")]),
    "if-then-without-yield": (
        "%c: i1",
        "%x = if %c -> (i32) {\n  %y = group_id\n} else {\n  yield 1 : i32\n}",
        [("the then region of an if with results must end with a yield", "3.5-17")]),
    "if-else-empty": (
        "%c: i1",
        "%x = if %c -> (i32) {\n  yield 1 : i32\n} else {\n}",
        [("the else region of an if with results must end with a yield", "4.10-5.3")]),
    "yield-count": (
        "%c: i1",
        "%x, %y = if %c -> (i32, i32) {\n  yield 1 : i32\n} else {\n  yield 1, 2 : i32, i32\n}",
        [("yield returns 1 value, the if expects 2", "3.5-17")]),
    "yield-types": (
        "%c: i1",
        "%x = if %c -> (i32) {\n  yield 1 : i64\n} else {\n  yield 2 : i32\n}",
        [("yield types (i64) differ from the if's result types (i32)", "3.5-17")]),
    "yield-value-type-count": (
        "%c: i1",
        "%x = if %c -> (i32) {\n  yield 1, 2 : i32\n} else {\n  yield 2 : i32\n}",
        [("yield has 2 values but 1 type", "3.5-20")]),
    "yield-not-last": (
        "%c: i1",
        "if %c {\n  yield :\n  barrier\n}",
        [("yield is only allowed as the last instruction of an if region", "3.5-11")]),
    "yield-in-for": (
        "",
        "for %i = 0, 4 {\n  yield :\n}",
        [("yield is only allowed as the last instruction of an if region", "3.5-11")]),
    "yield-at-function-level": (
        "",
        "yield :",
        [("yield is only allowed as the last instruction of an if region", "2.3-9")]),
    "yield-values-if-without-results": (
        "%c: i1",
        "if %c {\n  yield 1 : i32\n}",
        [("yield returns 1 value, the if expects 0", "3.5-17")]),
    "if-names-vs-types": (
        "%c: i1",
        "%x, %y = if %c -> (i32) {\n  yield 1 : i32\n} else {\n  yield 2 : i32\n}\n"
        "%z = arith.add %y, 1 : i32",
        [("if returns 1 value but 2 names assigned", "2.3-6.3")]),
    "for-bool-type": (
        "",
        "for %i = 0, 1 : i1 {\n}",
        [("the loop variable needs an integer type other than i1, got i1", "2.3-3.3")]),
    "for-bound-type": (
        "%n: i32",
        "for %i = 0, %n {\n}",
        [("a loop bound or step must have type index, %n has type i32", "2.15-16")]),
    "for-step-zero": (
        "",
        "for %i = 0, 4, 0 {\n}",
        [("the for step must be positive, got 0", "2.18-18")]),
    "for-step-negative": (
        "",
        "for %i = 0, 4, -1 : i32 {\n}",
        [("the for step must be positive, got -1", "2.18-19")]),
    "for-step-type": (
        "%s: i64",
        "for %i = 0, 4, %s : i32 {\n}",
        [("a loop bound or step must have type i32, %s has type i64", "2.18-19")]),
    "foreach-bound-type": (
        "%n: index",
        "foreach %i = 0, %n : i32 {\n}",
        [("a loop bound or step must have type i32, %n has type index", "2.19-20")]),
    "alloca-bool": (
        "",
        "%t = alloca -> memref<i1x4>",
        [("memref element type i1 is not allowed (i1 has no storage type): "
          "memref<i1x4>", "2.3-29")]),
    "argument-bool-memref": (
        "%A: memref<i1x4>",
        "barrier",
        [("memref element type i1 is not allowed (i1 has no storage type): "
          "memref<i1x4>", "1.9-24")]),
    "argument-bool-group": (
        "%A: group<memref<bool>>",
        "barrier",
        [("memref element type i1 is not allowed (i1 has no storage type): "
          "group<memref<i1>>", "1.9-31")]),
    "store-bool-memref": (
        "%A: memref<i8x4>",
        "store true, %A[0] : memref<i1x4>",
        [("memref element type i1 is not allowed (i1 has no storage type): "
          "memref<i1x4>", "2.3-34"),
         ("type mismatch: %A has type memref<i8x4>, the instruction says "
          "memref<i1x4>", "2.15-16")]),
    "argument-void": (
        "%v: void",
        "barrier",
        [("argument %v cannot have type void", "1.9-16")]),
    "layout-restriction": (
        "%A: memref<f32x8x8,strided<1,4>>",
        "barrier",
        [("argument %A: layout restriction violated: stride 1 x size 8 of "
          "mode 0 exceeds the stride 4 of mode 1" + LAYOUT_HINT % "memref<f32x8x8>",
          "1.9-40")]),
    "layout-first-stride": (
        "%A: memref<f32x8,strided<0>>",
        "barrier",
        [("argument %A: the stride of mode 0 must be at least 1, got 0"
          + LAYOUT_HINT % "memref<f32x8>", "1.9-36")]),
    "layout-spec-fuse-erratum": (
        "%0: memref<f32x32x16x?x4x42,strided<1,16,?,?,?>>",
        "barrier",
        [("argument %0: layout restriction violated: stride 1 x size 32 of "
          "mode 0 exceeds the stride 16 of mode 1"
          + LAYOUT_HINT % "memref<f32x32x16x?x4x42,strided<1,32,?,?,?>>", "1.9-56")]),
    "layout-group": (
        "%A: group<memref<f32x4x4,strided<1,2>>>",
        "barrier",
        [("argument %A: layout restriction violated: stride 1 x size 4 of "
          "mode 0 exceeds the stride 2 of mode 1" + LAYOUT_HINT % "memref<f32x4x4>", "1.9-47")]),
    "layout-alloca": (
        "",
        "%t = alloca -> memref<f32x4x4,strided<2,4>>",
        [("alloca: layout restriction violated: stride 2 x size 4 of mode 0 "
          "exceeds the stride 4 of mode 1"
          + LAYOUT_HINT % "memref<f32x4x4,strided<2,8>>", "2.3-45")]),
    "layout-stride-count-in-instruction": (
        "%a: memref<f32x4x4>",
        "%b = expand %a[1->2x2] : memref<f32x4x4,strided<1>>\n%c = size %b[0] : memref<f32x4>",
        [("strided layout has 1 entry for a memref of order 2", "2.3-53")]),
    "void-argument-used": (
        "%v: void",
        "%x = arith.add %v, %v : i32",
        [("argument %v cannot have type void", "1.9-16")]),
    "negative-size-one-message": (  # the strides derived from it are not a second mistake
        "%a: memref<f32x-1x4>",
        "barrier",
        [("argument %a: mode 0 has negative size -1", "1.9-28")]),
    "negative-size-and-written-stride": (
        "%a: memref<f32x-1x4,strided<1,-2>>",
        "barrier",
        [("argument %a: mode 0 has negative size -1", "1.9-42"),
         ("argument %a: mode 1 has negative stride -2", "1.9-42")]),
    "group-offset-negative": (
        "%A: group<memref<f32x4>, offset: -2>",
        "barrier",
        [("group offset must be non-negative, got -2", "1.9-44")]),
    "gemm-k": (
        "%A: memref<f32x8x16>, %B: memref<f32x8x8>, %C: memref<f32x8x8>",
        "gemm.n.n 1.0, %A, %B, 0.0, %C : f32, memref<f32x8x16>, memref<f32x8x8>, f32, "
        "memref<f32x8x8>",
        [("incompatible tensor shapes: op(A) is 8x16, op(B) is 8x8, C is "
          "8x8: K (16 vs 8) differ", "2.3-94")]),
    "gemm-mn-transposed": (
        "%A: memref<f32x8x4>, %C: memref<f32x8x8>",
        "gemm.t.n 1.0, %A, %A, 0.0, %C : f32, memref<f32x8x4>, memref<f32x8x4>, f32, "
        "memref<f32x8x8>",
        [("incompatible tensor shapes: op(A) is 4x8, op(B) is 8x4, C is 8x8: "
          "M (4 vs 8), N (4 vs 8) differ", "2.3-93")]),
    "gemm-order": (
        "%A: memref<f32x8>, %C: memref<f32x8x8>",
        "gemm.n.n 1.0, %A, %C, 0.0, %C : f32, memref<f32x8>, memref<f32x8x8>, f32, "
        "memref<f32x8x8>",
        [("gemm needs A of order 2, got order 1", "2.17-18")]),
    "gemv-shapes": (
        "%A: memref<f32x4x3>, %b: memref<f32x4>, %c: memref<f32x4>",
        "gemv.n 1.0, %A, %b, 0.0, %c : f32, memref<f32x4x3>, memref<f32x4>, f32, memref<f32x4>",
        [("incompatible tensor shapes: op(A) is 4x3, b is 4, c is 4: K (3 vs "
          "4) differ", "2.3-87")]),
    "gemv-order": (
        "%A: memref<f32x4x3>, %b: memref<f32x3x1>, %c: memref<f32x4>",
        "gemv.n 1.0, %A, %b, 0.0, %c : f32, memref<f32x4x3>, memref<f32x3x1>, f32, memref<f32x4>",
        [("gemv needs b of order 1, got order 2", "2.19-20")]),
    "ger-shapes": (
        "%a: memref<f32x4>, %b: memref<f32x3>, %C: memref<f32x3x4>",
        "ger 1.0, %a, %b, 0.0, %C : f32, memref<f32x4>, memref<f32x3>, f32, memref<f32x3x4>",
        [("incompatible tensor shapes: a is 4, b is 3, C is 3x4: M (4 vs 3), "
          "N (3 vs 4) differ", "2.3-84")]),
    "ger-order": (
        "%a: memref<f32x4x1>, %b: memref<f32x3>, %C: memref<f32x4x3>",
        "ger 1.0, %a, %b, 0.0, %C : f32, memref<f32x4x1>, memref<f32x3>, f32, memref<f32x4x3>",
        [("ger needs a of order 1, got order 2", "2.12-13")]),
    "hadamard-shapes": (
        "%a: memref<f32x4>, %b: memref<f32x5>",
        "hadamard_product 1.0, %a, %a, 0.0, %b : f32, memref<f32x4>, memref<f32x4>, f32, "
        "memref<f32x5>",
        [("incompatible tensor shapes: a is 4, b is 4, c is 5: mode 0 of a "
          "and c (4 vs 5), mode 0 of b and c (4 vs 5) differ", "2.3-95")]),
    "hadamard-orders": (
        "%a: memref<f32x4>, %b: memref<f32x4x1>",
        "hadamard_product 1.0, %a, %a, 0.0, %b : f32, memref<f32x4>, memref<f32x4>, f32, "
        "memref<f32x4x1>",
        [("incompatible tensor shapes: a is 4, b is 4, c is 4x1: orders differ", "2.3-97")]),
    "hadamard-order-3": (
        "%a: memref<f32x4x1x1>",
        "hadamard 1.0, %a, %a, 0.0, %a : f32, memref<f32x4x1x1>, memref<f32x4x1x1>, f32, "
        "memref<f32x4x1x1>",
        [("hadamard_product needs a of order 1 or 2, got order 3", "2.17-18"),
         ("hadamard_product needs b of order 1 or 2, got order 3", "2.21-22"),
         ("hadamard_product needs c of order 1 or 2, got order 3", "2.30-31")]),
    "axpby-shapes": (
        "%A: memref<f32x8x16>, %B: memref<f32x8x8>, %alpha: f32",
        "axpby.n %alpha, %A, 0.0, %B : f32, memref<f32x8x16>, f32, memref<f32x8x8>",
        [("incompatible tensor shapes: op(A) is 8x16, B is 8x8: mode 1 (16 "
          "vs 8) differ", "2.3-75")]),
    "axpby-transposed": (
        "%A: memref<f32x8x16>",
        "axpby.t 1.0, %A, 0.0, %A : f32, memref<f32x8x16>, f32, memref<f32x8x16>",
        [("incompatible tensor shapes: op(A) is 16x8, B is 8x16: mode 0 (16 "
          "vs 8), mode 1 (8 vs 16) differ", "2.3-73")]),
    "axpby-order": (
        "%A: memref<f32x2x2x2>",
        "axpby.n 1.0, %A, 0.0, %A : f32, memref<f32x2x2x2>, f32, memref<f32x2x2x2>",
        [("axpby needs A of order 0, 1 or 2, got order 3", "2.16-17"),
         ("axpby needs B of order 0, 1 or 2, got order 3", "2.25-26")]),
    "axpby-order-mismatch": (
        "%A: memref<f32x4>, %B: memref<f32x4x1>",
        "axpby.n 1.0, %A, 0.0, %B : f32, memref<f32x4>, f32, memref<f32x4x1>",
        [("incompatible tensor shapes: op(A) is 4 and B is 4x1: orders differ", "2.3-69")]),
    "sum-matrix-shape": (
        "%A: memref<f32x4x3>, %b: memref<f32x3>",
        "sum.n 1.0, %A, 0.0, %b : f32, memref<f32x4x3>, f32, memref<f32x3>",
        [("incompatible tensor shapes: op(A) is 4x3, B is 3: mode 0 (4 vs 3) "
          "differ", "2.3-67")]),
    "sum-vector-into-vector": (
        "%a: memref<f32x4>, %b: memref<f32x1>",
        "sum.n 1.0, %a, 0.0, %b : f32, memref<f32x4>, f32, memref<f32x1>",
        [("sum of an order-1 A needs B to be a scalar memref (order 0), got "
          "order 1", "2.23-24")]),
    "sum-matrix-into-scalar": (
        "%A: memref<f32x4x3>, %s: memref<f32>",
        "sum.t 1.0, %A, 0.0, %s : f32, memref<f32x4x3>, f32, memref<f32>",
        [("sum of an order-2 A needs B to be a vector, got order 0", "2.23-24")]),
    "sum-order-0": (
        "%s: memref<f32>",
        "sum.n 1.0, %s, 0.0, %s : f32, memref<f32>, f32, memref<f32>",
        [("sum needs A of order 1 or 2, got order 0", "2.14-15")]),
    "int-output-float-inputs": (
        "%A: memref<f32x4>, %B: memref<i32x4>",
        "axpby.n 1.0, %A, 0.0, %B : f32, memref<f32x4>, i32, memref<i32x4>",
        [("the output element type i32 is an integer type but operands are "
          "floating-point (f32)", "2.3-67")]),
    "int-output-float-alpha": (
        "%A: memref<i32x4>",
        "axpby.n 1.5, %A, 0, %A : f64, memref<i32x4>, i32, memref<i32x4>",
        [("the output element type i32 is an integer type but operands are "
          "floating-point (f64)", "2.3-65")]),
    "alpha-bool": (
        "%A: memref<f32x4>, %t: i1",
        "axpby.n %t, %A, 0.0, %A : i1, memref<f32x4>, f32, memref<f32x4>",
        [("alpha cannot have type i1 (no arithmetic on booleans)", "2.11-12")]),
    "work-group-size-zero": (
        "",
        "barrier",
        " work_group_size(0,4)",
        [("work_group_size entries must be positive, got (0,4)", "1.11-30")]),
    "subgroup-size-zero": (
        "",
        "barrier",
        " subgroup_size(0)",
        [("subgroup_size must be positive, got 0", "1.11-26")]),
    "subgroup-not-dividing": (
        "",
        "barrier",
        " work_group_size(24,2) subgroup_size(16)",
        [("work_group_size first entry 24 is not a multiple of subgroup_size 16", "1.11-31")]),
}


@pytest.mark.parametrize("case", NEGATIVE.values(), ids=NEGATIVE.keys())
def test_rejected(case):
    *source, expected = case
    assert errors(kernel(*source)) == expected


def test_float_loop_type_rejected():
    # The grammar only admits integer loop types; the rule guards IR built by other means.
    program = parse(kernel("", "for %i = 0, 4 {\n}\nforeach %j = 0, 4 {\n}"), "t.tl")
    loop, foreach = program.functions[0].body.instructions
    loop.type = foreach.type = ScalarType.f32
    with pytest.raises(SourceError) as info:
        check(program)
    assert [(d.message, str(d.span)) for d in info.value.diagnostics] == [
        ("the loop variable needs an integer type other than i1, got f32", "2.3-3.3"),
        ("the loop variable needs an integer type other than i1, got f32", "4.3-5.3")]


def test_duplicate_function():
    src = kernel("", "barrier") + kernel("%a: i32", "barrier")
    assert errors(src) == [("function @f is defined twice (first at 1.1)", "4.1-16")]


def test_diagnostic_format():
    src = kernel("%alpha: f32, %A: memref<f32x8x16>, %B: memref<f32x8x8>",
                 "axpby.n %alpha, %A, 0.0, %B : f32, memref<f32x8x16>, f32, memref<f32x8x8>")
    with pytest.raises(SourceError) as info:
        check(parse(src, "kernel.tl", lang="v0.3"))
    assert info.value.exit_status == 2
    assert str(info.value) == (
        "kernel.tl:2.3-75: incompatible tensor shapes: op(A) is 8x16, B is 8x8: mode 1 "
        "(16 vs 8) differ\n"
        "  axpby.n %alpha, %A, 0.0, %B : f32, memref<f32x8x16>, f32, memref<f32x8x8>\n"
        "  " + "~" * 73)


def test_all_independent_errors_reported_in_order():
    src = """\
func @g(%A: memref<f32x8>, %n: i32) work_group_size(0,1) {
  %x = load %A[%n] : memref<f32x8>
  %y = arith.shl %x, %x : f32
  foreach %i = 0, 8 {
    barrier
    %t = alloca -> memref<f32x4>
  }
  %z = arith.add %undefined, %x : f32
  %w = arith.add %z, %y : f32
}
func @g() {
}
"""
    assert errors(src) == [
        ("work_group_size entries must be positive, got (0,1)", "1.37-56"),
        ("a load index must have type index, %n has type i32", "2.16-17"),
        ("'arith.shl' needs an integer type, got f32", "3.3-29"),
        ("barrier is not allowed inside a foreach (SPMD region)", "5.5-11"),
        ("collective instruction 'alloca' is not allowed inside a foreach (SPMD region)",
         "6.5-32"),
        ("%undefined is not defined", "8.18-27"),
        ("function @g is defined twice (first at 1.1)", "11.1-9"),
    ]


def test_deep_nesting_is_checked_without_recursion_limits():
    depth = 500
    src = ("func @f(%c: i1) {\n" + "if %c {\n" * depth + "%x = arith.add %c, %c : i1\n"
           + "}\n" * depth + "}\n")
    assert errors(src) == [("'arith.add' is not defined on i1 (no arithmetic on booleans; "
                            "and, or, xor and not are)", f"{depth + 2}.1-26")]


def test_ir_without_spans():
    # IR built by hand (e.g. by the fuzzer) has no spans; diagnostics still come out.
    from tlinterp.lang import ir

    bad = ir.Arith(ir.Value("y"), "shl", ir.Value("x"), ir.Const(1), ScalarType.f32)
    f = ir.Function("h", (ir.Argument(ir.Value("x"), ScalarType.f32),), ir.Region([bad]))
    with pytest.raises(SourceError) as info:
        check(ir.Program((f,)))
    assert [(d.message, d.span) for d in info.value.diagnostics] == [
        ("'arith.shl' needs an integer type, got f32", None)]


# --- robustness: mutated valid programs end in SourceError or success, nothing else ----------

# Tokens and the blanks between them: mutations touch tokens only, so the text stays close to
# valid and most mutants reach the checker rather than stopping in the parser.
PIECE = re.compile(r"\s+|;[^\n]*|%\w+|@\w+|[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\w+(?:\.\w+)*|->|\S")
SEEDS = [SAMPLE] + [kernel(*c[:-1]) for c in list(NEGATIVE.values())[::5]] + [
    kernel(*c) for c in ACCEPTED.values()]


SCALAR = re.compile(r"(?:i1|i8|i16|i32|i64|index|u8|u16|u32|u64|f32|f64|bool)")


def _kind(token: str) -> str:
    """Tokens of one kind replace each other and usually keep the text parseable: names,
    numbers, scalar types, memref element-and-shape words, dotted opcodes; else the token."""
    if token[0] in "%@":
        return token[0]
    if token[-1].isdigit() and not token[0].isalpha():
        return "number"
    if SCALAR.fullmatch(token):
        return "scalar"
    if SCALAR.match(token):
        return "shape"
    return "dotted" if "." in token else token


@st.composite
def mutated(draw) -> str:
    """Either syntactic damage (delete, duplicate, swap tokens) or same-kind replacements,
    which mostly parse and so exercise the checker on wrong programs."""
    pieces = PIECE.findall(draw(st.sampled_from(SEEDS)))
    syntactic = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        tokens = [i for i, p in enumerate(pieces) if not p.isspace() and p[0] != ";"]
        if not tokens:
            break
        i = draw(st.sampled_from(tokens))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap"])) if syntactic else ""
        if kind == "delete":
            del pieces[i]
        elif kind == "duplicate":
            pieces.insert(i, pieces[i] + " ")
        elif kind == "swap":
            j = draw(st.sampled_from(tokens))
            pieces[i], pieces[j] = pieces[j], pieces[i]
        else:
            same = [pieces[j] for j in tokens if _kind(pieces[j]) == _kind(pieces[i])]
            pieces[i] = draw(st.sampled_from(same))
    return "".join(pieces)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mutated())
def test_mutations_raise_only_source_error(text):
    try:
        program = parse(text, "m.tl")
    except SourceError:
        return
    try:
        check(program)
    except SourceError as e:
        assert e.diagnostics and all(d.message for d in e.diagnostics)
        e.format()  # rendering the diagnostics must not fail either
