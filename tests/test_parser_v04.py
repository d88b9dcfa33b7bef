"""Tensor language v0.4 front end: every v0.4 construct parses into the common IR and prints
back to the same IR; version detection; a construct of the other version is one clear error at
its range; tlrun --check / --emit ir / run with "not yet executable"."""

from __future__ import annotations

import numpy as np
import pytest

from tlinterp import check, parse
from tlinterp.cli import tlrun as cli
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import NotExecutable, SourceError
from tlinterp.lang.types import CoopMatrixType, GroupType, MemrefType, ScalarType
from tlinterp.lang.v04.printer import format_program_v04

# Our own v0.4 kernels: together they use every construct of the v0.4 reference.
EVERYTHING = """\
; every construct of tensor language v0.4
func @scalars(%a: f32, %b: f32, %i: i32, %j: i32, %z: c64, %h: f16, %g: bf16, %p: bool) {
    %c = constant 1.5 : f32
    %ci = constant -3 : i32
    %cb = constant true : bool
    %cz = constant [1.0, -2.5] : c64
    %inf = constant -inf : f64
    %s1 = add %a, %b : f32
    %s2 = sub %a, %b : f32
    %s3 = mul %a, %b : f32
    %s4 = div %a, %b : f32
    %s5 = rem %i, %j : i32
    %s6 = max %a, %b : f32
    %s7 = min %i, %j : i32
    %s8 = shl %i, %j : i32
    %s9 = shr %i, %j : i32
    %s10 = and %p, %cb : bool
    %s11 = or %i, %j : i32
    %s12 = xor %p, %cb : bool
    %u1 = abs %z : f64
    %u2 = neg %a : f32
    %u3 = not %i : i32
    %u4 = conj %z : c64
    %u5 = im %z : f64
    %u6 = re %z : f64
    %m1 = cos %a : f32
    %m2 = sin %a : f32
    %m3 = exp %z : c64
    %m4 = exp2 %a : f32
    %m5 = log %a : f32
    %m6 = log2 %a : f32
    %m7 = native_cos %a : f32
    %m8 = native_sin %a : f32
    %m9 = native_exp %a : f32
    %m10 = native_exp2 %a : f32
    %m11 = native_log %a : f32
    %m12 = native_log2 %a : f32
    %k1 = equal %a, %b : bool
    %k2 = not_equal %z, %cz : bool
    %k3 = greater_than %i, %j : bool
    %k4 = greater_than_equal %i, %j : bool
    %k5 = less_than %a, %b : bool
    %k6 = less_than_equal %h, %h : bool
    %x1 = cast %i : f64
    %x2 = cast %a : c32
    %x3 = cast %g : f32
    %b1 = group_id.x : index
    %b2 = group_id.y : index
    %b3 = group_id.z : index
    %b4 = num_groups.x : index
    %b5 = num_groups.y : index
    %b6 = num_subgroups.z : i32
    %b7 = subgroup_size : i32
    %r, %q = if %k1 -> (f32, i32) {
        yield (%a, %i)
    } else {
        yield (%b, %j)
    }
}

func @memory(%A: memref<f32x8x16,strided<1,10>> {alignment=4, shape_gcd=[8], stride_gcd=[1,2]},
             %G: group<memref<f32x4x?>x?, offset: ?>, %H: group<memref<i8x4>x8>,
             %D: memref<f64x?x?,global>, %n: index)
             attributes{subgroup_size=16, work_group_size=[32,2], "custom"=[true,"x",{}]} {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c4 = constant 4 : index
    %t = alloca {alignment=64} : memref<f32x16x4,local>
    %tv = subview %t[%c0:4, %c1] : memref<f32x4,local>
    %v1 = subview %A[2:4, %c1:0] : memref<f32x4>
    %v2 = subview %A[%c0:%n, 3:5] : memref<f32x?x5,strided<1,10>>
    %e1 = expand %D[1 -> %n x 2] : memref<f64x?x?x2>
    %f1 = fuse %e1[1,2] : memref<f64x?x?>
    %s = size %G[0] : index
    %s2 = size %A[1] : index
    %m = load %G[%c0] : memref<f32x4x?>
    %x = load %A[%c0, %c1] : f32
    store %x, %A[%c1, %c0]
    %ok = associated %D : bool
    %al = atomic_load.device.acquire %A[%c0, %c1] : f32
    atomic_store.work_group.release %x, %A[%c0, %c1]
    atomic_store %x, %A[%c0, %c1]
    %aa = atomic_add %x, %A[%c0, %c0] : f32
    %am = atomic_max.cross_device.sequentially_consistent %x, %A[%c0, %c0] : f32
    %an = atomic_min.subgroup.relaxed %x, %A[%c0, %c0] : f32
    barrier
    barrier.global
    barrier.local
    barrier.global.local
}

func @collectives(%A: memref<f32x8x8>, %B: memref<f32x8x8>, %C: memref<f64x8x8>,
                  %a: memref<f32x8>, %b: memref<f32x8>, %c: memref<f64x8>, %s: memref<f32>,
                  %alpha: f32, %beta: f64) {
    %one = constant 1.0 : f32
    %zero = constant 0.0 : f32
    %b1 = constant 1.0 : f64
    axpby %alpha, %A, %zero, %B
    axpby.atomic.t %alpha, %A, %one, %B
    cumsum %alpha, %A, 1, %zero, %B
    cumsum.atomic %alpha, %a, 0, %one, %b
    gemm %alpha, %A, %B, %beta, %C
    gemm.t %alpha, %A, %B, %beta, %C
    gemm.n.t %alpha, %A, %B, %beta, %C
    gemm.atomic.t.t %alpha, %A, %B, %b1, %C
    gemv %alpha, %A, %a, %beta, %c
    gemv.atomic.t %alpha, %A, %a, %b1, %c
    ger %alpha, %a, %b, %beta, %C
    hadamard %alpha, %a, %b, %beta, %c
    hadamard.atomic %alpha, %A, %B, %b1, %C
    sum %alpha, %A, %zero, %a
    sum.t %alpha, %A, %zero, %a
    sum.atomic %alpha, %a, %one, %s
    %lb = constant 0 : index
    %ub = constant 8 : index
    %st = constant 2 : index
    for %i = %lb, %ub, %st {
    } attributes{unroll=4}
    %f0 = constant 0 : i64
    %f1 = constant 1 : i64
    %fn_1, %fn = for %k = %lb, %ub init(%x = %f0, %y = %f1) -> (i64, i64) {
        %z = add %x, %y : i64
        yield (%y, %z)
    } attributes{unroll=false}
    foreach (%i) = (%lb), (%ub) {
        %v = load %a[%i] : f32
        store %v, %b[%i]
    }
    foreach (%i, %j) = (%lb, %lb), (%ub, %ub) {
        %v = load %A[%i, %j] : f32
        store %v, %B[%j, %i]
    }
    parallel {
        %sg = subgroup_id.x : i32
        %sgy = subgroup_id.y : i32
        %lin = subgroup_linear_id : i32
        %loc = subgroup_local_id : i32
        %v = load %a[%lb] : f32
        %w = subgroup_broadcast %v, %loc : f32
        %o1 = subgroup_exclusive_scan_add %v : f32
        %o2 = subgroup_exclusive_scan_max %v : f32
        %o3 = subgroup_exclusive_scan_min %v : f32
        %o4 = subgroup_inclusive_scan_add %v : f32
        %o5 = subgroup_inclusive_scan_max %v : f32
        %o6 = subgroup_inclusive_scan_min %v : f32
        %o7 = subgroup_reduce_add %v : f32
        %o8 = subgroup_reduce_max %v : f32
        %o9 = subgroup_reduce_min %v : f32
    }
}

func @coop(%A: memref<f16x64x64>, %B: memref<f16x64x64>, %C: memref<f32x64x64>)
           attributes{subgroup_size=16} {
    %c0 = constant 0 : index
    %c64 = constant 64 : index
    foreach_tile (%i, %j) = (%c0, %c0), (%c64, %c64) as (%ti, %tj) <= (32, 16) {
        %a = cooperative_matrix_load %A[%i, %j] : coopmatrix<f16x32x16,matrix_a>
        %b = cooperative_matrix_load.t.rows_checked %B[%i, %j] : coopmatrix<f16x16x16,matrix_b>
        %acc0 = constant 0.0 : coopmatrix<f32x32x16,matrix_acc>
        %acc = cooperative_matrix_mul_add %a, %b, %acc0 : coopmatrix<f32x32x16,matrix_acc>
        %two = constant 2.0 : f32
        %sc = cooperative_matrix_scale %two, %acc : coopmatrix<f32x32x16,matrix_acc>
        %sum = add %sc, %acc : coopmatrix<f32x32x16,matrix_acc>
        %ng = neg %sum : coopmatrix<f32x32x16,matrix_acc>
        %cv = cast %ng : coopmatrix<f16x32x16,matrix_a>
        %cs = cooperative_matrix_construct %two : coopmatrix<f32x32x16,matrix_acc>
        %el = cooperative_matrix_extract %cs[0] : f32
        %in = cooperative_matrix_insert %el, %cs[1] : coopmatrix<f32x32x16,matrix_acc>
        %rr = cooperative_matrix_reduce_add.row %in : coopmatrix<f32x32x1,matrix_acc>
        %rc = cooperative_matrix_reduce_max.column %in : coopmatrix<f32x1x16,matrix_acc>
        %rm = cooperative_matrix_reduce_min.row %in : coopmatrix<f32x32x1,matrix_acc>
        %ap = cooperative_matrix_apply (%r, %c, %v) = %in -> coopmatrix<f32x32x16,matrix_acc> {
            %le = less_than_equal %r, %c : bool
            %w = if %le -> (f32) {
                %ex = native_exp %v : f32
                yield (%ex)
            } else {
                %z = constant 0.0 : f32
                yield (%z)
            }
            yield (%w)
        }
        cooperative_matrix_store %ap, %C[%i, %j]
        cooperative_matrix_store.t.both_checked %ap, %C[%i, %j]
        %al = cooperative_matrix_atomic_load.cols_checked.device.acquire %C[%i, %j]
            : coopmatrix<f32x32x16,matrix_acc>
        cooperative_matrix_atomic_store.work_group.release %al, %C[%i, %j]
        %u1 = cooperative_matrix_atomic_add %al, %C[%i, %j] : coopmatrix<f32x32x16,matrix_acc>
        %u2 = cooperative_matrix_atomic_max.t %al, %C[%i, %j] : coopmatrix<f32x32x16,matrix_acc>
        %u3 = cooperative_matrix_atomic_min.rows_checked %al, %C[%i, %j]
            : coopmatrix<f32x32x16,matrix_acc>
        cooperative_matrix_prefetch 1, %A[%i, %j], 32, 16
    }
}
"""

