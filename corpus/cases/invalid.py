"""Programs that must be rejected (exit 2), at least one per static rule.

Each case names the rule it breaks and the source text the diagnostic must cover (`blame`,
searched from line `line`): the expected range is derived from the source, independently of
the checker. The message is recorded from the checker when the corpus is generated.
"""

from __future__ import annotations

from corpus.cases.model import InvalidCase

F32V = "memref<f32x8>"


def _k(body: str, params: str = f"%a: {F32V}, %b: {F32V}") -> str:
    return f"func @k({params}) {{\n{body}}}\n"


def _c(name, rule, source, blame, line=1, occurrence=1) -> InvalidCase:
    return InvalidCase(name, rule, source, blame, line, occurrence)


def syntax() -> list[InvalidCase]:
    return [
        _c("syntax_missing_brace", "syntax", "func @k(%a: i32) {\n  %x = arith.add %a, 1 : i32\n",
           "", 3),
        _c("syntax_unknown_instruction", "syntax",
           _k("  %x = frobnicate %a : f32\n", "%a: f32"), "frobnicate", 2),
        _c("syntax_bad_type", "syntax", "func @k(%a: f16) {\n}\n", "f16"),
        _c("syntax_missing_colon_type", "syntax",
           _k("  %x = arith.add %a, %a\n", "%a: i32"), "}", 3),
        _c("syntax_integer_constant_range", "integer constants lie in -2^63+1..2^63-1",
           _k("  %x = arith.add %a, 9223372036854775808 : i64\n", "%a: i64"),
           "9223372036854775808", 2),
    ]


def ssa() -> list[InvalidCase]:
    return [
        _c("ssa_undefined", "values are defined before use",
           _k("  %x = arith.add %a, %nope : i32\n", "%a: i32"), "%nope", 2),
        _c("ssa_redefined", "values are defined once",
           _k("  %x = arith.add %a, 1 : i32\n  %x = arith.add %a, 2 : i32\n", "%a: i32"),
           "%x", 3),
        _c("ssa_redefines_argument", "values are defined once",
           _k("  %a = arith.add %a, 1 : i32\n", "%a: i32"), "%a", 2),
        _c("ssa_use_before_definition", "values are defined before use",
           _k("  %x = arith.add %y, 1 : i32\n  %y = arith.add %a, 1 : i32\n", "%a: i32"),
           "%y", 2),
        _c("ssa_out_of_scope_if", "values defined in a region are not visible outside",
           _k("  %c = cmp.lt %a, 1 : i32\n  if %c {\n    %t = arith.add %a, 1 : i32\n  }\n"
              "  %u = arith.add %t, 1 : i32\n", "%a: i32"), "%t", 6),
        _c("ssa_out_of_scope_loop_var", "values defined in a region are not visible outside",
           _k("  for %i = 0, 4 {\n  }\n  %u = arith.add %i, 1 : index\n", ""), "%i", 4),
        _c("ssa_duplicate_argument", "values are defined once",
           "func @k(%a: i32, %a: i32) {\n}\n", "%a", 1, 2),
        _c("duplicate_function", "function names are unique",
           "func @k() {\n}\nfunc @k() {\n}\n", "func @k()", 3),
    ]


def types() -> list[InvalidCase]:
    return [
        _c("type_operand_mismatch", "operand types equal the written types",
           _k("  %x = arith.add %a, %b : i32\n", "%a: i32, %b: i64"), "%b", 2),
        _c("type_load_memref_mismatch", "operand types equal the written types",
           _k("  %x = load %a[0] : memref<f32x4>\n"), "%a", 2),
        _c("type_store_value", "the stored value has the element type",
           _k("  %x = cast 1 : i32 -> f64\n  store %x, %a[0] : memref<f32x8>\n"), "%x", 3),
        _c("type_load_index_not_index", "indices have index type",
           _k("  %i = cast 1 : i32 -> i32\n  %x = load %a[%i] : memref<f32x8>\n"), "%i", 3),
        _c("type_float_constant_for_int", "constants fit their type",
           _k("  %x = arith.add %a, 1.5 : i32\n", "%a: i32"), "1.5", 2),
        _c("type_constant_out_of_range", "constants fit their type",
           _k("  %x = arith.add %a, 300 : i8\n", "%a: i8"), "300", 2),
        _c("type_negative_unsigned_constant", "constants fit their type",
           _k("  %x = arith.add %a, -1 : u32\n", "%a: u32"), "-1", 2),
        _c("type_memref_i1", "memrefs of i1 have no storage type",
           "func @k(%a: memref<i1x4>) {\n}\n", "%a: memref<i1x4>"),
        _c("type_void_argument", "arguments are not void", "func @k(%a: void) {\n}\n",
           "%a: void"),
        _c("type_layout_order", "the strided layout has one entry per mode",
           "func @k(%a: memref<f32x4x4,strided<1>>) {\n}\n", "%a: memref<f32x4x4,strided<1>>"),
        _c("type_layout_overlap", "strides satisfy S_{i-1} s_{i-1} <= S_i",
           "func @k(%a: memref<f32x4x4,strided<1,3>>) {\n}\n",
           "%a: memref<f32x4x4,strided<1,3>>"),
        _c("type_cmp_order_on_i1", "i1 has no order",
           _k("  %c = cmp.lt %a, %a : i1\n", "%a: i1"), "%c = cmp.lt %a, %a : i1", 2),
        _c("type_arith_on_i1", "no arithmetic on i1 except and/or/xor/not",
           _k("  %c = arith.add %a, %a : i1\n", "%a: i1"), "%c = arith.add %a, %a : i1", 2),
    ]


