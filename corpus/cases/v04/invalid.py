"""Invalid v0.4 programs (lang="v0.4"), at least one per static rule of the v0.4 front end
(preprocessor, parser, tlinterp/checker/v04.py): written from the v0.4 reference. Each source
starts with a comment saying the rule; `blame` is the text the first diagnostic must cover
(its `occurrence`-th match from line `line`), `more` the texts of further independent errors
the reference also reports, in order (tests/test_corpus_v04.py holds it to them)."""

from __future__ import annotations

from corpus.cases.model import InvalidCase

_MUL_ADD = "%c = cooperative_matrix_mul_add %a, %b, %z : coopmatrix<f32 x 8 x 16, matrix_acc>"


def _c(name: str, rule: str, source: str, blame: str, line: int = 1, occurrence: int = 1,
       more: tuple = ()) -> InvalidCase:
    return InvalidCase(f"v04/{name}", rule, source, blame, line, occurrence, lang="v0.4",
                       more=more)


def converted() -> list[InvalidCase]:
    """The front end's test programs (once corpus/v04/invalid)."""
    return [
    _c('align_attribute', 'the parameter attribute is alignment, not align',
       """; the parameter attribute is alignment, not align
func @align_attribute(%A: memref<f32 x 8> {align=64}) {
}
""",
       'align', 2, 2),
    _c('alloca_global', 'alloca makes local memory: its type says local',
       """; alloca makes local memory: its type says local
func @alloca_global() {
    %T = alloca : memref<f32 x 8>
}
""",
       '%T = alloca : memref<f32 x 8>', 3, 1),
    _c('atomic_beta', '.atomic needs beta to be the constant 0 or 1',
       """; .atomic needs beta to be the constant 0 or 1
func @atomic_beta(%A: memref<f32 x 8 x 8>, %C: memref<f32 x 8 x 8>, %beta: f32) {
    %one = constant 1.0 : f32
    gemm.atomic %one, %A, %A, %beta, %C
}
""",
       '%beta', 4, 1),
    _c('barrier_modifier_order', 'the fences are .global then .local',
       """; the fences are .global then .local
func @barrier_modifier_order() {
    parallel {
        barrier.local.global
    }
}
""",
       '.global', 4, 1),
    _c('calc_bad_operator', '!calc takes integers, definitions and + - * / % ^ min max',
       """; !calc takes integers, definitions and + - * / % ^ min max
$a = !calc(6 4 &)
""",
       '&', 2, 1),
    _c('cast_to_bool', 'bool is not a number: no casts to it',
       """; bool is not a number: no casts to it
func @cast_to_bool(%a: i32) {
    %b = cast %a : bool
}
""",
       '%b = cast %a : bool', 3, 1),
    _c('cmp_prefix', "v0.4 has no cmp. prefix (the reference's own example writes cmp.lt)",
       """; v0.4 has no cmp. prefix (the reference's own example writes cmp.lt)
func @cmp_prefix(%a: i32, %b: i32) {
    %c = cmp.lt %a, %b : bool
}
""",
       'cmp.lt', 3, 1),
    _c('collective_in_spmd', 'a collective instruction inside an SPMD region',
       """; a collective instruction inside an SPMD region
func @collective_in_spmd(%A: memref<f32 x 8 x 8>, %B: memref<f32 x 8 x 8>) {
    %one = constant 1.0 : f32
    %zero = constant 0.0 : f32
    parallel {
        gemm %one, %A, %A, %zero, %B
    }
}
""",
       'gemm %one, %A, %A, %zero, %B', 6, 1),
    _c('complex_to_real_cast', 'complex values do not cast to real types',
       """; complex values do not cast to real types
func @complex_to_real_cast(%z: c32) {
    %r = cast %z : f32
}
""",
       '%r = cast %z : f32', 3, 1),
    _c('coopmatrix_parameter', 'parameters must not have coopmatrix type',
       """; parameters must not have coopmatrix type
func @coopmatrix_parameter(%m: coopmatrix<f32 x 16 x 16, matrix_acc>) {
}
""",
       '%m: coopmatrix<f32 x 16 x 16, matrix_acc>', 2, 1),
    _c('coopmatrix_shape', 'mul_add shapes must agree: (M x K) (K x N) (M x N)',
       """; mul_add shapes must agree: (M x K) (K x N) (M x N)
func @coopmatrix_shape(%A: memref<f16 x 32 x 32>) attributes{subgroup_size=16} {
    parallel {
        %c0 = constant 0 : index
        %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f16 x 8 x 16, matrix_a>
        %b = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f16 x 8 x 16, matrix_b>
        %z = constant 0.0 : coopmatrix<f32 x 8 x 16, matrix_acc>
        %c = cooperative_matrix_mul_add %a, %b, %z : coopmatrix<f32 x 8 x 16, matrix_acc>
    }
}
""",
       _MUL_ADD, 8, 1, more=((_MUL_ADD, 8, 1),)),
    _c('def_complex_part',
       'tinytc v0.4.0 takes only floating literals in a complex constant, no definitions',
       """; tinytc v0.4.0 takes only floating literals in a complex constant, no definitions
$re = 1.0
func @def_complex_part() {
    %z = constant [$re, 2.0] : c32
}
""",
       '$re', 4, 1),
    _c('def_kind', 'a definition used where its kind does not fit: an integer where a type belongs',
       """; a definition used where its kind does not fit: an integer where a type belongs
$n = 16
func @def_kind(%A: memref<$n x 4>) {
}
""",
       '$n', 3, 1),
    _c('def_redefined', 'a preprocessor name is defined once in a scope and the scopes inside it',
       """; a preprocessor name is defined once in a scope and the scopes inside it
$n = 4
func @def_redefined() {
    $n = 8
}
""",
       '$n', 4, 1),
    _c('def_undefined', 'a preprocessor name must be defined before its use',
       """; a preprocessor name must be defined before its use
func @def_undefined(%A: memref<f32 x $n>) {
}
$n = 4
""",
       '$n', 2, 1),
    _c('dynamic_slice', "slices are offset:size; v0.3's :? is gone",
       """; slices are offset:size; v0.3's :? is gone
func @dynamic_slice(%A: memref<f32 x ?>) {
    %c0 = constant 0 : index
    %v = subview %A[%c0:?] : memref<f32 x ?>
}
""",
       'subview %A[%c0:?', 4, 1),
    _c('expand_question', 'no ? in expand shapes: a dynamic size is a value',
       """; no ? in expand shapes: a dynamic size is a value
func @expand_question(%A: memref<f32 x ?>) {
    %v = expand %A[0 -> 4 x ?] : memref<f32 x 4 x ?>
}
""",
       'expand %A[0 -> 4 x ?', 3, 1),
    _c('foreach_v03', "v0.3's foreach header; v0.4 writes foreach (%i) = (%a), (%b)",
       """; v0.3's foreach header; v0.4 writes foreach (%i) = (%a), (%b)
func @foreach_v03(%A: memref<f32 x 8>) {
    %c0 = constant 0 : index
    %c8 = constant 8 : index
    foreach %i = %c0, %c8 {
    }
}
""",
       'foreach %', 5, 1),
    _c('group_id_no_mode', 'group_id needs .x, .y or .z in v0.4',
       """; group_id needs .x, .y or .z in v0.4
func @group_id_no_mode() {
    %g = group_id : index
}
""",
       'group_id', 3, 1),
    _c('group_without_size', 'a group type needs its size (x N or x ?)',
       """; a group type needs its size (x N or x ?)
func @group_without_size(%G: group<memref<f32 x 4>>) {
}
""",
       'group<memref<f32 x 4>>', 2, 1),
    _c('i1_type', 'i1 is gone; conditions are bool',
       """; i1 is gone; conditions are bool
func @i1_type(%a: i1) {
}
""",
       'i1', 2, 2),
    _c('if_yield_without_else', 'an if that returns values needs an else that yields them',
       """; an if that returns values needs an else that yields them
func @if_yield_without_else(%c: bool, %a: i32) {
    %r = if %c -> (i32) {
        yield (%a)
    }
}
""",
       '%r = if %c -> (i32) {\n        yield (%a)\n    }', 3, 1),
    _c('immediate_operand', 'immediates are gone: operands are values (use constant)',
       """; immediates are gone: operands are values (use constant)
func @immediate_operand(%a: i32) {
    %b = add %a, 1 : i32
}
""",
       '1', 3, 1),
    _c('lifetime_stop', 'lifetime_stop is documented but tinytc v0.4.0 does not lex it',
       """; lifetime_stop is documented but tinytc v0.4.0 does not lex it
func @lifetime_stop() {
    %T = alloca : memref<f32 x 8, local>
    lifetime_stop %T
}
""",
       'lifetime_stop', 4, 1),
    _c('math_prefix',
       "v0.4 has no math. prefix (the reference's own example writes math.native_exp)",
       """; v0.4 has no math. prefix (the reference's own example writes math.native_exp)
func @math_prefix(%x: f32) {
    %y = math.native_exp %x : f32
}
""",
       'math.native_exp', 3, 1),
    _c('modifier_order', '.atomic comes before the transposes',
       """; .atomic comes before the transposes
func @modifier_order(%A: memref<f32 x 8 x 8>, %C: memref<f32 x 8 x 8>) {
    %one = constant 1.0 : f32
    %zero = constant 0.0 : f32
    gemm.t.atomic %one, %A, %A, %zero, %C
}
""",
       'gemm.t.atomic', 5, 1),
    _c('result_type_mismatch',
       'the type after the colon is the result type and must match the operands',
       """; the type after the colon is the result type and must match the operands
func @result_type_mismatch(%a: f32, %b: f32) {
    %c = add %a, %b : f64
}
""",
       '%a', 3, 1,
       more=(('%b', 3, 1),)),
    _c('spmd_in_collective', 'an SPMD instruction in the collective function body',
       """; an SPMD instruction in the collective function body
func @spmd_in_collective(%A: memref<i32>) {
    %k = subgroup_local_id : i32
}
""",
       '%k = subgroup_local_id : i32', 3, 1),
    _c('store_with_type', 'store has no type annotation in v0.4',
       """; store has no type annotation in v0.4
func @store_with_type(%A: memref<f32 x 8>, %x: f32) {
    parallel {
        %c0 = constant 0 : index
        store %x, %A[%c0] : f32
    }
}
""",
       'store %x, %A[%c0] :', 5, 1),
    _c('subview_address_space', "a view keeps its memref's address space",
       """; a view keeps its memref's address space
func @subview_address_space() {
    %T = alloca : memref<f32 x 8, local>
    %v = subview %T[0:4] : memref<f32 x 4>
}
""",
       'memref<f32 x 4>', 4, 1),
    _c('two_errors', 'two independent errors, both reported',
       """; two independent errors, both reported
func @two_errors(%a: f32, %b: i32) {
    %x = add %a, %b : f32
    %y = neg %b : f32
}
""",
       '%b', 3, 1,
       more=(('f32', 4, 1),)),
    _c('unsigned_type', 'the v0.2 unsigned types are gone',
       """; the v0.2 unsigned types are gone
func @unsigned_type(%a: u32) {
}
""",
       'u32', 2, 1),
    _c('wg_size_multiple', 'the first work-group mode must be a multiple of the subgroup size',
       """; the first work-group mode must be a multiple of the subgroup size
func @wg_size_multiple() attributes{subgroup_size=16, work_group_size=[24, 1]} {
}
""",
       'func @wg_size_multiple() attributes{subgroup_size=16, work_group_size=[24, 1]} {\n}', 2, 1),
    _c('yield_count', 'a loop with one carried value must yield one value',
       """; a loop with one carried value must yield one value
func @yield_count(%n: index) {
    %c0 = constant 0 : index
    %z = constant 0 : i32
    %r = for %i = %c0, %n init(%a = %z) -> (i32) {
        yield (%a, %a)
    }
}
""",
       'yield (%a, %a)', 6, 1),
    ]