ALL_CLASSES = set(ir.V04_INSTRUCTIONS) | {ir.Alloca, ir.Arith, ir.ArithUnary, ir.Cast,
                                           ir.Compare, ir.Expand, ir.Fuse, ir.GroupId,
                                           ir.GroupSize, ir.Load, ir.Size, ir.Subview,
                                           ir.Store, ir.Barrier, ir.If, ir.Yield, ir.For,
                                           ir.Foreach, *ir.BLAS}


def test_every_construct_parses_checks_and_prints_back():
    p = parse(EVERYTHING, "all.tl", lang="v0.4")
    from tlinterp import check

    check(p)
    seen = {type(i) for f in p.functions for i in ir.walk(f.body)}
    assert ALL_CLASSES - seen == set()  # LifetimeStop is the only class v0.4 lacks
    text = format_program_v04(p)
    again = parse(text, "all.tl", lang="v0.4")
    assert again == p
    assert format_program_v04(again) == text
    assert parse(EVERYTHING, "all.tl") == p  # detected as v0.4


def test_ir_of_v04_constructs():
    p = parse(EVERYTHING, "all.tl", lang="v0.4")
    scalars, memory, collectives, coop = p.functions
    body = {getattr(i, "result", ir.Value("")).name: i for i in ir.walk(scalars.body)}
    assert body["s6"] == ir.Arith(ir.Value("s6"), "max", ir.Value("a"), ir.Value("b"),
                                  ScalarType.f32)
    assert body["k6"].cond == "le" and body["k6"].type is ScalarType.f16
    assert body["u5"].op == "im" and body["u5"].type is ScalarType.c64
    assert isinstance(body["b1"], ir.GroupId) and isinstance(body["b4"], ir.GroupSize)
    assert body["b3"] == ir.Builtin(ir.Value("b3"), "group_id", "z", ScalarType.index)
    assert body["cz"].value.value == complex(1.0, -2.5)
    assert body["cb"].type is ScalarType.i1 and body["cb"].value.value == 1
    assert body["x3"].from_type is ScalarType.bf16
    a, g, h, d, _ = memory.args
    assert a.attributes == {"alignment": 4, "shape_gcd": (8,), "stride_gcd": (1, 2)}
    assert g.type == GroupType(MemrefType.make(ScalarType.f32, (4, None)), None, None)
    assert h.type.size == 8 and d.type.space == "global"
    assert memory.subgroup_size == 16 and memory.work_group_size == (32, 2)
    assert memory.attributes == {"custom": (True, "x", {})}
    insts = list(ir.walk(memory.body))
    alloca = next(i for i in insts if isinstance(i, ir.Alloca))
    assert alloca.type.space == "local" and alloca.attributes == {"alignment": 64}
    sub = next(i for i in insts if isinstance(i, ir.Subview) and i.result.name == "v1")
    assert [s.is_range for s in sub.slices] == [True, False]  # `%c1:0` is `%c1`
    fences = [i.fences for i in insts if isinstance(i, ir.Barrier)]
    assert fences == [(), ("global",), ("local",), ("global", "local")]
    loops = [i for i in ir.walk(collectives.body) if isinstance(i, ir.For)]
    assert loops[0].attributes == {"unroll": 4} and loops[0].step == ir.Value("st")
    assert [v.name for v in loops[1].results] == ["fn_1", "fn"]
    assert loops[1].result_types == (ScalarType.i64, ScalarType.i64)
    gemms = [i for i in ir.walk(collectives.body) if isinstance(i, ir.Gemm)]
    assert [(g.trans_a, g.trans_b, g.atomic) for g in gemms] == [
        (False, False, False), (True, False, False), (False, True, False), (True, True, True)]
    assert gemms[0].c_type.element is ScalarType.f64  # operand types from the definitions
    tile = next(i for i in ir.walk(coop.body) if isinstance(i, ir.ForeachTile))
    assert tile.tile_shape == (32, 16) and [v.name for v in tile.sizes] == ["ti", "tj"]
    load = next(i for i in ir.walk(coop.body) if isinstance(i, ir.CoopLoad) and i.checked)
    assert (load.trans, load.checked) == (True, "rows")
    assert load.type == CoopMatrixType(ScalarType.f16, 16, 16, "matrix_b")