def bitwise() -> list[InvalidCase]:
    out = []
    for op in ("and", "or", "xor", "shl", "shr"):
        out.append(_c(f"bitwise_{op}_on_float", "bitwise operations and shifts need integers",
                      _k(f"  %x = arith.{op} %a, %a : f32\n", "%a: f32"),
                      f"%x = arith.{op} %a, %a : f32", 2))
    out.append(_c("bitwise_not_on_float", "bitwise operations and shifts need integers",
                  _k("  %x = arith.not %a : f64\n", "%a: f64"), "%x = arith.not %a : f64", 2))
    return out


def views() -> list[InvalidCase]:
    m = "memref<f32x8x4>"
    p = f"%a: {m}, %i: index"
    return [
        _c("subview_index_count", "subview takes one index or slice per mode",
           _k(f"  %v = subview %a[0:2] : {m}\n", p), f"%v = subview %a[0:2] : {m}", 2),
        _c("subview_negative_offset", "subview offsets are non-negative",
           _k(f"  %v = subview %a[-1:2, :] : {m}\n", p), "-1:2", 2),
        _c("subview_zero_size", "subview sizes are positive",
           _k(f"  %v = subview %a[1:0, :] : {m}\n", p), "1:0", 2),
        _c("subview_rest_empty", "a '?' size leaves at least one element",
           _k(f"  %v = subview %a[8:?, :] : {m}\n", p), "8:?", 2),
        _c("subview_offset_type", "subview offsets have index type",
           _k(f"  %v = subview %a[%j:2, :] : {m}\n", f"%a: {m}, %j: i32"), "%j", 2),
        _c("expand_mode_range", "expand mode lies within the order",
           _k(f"  %v = expand %a[2->2x2] : {m}\n", p), f"%v = expand %a[2->2x2] : {m}", 2),
        _c("expand_two_dynamic", "at most one '?' in the expand shape",
           _k(f"  %v = expand %a[0->?x?] : {m}\n", p), f"%v = expand %a[0->?x?] : {m}", 2),
        _c("expand_product", "the expand shape's product is the mode size",
           _k(f"  %v = expand %a[0->2x3] : {m}\n", p), f"%v = expand %a[0->2x3] : {m}", 2),
        _c("expand_not_dividing", "the static entries divide the mode size",
           _k(f"  %v = expand %a[0->3x?] : {m}\n", p), f"%v = expand %a[0->3x?] : {m}", 2),
        _c("expand_value_type", "expand shape values have index type",
           _k(f"  %v = expand %a[0->%j x ?] : {m}\n", f"%a: {m}, %j: i64"), "%j", 2),
        _c("fuse_incompatible_strides", "fused modes satisfy S_k s_k = S_{k+1}",
           _k("  %v = fuse %a[0,1] : memref<f32x8x16,strided<1,10>>\n",
              "%a: memref<f32x8x16,strided<1,10>>"),
           "%v = fuse %a[0,1] : memref<f32x8x16,strided<1,10>>", 2),
        _c("fuse_mode_range", "fuse needs 0 <= from < to < order",
           _k(f"  %v = fuse %a[1,2] : {m}\n", p), f"%v = fuse %a[1,2] : {m}", 2),
        _c("load_index_count", "load takes one index per mode",
           _k(f"  %x = load %a[%i] : {m}\n", p), f"%x = load %a[%i] : {m}", 2),
        _c("load_group_index_count", "load from a group takes one index",
           _k("  %x = load %g[%i, %i] : group<memref<f32x4>>\n",
              "%g: group<memref<f32x4>>, %i: index"),
           "%x = load %g[%i, %i] : group<memref<f32x4>>", 2),
        _c("store_index_count", "store takes one index per mode",
           _k(f"  %x = load %a[%i, 0] : {m}\n  store %x, %a[%i] : {m}\n", p),
           f"store %x, %a[%i] : {m}", 3),
        _c("size_mode_range", "size mode lies within the order",
           _k(f"  %n = size %a[2] : {m}\n", p), f"%n = size %a[2] : {m}", 2),
        _c("group_negative_offset", "group offsets are non-negative",
           "func @k(%g: group<memref<f32x4>, offset: -2>) {\n}\n",
           "%g: group<memref<f32x4>, offset: -2>"),
    ]