def _k(body: str, params: str = "", attrs: str = "") -> str:
    """`func @k(params) attrs { body }` (body lines indented by the caller)."""
    return f"func @k({params}){' ' + attrs if attrs else ''} {{\n{body}}}\n"


# sub-groups of 16, the size tinytc v0.4.0's default target takes: a program is rejected for
# its rule, not for its sub-group size
SG16 = "attributes{subgroup_size=16, work_group_size=[16, 1]}"
ACC = "coopmatrix<f32 x 16 x 8, matrix_acc>"
SQ = "coopmatrix<f32 x 16 x 16, matrix_acc>"


def _spmd(body: str, params: str = "") -> str:
    """`body` inside `parallel` of a kernel with sub-groups of 8."""
    inner = "".join(f"        {line}\n" for line in body.splitlines())
    return _k(f"    parallel {{\n{inner}    }}\n", params, SG16)


def _r(name: str, rule: str, source: str, blame: str, line: int = 1, occurrence: int = 1,
       again: int = 0) -> InvalidCase:
    """A case whose source starts with a comment saying its rule (the blame is searched from
    `line` of the program after it); `again`: further diagnostics at the same place."""
    return _c(name, rule, f"; {rule}\n{source}", blame, line + 1, occurrence,
              more=((blame, line + 1, occurrence),) * again)