# --- version detection -----------------------------------------------------------------------

V03 = ("func @f(%a: memref<f32x4>) {\n  %x = load %a[0] : memref<f32x4>\n"
       "  %y = arith.add %x, 1.0 : f32\n}\n")
V04 = ("func @f(%a: memref<f32x4>) {\n    %c0 = constant 0 : index\n"
       "    %x = load %a[%c0] : f32\n}\n")


def test_detection_and_forced_version():
    assert parse(V03).lang == "v0.3" and parse(V04).lang == "v0.4"
    assert parse(V03, lang="v0.3").lang == "v0.3"
    with pytest.raises(SourceError):
        parse(V03, lang="v0.4")
    with pytest.raises(ValueError):
        parse(V03, lang="v0.5")


def test_no_marker_and_different_meanings_asks_for_lang():
    # `barrier` fences both memories in v0.3 and none in v0.4: never guessed
    with pytest.raises(SourceError) as e:
        parse("func @f() {\n  barrier\n}\n", "b.tl")
    assert "--lang" in e.value.format()
    assert parse("func @f() {\n}\n").functions[0].name == "f"  # same meaning: fine


def test_no_marker_and_an_invalid_reading_is_not_a_version_question():
    # `load %0[] : T`: T is the operand's type in v0.3, the result's in v0.4; both parse
    src = "func @k(%0: memref<f32>) {\n  %1 = load %0[] : memref<TYPE>\n}\n"
    assert parse(src.replace("TYPE", "f32"), "k.tl").lang == "v0.3"  # only v0.3's checks
    with pytest.raises(SourceError) as e:  # neither reading checks: both errors, named
        parse(src.replace("TYPE", "f64"), "k.tl")
    text = e.value.format()
    assert "--lang v0.3|v0.4" not in text and "valid neither as tensor language v0.3" in text
    assert "k.tl:2.13-14: (read as v0.3) type mismatch: %0 has type memref<f32>" in text
    assert "k.tl:2.20-30: (read as v0.4) result type memref<f64> does not match f32" in text
    assert "  %1 = load %0[] : memref<f64>\n" in text  # with the source line