def collectives() -> list[InvalidCase]:
    m44 = "memref<f32x4x4>"
    out = [
        _c("alloca_dynamic", "alloca shapes are static",
           _k("  %t = alloca -> memref<f32x?x4>\n", ""), "%t = alloca -> memref<f32x?x4>", 2),
        _c("lifetime_stop_not_alloca", "lifetime_stop takes an alloca's result",
           _k("  lifetime_stop %a\n", f"%a: {m44}"), "%a", 2),
        _c("barrier_in_foreach", "barrier is not allowed in a foreach",
           _k("  foreach %i = 0, 4 {\n    barrier\n  }\n", ""), "barrier", 3),
    ]
    inside = {
        "alloca": "%t = alloca -> memref<f32x4>",
        "axpby": f"axpby.n 1.0, %a, 0.0, %b : f32, {m44}, f32, {m44}",
        "gemm": f"gemm.n.n 1.0, %a, %a, 0.0, %b : f32, {m44}, {m44}, f32, {m44}",
        "gemv": "gemv.n 1.0, %a, %v, 0.0, %v : f32, memref<f32x4x4>, memref<f32x4>, f32, "
                "memref<f32x4>",
        "ger": f"ger 1.0, %v, %v, 0.0, %b : f32, memref<f32x4>, memref<f32x4>, f32, {m44}",
        "hadamard": "hadamard_product 1.0, %v, %v, 0.0, %v : f32, memref<f32x4>, "
                    "memref<f32x4>, f32, memref<f32x4>",
        "sum": "sum.n 1.0, %a, 0.0, %v : f32, memref<f32x4x4>, f32, memref<f32x4>",
        "foreach": "foreach %j = 0, 2 {\n    }",
    }
    params = f"%a: {m44}, %b: {m44}, %v: memref<f32x4>"
    for name, text in inside.items():
        src = _k(f"  foreach %i = 0, 4 {{\n    {text}\n  }}\n", params)
        out.append(_c(f"collective_{name}_in_foreach", "collectives are not allowed in a "
                      "foreach", src, text, 3))
    shapes = [
        ("gemm_shape_k", f"gemm.n.n 1.0, %a, %c, 0.0, %b : f32, {m44}, memref<f32x3x4>, f32, "
                         f"{m44}"),
        ("gemm_shape_c", f"gemm.n.t 1.0, %a, %c, 0.0, %b : f32, {m44}, memref<f32x3x4>, f32, "
                         f"{m44}"),
        ("gemm_order", f"gemm.n.n 1.0, %a, %v, 0.0, %b : f32, {m44}, memref<f32x4>, f32, {m44}"),
        ("axpby_shape", f"axpby.t 1.0, %c, 0.0, %b : f32, memref<f32x3x4>, f32, {m44}"),
        ("axpby_order_mismatch", f"axpby.n 1.0, %v, 0.0, %b : f32, memref<f32x4>, f32, {m44}"),
        ("gemv_shape", "gemv.t 1.0, %c, %v, 0.0, %v : f32, memref<f32x3x4>, memref<f32x4>, "
                       "f32, memref<f32x4>"),
        ("ger_order", f"ger 1.0, %a, %v, 0.0, %b : f32, {m44}, memref<f32x4>, f32, {m44}"),
        ("ger_shape", "ger 1.0, %v, %v, 0.0, %c : f32, memref<f32x4>, memref<f32x4>, f32, "
                      "memref<f32x3x4>"),
        ("hadamard_shape", "hadamard_product 1.0, %v, %w, 0.0, %v : f32, memref<f32x4>, "
                           "memref<f32x3>, f32, memref<f32x4>"),
        ("sum_vector_needs_scalar", "sum.n 1.0, %v, 0.0, %w : f32, memref<f32x4>, f32, "
                                    "memref<f32x3>"),
        ("sum_shape", "sum.n 1.0, %c, 0.0, %v : f32, memref<f32x3x4>, f32, memref<f32x4>"),
        ("collective_int_output_float_inputs",
         "axpby.n 1.0, %a, 0.0, %i : f32, memref<f32x4x4>, f32, memref<i32x4x4>"),
    ]
    params = (f"%a: {m44}, %b: {m44}, %c: memref<f32x3x4>, %v: memref<f32x4>, "
              f"%w: memref<f32x3>, %i: memref<i32x4x4>")
    for name, text in shapes:
        blame = {"sum_vector_needs_scalar": "%w", "gemm_order": "%v", "ger_order": "%a"}.get(
            name, text)
        rule = "an integer output takes no float result" \
            if name == "collective_int_output_float_inputs" else "collective operand shapes agree"
        out.append(_c(name, rule, _k(f"  {text}\n", params), blame, 2))
    return out