def rules() -> list[InvalidCase]:
    """One program per static rule of tlinterp/checker/v04.py that the converted ones leave
    out; the blamed text is the instruction (or attribute, parameter) at fault."""
    return [
        _r("subgroup_size_zero", "subgroup_size must be positive",
           _k("", "", "attributes{subgroup_size=0}"),
           "func @k() attributes{subgroup_size=0} {\n}"),
        _r("work_group_size_zero", "work_group_size entries must be positive",
           _k("", "", "attributes{work_group_size=[0, 1]}"),
           "func @k() attributes{work_group_size=[0, 1]} {\n}"),
        _r("function_attribute_unknown", "only known function attributes",
           _k("", "", "attributes{tile=4}"), "tile"),
        _r("alignment_not_multiple", "alignment is a positive multiple of the element size",
           _k("", "%A: memref<f64 x 8> {alignment=4}"),
           "%A: memref<f64 x 8> {alignment=4}"),
        _r("alignment_on_scalar", "alignment needs a memref or group parameter",
           _k("", "%a: f32 {alignment=8}"), "%a: f32 {alignment=8}"),
        _r("shape_gcd_too_long", "shape_gcd has at most one entry per mode",
           _k("", "%A: memref<f32 x ?> {shape_gcd=[4, 4]}"),
           "%A: memref<f32 x ?> {shape_gcd=[4, 4]}"),
        _r("parameter_attribute_unknown", "only known parameter attributes",
           _k("", "%A: memref<f32 x 8> {unroll=true}"),
           "%A: memref<f32 x 8> {unroll=true}"),
        _r("constant_float_integer_literal", "a float constant needs a floating literal",
           _k("    %x = constant 1 : f32\n"), "%x = constant 1 : f32"),
        _r("constant_integer_float_literal", "an integer constant needs an integer literal",
           _k("    %x = constant 1.5 : i32\n"), "%x = constant 1.5 : i32"),
        _r("bitwise_on_float", "and/or/xor/shl/shr/not take integers (and bool)",
           _k("    %c = and %a, %b : f32\n", "%a: f32, %b: f32"), "%c = and %a, %b : f32"),
        _r("min_on_complex", "min and max have no complex form",
           _k("    %c = min %a, %b : c32\n", "%a: c32, %b: c32"), "%c = min %a, %b : c32"),
        _r("compare_mixed_types", "comparison operands have one type",
           _k("    %p = less_than %a, %b : bool\n", "%a: f32, %b: f64"),
           "%p = less_than %a, %b : bool"),
        _r("compare_bool", "comparisons need numbers",
           _k("    %p = equal %a, %b : bool\n", "%a: bool, %b: bool"),
           "%p = equal %a, %b : bool"),
        _r("order_on_complex", "complex numbers have no order",
           _k("    %p = less_than %a, %b : bool\n", "%a: c64, %b: c64"),
           "%p = less_than %a, %b : bool"),
        _r("cast_from_bool", "bool has no casts",
           _k("    %x = cast %p : i32\n", "%p: bool"), "%x = cast %p : i32"),
        _r("coopmatrix_cast_to_scalar", "casts keep coopmatrix-ness",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 "%x = cast %m : f32", "%A: memref<f32 x 16 x 8>"), "%x = cast %m : f32"),
        _r("coopmatrix_cast_shape", "casts keep the coopmatrix shape",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 "%x = cast %m : coopmatrix<f16 x 8 x 16, matrix_acc>",
                 "%A: memref<f32 x 16 x 8>"),
           "%x = cast %m : coopmatrix<f16 x 8 x 16, matrix_acc>"),
        _r("coopmatrix_cast_use", "only matrix_acc may become matrix_a or matrix_b",
           _spmd("%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : "
                 "coopmatrix<f32 x 16 x 8, matrix_a>\n"
                 f"%x = cast %m : {ACC}", "%A: memref<f32 x 16 x 8>"), f"%x = cast %m : {ACC}"),
        _r("builtin_type", "group_id has type index",
           _k("    %g = group_id.x : i32\n"), "%g = group_id.x : i32"),
        _r("alloca_scalar", "alloca makes a memref",
           _k("    %t = alloca : f32\n"), "%t = alloca : f32"),
        _r("alloca_dynamic", "alloca needs a static shape",
           _k("    %t = alloca : memref<f32 x ?, local>\n"),
           "%t = alloca : memref<f32 x ?, local>"),
        _r("load_from_scalar", "load reads a memref or group",
           _k("    %x = load %a[] : f32\n", "%a: f32"), "%x = load %a[] : f32"),
        _r("load_index_count", "one index per mode",
           _k("    %c0 = constant 0 : index\n    %x = load %A[%c0] : f32\n",
              "%A: memref<f32 x 4 x 4>"), "%x = load %A[%c0] : f32",
           again=1),  # the parser's result-type rule and the checker both say it
        _r("load_index_type", "indices have type index",
           _k("    %c0 = constant 0 : i32\n    %x = load %A[%c0] : f32\n", "%A: memref<f32 x 4>"),
           "%c0", 3),
        _r("store_to_group", "store needs a memref",
           _k("    %c0 = constant 0 : index\n    store %a, %G[%c0]\n",
              "%a: f32, %G: group<memref<f32> x 4>"), "store %a, %G[%c0]"),
        _r("store_value_type", "the stored value has the element type",
           _k("    %c0 = constant 0 : index\n    store %a, %A[%c0]\n",
              "%a: f64, %A: memref<f32 x 4>"), "store %a, %A[%c0]"),
        _r("size_mode_range", "size's mode lies below the order",
           _k("    %n = size %A[1] : index\n", "%A: memref<f32 x 4>"),
           "%n = size %A[1] : index"),
        _r("if_condition_type", "if needs a bool",
           _k("    if %a {\n    }\n", "%a: i32"), "if %a {\n    }"),
        _r("yield_without_results", "a region without results yields nothing",
           _k("    if %p {\n        yield (%a)\n    }\n", "%p: bool, %a: i32"), "yield (%a)"),
        _r("for_missing_yield", "a loop with carried values ends in a yield",
           _k("    %c0 = constant 0 : index\n    %r = for %i = %c0, %n init(%a = %c0) -> (index)"
              " {\n    }\n", "%n: index"),
           "{\n    }", 3),
        _r("yield_type", "yielded values have the declared types",
           _k("    %r = if %p -> (i32) {\n        yield (%a)\n    } else {\n"
              "        yield (%b)\n    }\n", "%p: bool, %a: i32, %b: i64"), "yield (%b)"),
        _r("for_bounds_types", "loop bounds share one integer type",
           _k("    %c0 = constant 0 : i32\n    for %i = %c0, %n {\n    }\n", "%n: index"),
           "for %i = %c0, %n {\n    }"),
        _r("for_bounds_float", "loop bounds are integers",
           _k("    for %i = %a, %b {\n    }\n", "%a: f32, %b: f32"), "for %i = %a, %b {\n    }"),
        _r("for_init_type", "initial values have the declared types",
           _k("    %c0 = constant 0 : index\n    %z = constant 0 : i64\n"
              "    %r = for %i = %c0, %n init(%a = %z) -> (i32) {\n        yield (%a)\n    }\n",
              "%n: index"),
           "%r = for %i = %c0, %n init(%a = %z) -> (i32) {\n        yield (%a)\n    }"),
        _r("foreach_tile_extents", "one tile extent per loop variable",
           _k("    %c0 = constant 0 : index\n    foreach_tile (%i, %j) = (%c0, %c0), (%n, %n) as"
              " (%s, %t) <= (16) {\n    }\n", "%n: index", SG16),
           "foreach_tile (%i, %j) = (%c0, %c0), (%n, %n) as (%s, %t) <= (16) {\n    }"),
        _r("foreach_tile_extent_zero", "tile extents are positive",
           _k("    %c0 = constant 0 : index\n    foreach_tile (%i, %j) = (%c0, %c0), (%n, %n) as"
              " (%s, %t) <= (16, 0) {\n    }\n", "%n: index", SG16),
           "foreach_tile (%i, %j) = (%c0, %c0), (%n, %n) as (%s, %t) <= (16, 0) {\n    }"),
        _r("foreach_tile_not_subgroup_multiple", "the first tile extent is a multiple of the "
           "subgroup size",
           _k("    %c0 = constant 0 : index\n    foreach_tile (%i) = (%c0), (%n) as (%s) <= (4)"
              " {\n    }\n", "%n: index", SG16),
           "foreach_tile (%i) = (%c0), (%n) as (%s) <= (4) {\n    }"),
        _r("blas_scalar_operand", "BLAS operands are memrefs",
           _k("    gemm %a, %a, %B, %a, %B\n", "%a: f32, %B: memref<f32 x 4 x 4>"),
           "%a", 2, 2),  # at the operand A
        _r("blas_order", "gemm takes matrices",
           _k("    gemm %a, %x, %B, %a, %B\n", "%a: f32, %x: memref<f32 x 4>, "
              "%B: memref<f32 x 4 x 4>"), "%x", 2),  # at the operand A
        _r("blas_sizes", "gemm's inner sizes agree",
           _k("    gemm %a, %A, %B, %a, %C\n", "%a: f32, %A: memref<f32 x 4 x 3>, "
              "%B: memref<f32 x 4 x 4>, %C: memref<f32 x 4 x 4>"), "gemm %a, %A, %B, %a, %C"),
        _r("blas_alpha_promotion", "alpha promotes to the operands' type",
           _k("    axpby %a, %A, %b, %B\n", "%a: f64, %b: f32, %A: memref<f32 x 4>, "
              "%B: memref<f32 x 4>"), "axpby %a, %A, %b, %B"),
        _r("blas_output_promotion", "the operands' type promotes to the output's",
           _k("    axpby %a, %A, %a, %B\n", "%a: f32, %A: memref<f64 x 4>, %B: memref<f32 x 4>"),
           "axpby %a, %A, %a, %B"),
        _r("cumsum_mode_range", "cumsum's mode lies below the order",
           _k("    cumsum %a, %A, 1, %a, %B\n", "%a: f32, %A: memref<f32 x 4>, "
              "%B: memref<f32 x 4>"), "cumsum %a, %A, 1, %a, %B"),
        _r("cumsum_shapes", "cumsum's A and B have one shape",
           _k("    cumsum %a, %A, 0, %a, %B\n", "%a: f32, %A: memref<f32 x 4>, "
              "%B: memref<f32 x 5>"), "cumsum %a, %A, 0, %a, %B"),
        _r("coopmatrix_mul_add_use", "mul_add takes matrix_a, matrix_b, matrix_acc",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {SQ}\n"
                 f"%d = cooperative_matrix_mul_add %m, %m, %m : {SQ}",
                 "%A: memref<f32 x 16 x 16>"), f"%d = cooperative_matrix_mul_add %m, %m, %m : {SQ}",
           again=1),  # A's use and B's use: two errors (square: the shapes fit)
        _r("coopmatrix_mul_add_promotion", "mul_add's product promotes to the accumulator",
           _spmd("%c0 = constant 0 : index\n%a = cooperative_matrix_load %A[%c0, %c0] : "
                 "coopmatrix<f32 x 16 x 8, matrix_a>\n%b = cooperative_matrix_load %A[%c0, %c0] "
                 ": coopmatrix<f32 x 8 x 8, matrix_b>\n%c = cooperative_matrix_load %C[%c0, %c0]"
                 " : coopmatrix<f16 x 16 x 8, matrix_acc>\n%d = cooperative_matrix_mul_add %a, "
                 "%b, %c : coopmatrix<f16 x 16 x 8, matrix_acc>",
                 "%A: memref<f32 x 16 x 8>, %C: memref<f16 x 16 x 8>"),
           "%d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f16 x 16 x 8, matrix_acc>"),
        _r("coopmatrix_load_vector", "coopmatrix loads read matrices",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}",
                 "%A: memref<f32 x 8>"), f"%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}"),
        _r("coopmatrix_load_component", "the component type is the element type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}",
                 "%A: memref<f64 x 16 x 8>"), f"%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}"),
        _r("coopmatrix_scale_type", "the scale factor has the component type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 f"%s = cooperative_matrix_scale %a, %m : {ACC}",
                 "%A: memref<f32 x 16 x 8>, %a: f64"),
           f"%s = cooperative_matrix_scale %a, %m : {ACC}"),
        _r("coopmatrix_reduce_shape", "a row reduction gives M x 1",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 f"%r = cooperative_matrix_reduce_add.row %m : {ACC}",
                 "%A: memref<f32 x 16 x 8>"), f"%r = cooperative_matrix_reduce_add.row %m : {ACC}"),
        _r("coopmatrix_apply_type", "apply returns the matrix's type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 "%r = cooperative_matrix_apply (%i, %j, %v) = %m -> "
                 "coopmatrix<f32 x 8 x 16, matrix_acc> {\n    yield (%v)\n}",
                 "%A: memref<f32 x 16 x 8>"),
           "%r = cooperative_matrix_apply (%i, %j, %v) = %m -> "
           "coopmatrix<f32 x 8 x 16, matrix_acc> {\n            yield (%v)\n        }"),
        _r("value_redefined", "a name is defined once in a region",
           _k("    %x = add %a, %a : i32\n    %x = sub %a, %a : i32\n", "%a: i32"), "%x", 3),
        _r("value_shadowed", "a name visible in an enclosing region is not defined again",
           _k("    %c0 = constant 0 : index\n    %n = constant 4 : index\n"
              "    foreach (%i) = (%c0), (%n) {\n        %n = constant 7 : i32\n"
              "        store %n, %A[%i]\n    }\n", "%A: memref<i32 x 4>"), "%n", 5),
        _r("loop_variable_shadowed", "a loop variable is a name like any other",
           _k("    %c0 = constant 0 : index\n    for %n = %c0, %n {\n    }\n", "%n: index"),
           "%n", 3),
        _r("layout_row_major", "a memref's strides grow mode by mode (column-major)",
           _k("", "%A: memref<f32 x 4 x 3, strided<3, 1>>"),
           "%A: memref<f32 x 4 x 3, strided<3, 1>>"),
        _r("layout_stride_count", "a strided layout has one stride per mode",
           _k("", "%A: memref<f32 x 4 x 3, strided<1>>"), "%A: memref<f32 x 4 x 3, strided<1>>"),
        _r("layout_negative_size", "sizes are not negative",
           _k("", "%A: memref<f32 x -4>"), "%A: memref<f32 x -4>"),
        _r("group_negative_offset", "a group's offset is not negative",
           _k("", "%G: group<memref<f32 x 4> x 2, offset: -1>"),
           "%G: group<memref<f32 x 4> x 2, offset: -1>"),
        _r("cast_from_memref", "cast takes numbers",
           _k("    %x = cast %A : index\n", "%A: memref<f32 x 4>"), "%x = cast %A : index"),
        _r("subgroup_lane_type", "subgroup_broadcast's lane is an i32",
           _spmd("%c0 = constant 0 : index\n%b = subgroup_broadcast %a, %c0 : f32", "%a: f32"),
           "%b = subgroup_broadcast %a, %c0 : f32"),
        _r("subgroup_operand_type", "a sub-group operation's operand has the result type",
           _spmd("%r = subgroup_reduce_add %a : f64", "%a: f32"),
           "%r = subgroup_reduce_add %a : f64"),
        _r("subgroup_max_complex", "sub-group max and min need an order",
           _spmd("%r = subgroup_reduce_max %a : c32", "%a: c32"),
           "%r = subgroup_reduce_max %a : c32"),
        _r("subview_offset_type", "subview offsets are index values",
           _k("    %o = constant 1 : i32\n    %v = subview %A[%o:2] : memref<f32 x 2>\n",
              "%A: memref<f32 x 4>"), "%o", 3),
        _r("value_undefined", "a value is defined before its use",
           _k("    %x = add %a, %b : i32\n", "%a: i32"), "%b"),
        _r("constant_complex_integer_literal", "a complex constant needs a pair [re, im]",
           _k("    %z = constant 1 : c32\n"), "%z = constant 1 : c32"),
        _r("constant_memref", "constants are numbers, bool or coopmatrix",
           _k("    %m = constant 1.0 : memref<f32 x 4>\n"), "%m = constant 1.0 : memref<f32 x 4>"),
        _r("attribute_twice", "an attribute is given once",
           _k("", "", "attributes{subgroup_size=16, subgroup_size=16}"), "subgroup_size=16", 1,
           2),
        _r("work_group_size_shape", "work_group_size is an array of 2 integers",
           _k("", "", "attributes{work_group_size=[16]}"),
           "func @k() attributes{work_group_size=[16]} {\n}"),
        _r("function_attribute_misplaced", "alignment is a parameter attribute",
           _k("", "", "attributes{alignment=4}"), "func @k() attributes{alignment=4} {\n}"),
        _r("shape_gcd_not_positive", "gcd attributes hold positive integers",
           _k("", "%A: memref<f32 x ?> {shape_gcd=[0]}"), "%A: memref<f32 x ?> {shape_gcd=[0]}"),
        # one diagnostic at each of the three operands (line 4: after the comment, the
        # header and `parallel`)
        _c("coopmatrix_mul_add_scalars", "mul_add multiplies cooperative matrices",
           "; mul_add multiplies cooperative matrices\n"
           + _spmd("%d = cooperative_matrix_mul_add %a, %a, %a : f32", "%a: f32"),
           "%a", 4, 1, more=(("%a", 4, 2), ("%a", 4, 3))),
        _r("coopmatrix_extract_type", "extract gives the component type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 "%e = cooperative_matrix_extract %m[2] : f64", "%A: memref<f32 x 16 x 8>"),
           "%e = cooperative_matrix_extract %m[2] : f64"),
        _r("coopmatrix_insert_value_type", "insert takes a value of the component type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 f"%n = cooperative_matrix_insert %a, %m[0] : {ACC}",
                 "%A: memref<f32 x 16 x 8>, %a: f64"),
           "%a", 5),  # at the value
        _r("coopmatrix_insert_type", "insert returns the matrix's type",
           _spmd(f"%c0 = constant 0 : index\n%m = cooperative_matrix_load %A[%c0, %c0] : {ACC}\n"
                 f"%n = cooperative_matrix_insert %a, %m[0] : {SQ}",
                 "%A: memref<f32 x 16 x 8>, %a: f32"),
           f"%n = cooperative_matrix_insert %a, %m[0] : {SQ}"),
        _r("coopmatrix_scope_without_atomic", "memory scope and semantics are for atomics",
           _spmd("%c0 = constant 0 : index\n"
                 f"%m = cooperative_matrix_load.device.acquire %A[%c0, %c0] : {ACC}",
                 "%A: memref<f32 x 16 x 8>"),
           "cooperative_matrix_load", 4),  # the diagnostic names the instruction
        _r("cumsum_scalar", "cumsum needs a tensor",
           _k("    cumsum %a, %A, 0, %a, %B\n", "%a: f32, %A: memref<f32>, %B: memref<f32>"),
           "cumsum %a, %A, 0, %a, %B"),
        _r("blas_beta_promotion", "beta promotes to the output's type",
           _k("    axpby %a, %A, %b, %B\n", "%a: f32, %b: f64, %A: memref<f32 x 4>, "
              "%B: memref<f32 x 4>"), "axpby %a, %A, %b, %B"),
        _r("foreach_bounds_types", "foreach bounds share one integer type",
           _k("    %c0 = constant 0 : i32\n    foreach (%i) = (%c0), (%n) {\n    }\n",
              "%n: index"), "foreach (%i) = (%c0), (%n) {\n    }"),
        _r("foreach_variable_count", "one lower and one upper bound per loop variable",
           _k("    %c0 = constant 0 : index\n    foreach (%i, %j) = (%c0), (%n) {\n    }\n",
              "%n: index"), "foreach", 3),
        _r("for_carried_count", "one type per loop-carried value",
           _k("    %c0 = constant 0 : index\n    %r, %s = for %i = %c0, %n init(%a = %c0) -> "
              "(index, index) {\n        yield (%a)\n    }\n", "%n: index"),
           "%r, %s = for %i = %c0, %n init(%a = %c0) -> (index, index) {\n        yield (%a)\n"
           "    }"),
        _r("store_index_count", "store takes one index per mode",
           _k("    %c0 = constant 0 : index\n    store %a, %A[%c0]\n",
              "%a: f32, %A: memref<f32 x 4 x 4>"), "store %a, %A[%c0]"),
        _r("subgroup_bool_operand", "sub-group operations take numbers",
           _spmd("%r = subgroup_reduce_add %p : bool", "%p: bool"),
           "%r = subgroup_reduce_add %p : bool"),
        _r("subgroup_op_in_collective", "sub-group operations need an SPMD region",
           _k("    %r = subgroup_reduce_add %a : f32\n", "%a: f32"),
           "%r = subgroup_reduce_add %a : f32"),
        # an integer constant fits its type, as in v0.3 (docs/semantics.md): never wrapped
        _r("constant_above_range", "an integer constant fits its type (i8: -128..127)",
           _k("    %c = constant 300 : i8\n    %i = constant 0 : index\n"
              "    store %c, %A[%i]\n", "%A: memref<i8 x 4>"),
           "%c = constant 300 : i8"),
        _r("constant_below_range", "an integer constant fits its type (i8: -128..127)",
           _k("    %c = constant -129 : i8\n"), "%c = constant -129 : i8"),
        _r("constant_coopmatrix_range", "a coopmatrix constant fits its component type",
           _spmd("%m = constant 32768 : coopmatrix<i16 x 16 x 16, matrix_acc>"),
           "%m = constant 32768 : coopmatrix<i16 x 16 x 16, matrix_acc>"),
    ]


def cases() -> list[InvalidCase]:
    return [*converted(), *rules()]