@pytest.mark.parametrize("lang, src, where, word", [
    ("v0.4", V04.replace("%x = load %a[%c0] : f32", "%x = arith.add %c0, %c0 : index"),
     "3.10-18", "v0.3"),
    ("v0.4", V04.replace("%x = load %a[%c0] : f32", "%g = group_id"), "3.10-17", "v0.3"),
    ("v0.4", V04.replace("%c0 = constant 0 : index", "%t = alloca -> memref<f32x4>"),
     "2.10-18", "v0.3"),
    ("v0.3", V03.replace("%y = arith.add %x, 1.0 : f32", "%y = add %x, %x : f32\n"
                         "  %z = less_than %x, %y : bool"), "4.8-16", "v0.4"),
    ("v0.3", V03.replace("%x = load %a[0] : memref<f32x4>", "%x = group_id.x : index"),
     "2.8-17", "v0.4"),
])
def test_a_construct_of_the_other_version_is_one_clear_error(lang, src, where, word):
    with pytest.raises(SourceError) as e:
        parse(src, "m.tl", lang=lang)
    [d] = e.value.diagnostics
    assert str(d.span) == where and f"tensor language {word} syntax" in d.message


# --- printing a v0.4 program as v0.3 and the reverse ---------------------------------------------


def test_v04_only_constructs_have_no_v03_spelling():
    with pytest.raises(SourceError) as e:
        cli_out = cli.main  # noqa: F841 - keep the import used
        from tlinterp.front.migrate import to_v03

        to_v03(parse(EVERYTHING, "all.tl", lang="v0.4"))
    messages = [d.message for d in e.value.diagnostics]
    assert any("cumsum has no v0.3 equivalent" == m for m in messages)
    assert any("the type c64 has no v0.3 equivalent" == m for m in messages)
    assert all(d.span is not None for d in e.value.diagnostics)