def control() -> list[InvalidCase]:
    return [
        _c("if_condition_not_i1", "the if condition is i1",
           _k("  if %a {\n  }\n", "%a: i32"), "%a", 2),
        _c("if_results_without_else", "an if with results has an else",
           _k("  %x = if %c -> (i32) {\n    yield 1 : i32\n  }\n", "%c: i1"),
           "%x = if %c -> (i32) {\n    yield 1 : i32\n  }", 2),
        _c("if_yield_count", "yields match the if's results",
           _k("  %x = if %c -> (i32) {\n    yield 1, 2 : i32, i32\n  } else {\n"
              "    yield 3 : i32\n  }\n", "%c: i1"), "yield 1, 2 : i32, i32", 3),
        _c("if_yield_type", "yields match the if's results",
           _k("  %x = if %c -> (i32) {\n    yield 1 : i32\n  } else {\n"
              "    yield 3 : i64\n  }\n", "%c: i1"), "yield 3 : i64", 5),
        _c("if_missing_yield", "an if with results ends its regions with yield",
           _k("  %x = if %c -> (i32) {\n    yield 1 : i32\n  } else {\n  }\n", "%c: i1"),
           "{\n  }", 4),
        _c("yield_outside_if", "yield belongs to an if",
           _k("  yield 1 : i32\n", ""), "yield 1 : i32", 2),
        _c("yield_not_last", "yield is the last instruction of its region",
           _k("  %x = if %c -> (i32) {\n    yield 1 : i32\n    %y = arith.add 1, 2 : i32\n"
              "  } else {\n    yield 3 : i32\n  }\n", "%c: i1"), "yield 1 : i32", 3),
        _c("if_result_count", "an if assigns one name per result",
           _k("  %x, %y = if %c -> (i32) {\n    yield 1 : i32\n  } else {\n"
              "    yield 3 : i32\n  }\n", "%c: i1"),
           "%x, %y = if %c -> (i32) {\n    yield 1 : i32\n  } else {\n    yield 3 : i32\n  }", 2),
        _c("for_bound_type", "loop bounds have the loop's type",
           _k("  for %i = 0, %n {\n  }\n", "%n: i32"), "%n", 2),
        _c("for_float_variable", "loop variables are integers",
           _k("  for %i = 0, 4 : f32 {\n  }\n", ""), "f32", 2),
        _c("for_step_not_positive", "the for step is positive",
           _k("  for %i = 0, 4, 0 {\n  }\n", ""), "0", 2, 2),
        _c("foreach_i1_variable", "loop variables are integers",
           _k("  foreach %i = 0, 1 : i1 {\n  }\n", ""), "foreach %i = 0, 1 : i1 {\n  }", 2),
        _c("work_group_size_subgroup", "the work-group size is a multiple of the subgroup size",
           "func @k() work_group_size(12, 2) subgroup_size(8) {\n}\n", "work_group_size(12, 2)"),
    ]


# Rules the reference enforces although the v0.3 text does not state them (docs/semantics.md,
# "Restrictions of the reference"): an implementation that accepts these programs still
# conforms, and tlconform reports the acceptance as informational. Found by running tinytc
# v0.3.1 over the corpus (corpus/findings/tinytc-0.3.1/README.md, "Not bugs").
RESTRICTIONS = {
    "type_memref_i1": "i1 is a scalar type, but the language gives it no storage size",
    "type_arith_on_i1": "the spec allows every arithmetic on every scalar type; i1 arithmetic "
                        "other than and/or/xor/not has no stated meaning",
    "type_cmp_order_on_i1": "the spec allows every comparison on every scalar type; an order "
                            "on i1 is not stated",
    "foreach_i1_variable": "i1 is an integer type, but a loop over i1 has no stated meaning",
    "for_step_not_positive": "the spec states no sign rule for the step; a step of 0 or less "
                             "never reaches the upper bound",
    "group_negative_offset": "the spec allows any integer constant as a group offset; a "
                             "negative one points before the member",
    "type_constant_out_of_range": "the spec bounds integer constants only by +-(2^63 - 1), not "
                                  "by the instruction's type",
    "collective_int_output_float_inputs": "the spec relates no element types of a collective; "
                                          "a float result has no stated conversion to an "
                                          "integer output",
}


def cases() -> list[InvalidCase]:
    out = [*syntax(), *ssa(), *types(), *bitwise(), *views(), *collectives(), *control()]
    for c in out:
        c.restriction = RESTRICTIONS.get(c.name, "")
    unknown = set(RESTRICTIONS) - {c.name for c in out}
    if unknown:
        raise ValueError(f"RESTRICTIONS names no case: {sorted(unknown)}")
    return out