def test_lifetime_stop_and_i1_casts_have_no_v04_spelling():
    src = ("func @f(%a: i32) {\n  %t = alloca -> memref<f32x4>\n  lifetime_stop %t\n"
           "  %b = cast %a : i32 -> i1\n}\n")
    with pytest.raises(SourceError) as e:
        format_program_v04(parse(src, lang="v0.3"))
    assert [str(d.span) for d in e.value.diagnostics] == ["3.3-18", "4.3-26"]


# --- tlrun -----------------------------------------------------------------------


def test_tlrun_checks_converts_and_refuses_what_it_cannot_run_yet(tmp_path, capsys):
    k = tmp_path / "k.tl"
    k.write_text(EVERYTHING)
    assert cli.main([str(k), "--check", "--lang", "v0.4"]) == 0
    assert cli.main([str(k), "--emit", "ir"]) == 0
    assert capsys.readouterr().out == format_program_v04(parse(EVERYTHING, lang="v0.4"))
    old = tmp_path / "old.tl"
    old.write_text(V03)
    assert cli.main([str(old), "--emit", "ir", "--lang", "v0.4"]) == 0
    out = capsys.readouterr().out
    assert "%c0 = constant 0 : index" in out and "add %x, %c1 : f32" in out
    new = tmp_path / "new.tl"
    new.write_text(out)
    assert cli.main([str(new), "--emit", "ir", "--lang", "v0.3", "--from", "v0.4"]) == 0
    assert "arith.add %x, 1.0 : f32" in capsys.readouterr().out
    np.savez(tmp_path / "a.npz", **{n: np.zeros((8, 8), np.float32) for n in "AB"})
    cs = tmp_path / "cs.tl"
    cs.write_text("func @f(%A: memref<f32x8x8>, %B: memref<f32x8x8>) {\n"
                  "    %one = constant 1.0 : f32\n    cumsum %one, %A, 0, %one, %B\n}\n")
    assert cli.main([str(cs), "--args", str(tmp_path / "a.npz")]) == 0  # cumsum runs now
    capsys.readouterr()
    sg = tmp_path / "sg.tl"  # SPMD code runs too, given the sub-group size it depends on
    sg.write_text("func @f(%A: memref<f32x8x8>, %B: memref<f32x8x8>) {\n"
                  "    parallel {\n        %s = subgroup_size : i32\n    }\n}\n")
    assert cli.main([str(sg), "--args", str(tmp_path / "a.npz")]) == 1
    err = capsys.readouterr().err
    assert "subgroup_size" in err and "Traceback" not in err
    sg.write_text(sg.read_text().replace(") {", ") attributes{subgroup_size=8} {", 1))
    assert cli.main([str(sg), "--args", str(tmp_path / "a.npz")]) == 0


def test_a_v04_program_with_v03_equivalents_runs(tmp_path):
    from tlinterp import run

    src = ("func @f(%x: memref<f32x16>, %y: memref<f32x16>) {\n"
           "    %c0 = constant 0 : index\n    %c16 = constant 16 : index\n"
           "    %two = constant 2.0 : f32\n"
           "    foreach (%i) = (%c0), (%c16) {\n"
           "        %a = load %x[%i] : f32\n        %b = mul %a, %two : f32\n"
           "        store %b, %y[%i]\n    }\n}\n")
    out = run(src, {"x": np.arange(16, dtype=np.float32), "y": np.zeros(16, np.float32)})
    np.testing.assert_array_equal(out["y"], 2 * np.arange(16, dtype=np.float32))


def test_a_syntax_error_is_not_blamed_on_a_later_construct_of_the_line():
    """Found by the front-end campaign against tinytc: a whole program on one line, a
    syntax error early in it, and a stretch `store ... : i8` later that reads like v0.3's
    typed store: the error is reported where the parse stopped."""
    src = ("func @f(%a: memref<i8 x 2>, %b: memref<i8 x 2>) { %c0 = constant 0 : index "
           "%x = load %a[%c0] : i8 ) store %x, %b[%c0] %y = add %x, %x : i8 }")
    with pytest.raises(SourceError) as e:
        parse(src, "one.tl", lang="v0.4")
    [d] = e.value.diagnostics
    assert str(d.span) == "1.99-99" and d.message.startswith("expected an instruction")


def test_a_mixed_file_without_lang_is_one_error_at_the_foreign_construct():
    src = V04.replace("%x = load %a[%c0] : f32", "%x = load %a[%c0] : f32\n"
                      "    %y = cmp.lt %x, %x : f32")
    with pytest.raises(SourceError) as e:
        parse(src, "mixed.tl")  # the first marker (constant) makes it v0.4
    [d] = e.value.diagnostics
    assert str(d.span) == "4.10-15" and "v0.3 syntax" in d.message


# --- corpus/v04 (the v0.4 test kernels) ------------------------------------------------------

from pathlib import Path  # noqa: E402

V04_CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "v04"


@pytest.mark.parametrize("path", sorted((V04_CORPUS / "valid").glob("*.tl")), ids=lambda p: p.name)
def test_corpus_v04_valid_kernels_check(path):
    from tlinterp import check

    check(parse(path.read_text(encoding="utf-8"), str(path), lang="v0.4"))


@pytest.mark.parametrize("body, what", [
    ("%x = load %C[%z] : c64\n  %o = atomic_add %x, %C[%z] : c64",
     "an atomic access to c64 elements"),
    ("%x = load %C[%z] : c64\n  atomic_store %x, %C2[%z]", "an atomic access to c64 elements"),
])
def test_the_lowering_refuses_v04_leftovers_in_words(body, what, tmp_path, capsys):
    """What the OpenCL lowering cannot take (a 16-byte c64 element has no compare-and-swap) is
    a NotExecutable naming it at its range, from the API and from tlrun --impl opencl (exit
    2), never a KeyError from deep inside."""
    import tlgpu

    text = (f"func @k(%C: memref<c64 x 4>, %C2: memref<c64 x 4>) {{\n"
            f"  %z = constant 0 : index\n  {body}\n}}\n")
    with pytest.raises(NotExecutable, match=f"not yet lowered: {what} at "):
        tlgpu.lower(text)
    kernel = tmp_path / "k.tl"
    kernel.write_text(text)
    args = {"C": np.zeros(4, np.complex128), "C2": np.zeros(4, np.complex128)}
    np.savez(tmp_path / "a.npz", **args)
    assert cli.main([str(kernel), "--args", str(tmp_path / "a.npz"), "--impl", "opencl"]) == 2
    err = capsys.readouterr().err
    assert f"not yet lowered: {what}" in err and "Traceback" not in err


def test_names_are_scoped_as_in_v03_no_shadowing_sibling_reuse_allowed():
    """tinytc v0.4.0 rejects a name visible in an enclosing region ("already used"); regions
    side by side may reuse one. The v0.4 parser once let an inner region shadow a name."""
    head = "func @k(%A: memref<i32 x 4>) {\n    %c0 = constant 0 : index\n" \
           "    %n = constant 4 : index\n"
    shadow = head + ("    foreach (%i) = (%c0), (%n) {\n        %c0 = constant 1 : index\n"
                     "        %x = constant 1 : i32\n        store %x, %A[%c0]\n    }\n}\n")
    with pytest.raises(SourceError) as e:
        parse(shadow, "s.tl", lang="v0.4")
    d = e.value.diagnostics[0]
    assert (d.span.line, d.span.col) == (5, 9)
    assert "%c0 shadows the definition at 2.5" in d.message
    twice = head + "    %n = constant 5 : index\n}\n"
    with pytest.raises(SourceError, match=r"%n is already defined at 3\.5"):
        parse(twice, "t.tl", lang="v0.4")
    siblings = head + "".join(
        "    foreach (%i) = (%c0), (%n) {\n        %x = constant 1 : i32\n"
        "        store %x, %A[%i]\n    }\n" for _ in range(2)) + "    %x = constant 2 : i32\n}\n"
    check(parse(siblings, "u.tl", lang="v0.4"))
