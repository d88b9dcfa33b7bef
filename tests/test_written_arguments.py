"""`tlinterp.lang.effects.written_arguments`: the one IR walk that says which arguments a function
may write (the interpreter's race tracking, the lowering's `const restrict`, red-zone reports).

Hand-written kernels pin down every way of writing; over the corpus and generated kernels the
walk equals what the lowering itself writes, `lower_program` lowers each function once, and
its OpenCL C is byte-identical to the former two-pass procedure (replicated here)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from benches import bench

import tlinterp
from fuzz.campaign.redzones import writers
from fuzz.conform.corpus import default_corpus, load_corpus
from fuzz.strategies import sample_function, to_program
from tlgpu import LoweringConfig
from tlgpu.lowering import program as lowering
from tlgpu.lowering.barriers import LOCAL_ROOTS
from tlgpu.lowering.function import FunctionLowerer
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError
from tlinterp.lang.effects import written_arguments
from tlinterp.lang.types import GroupType, MemrefType

FUZZ_SEEDS = range(200)


def fn_of(text: str, name=None) -> ir.Function:
    return tlinterp.check(tlinterp.parse(text)).function(name)


def written(text: str) -> set[str]:
    return set(written_arguments(fn_of(text)))


# --- (a) every way of writing, by hand -------------------------------------------------------

VIEWS = """
func @k(%A: memref<f32x4x4>, %B: memref<f32x8>, %C: memref<f32x4x4>, %D: memref<f32x4x4>,
        %R: memref<f32x4x4>, %S: memref<f32x4>, %n: index) {
  %x = load %R[0, 0] : memref<f32x4x4>
  %s1 = subview %A[1:3, :] : memref<f32x4x4>
  %s2 = subview %s1[0, 1:2] : memref<f32x3x4,strided<1,4>>
  store %x, %s2[1] : memref<f32x2,strided<4>>
  foreach %i = 0, 4 {
    %e = expand %B[0->2x4] : memref<f32x8>
    store %x, %e[1, %i] : memref<f32x2x4>
  }
  for %j = 0, %n {
    %c = cmp.lt %j, 2 : index
    if %c {
      %f = fuse %C[0, 1] : memref<f32x4x4>
      %d = subview %f[3:4] : memref<f32x16>
      store %x, %d[%j] : memref<f32x4>
    } else {
      %y = load %S[%j] : memref<f32x4>
      %dd = subview %D[%j, :] : memref<f32x4x4>
      %ddd = subview %dd[1:2] : memref<f32x4,strided<4>>
      store %y, %ddd[0] : memref<f32x2,strided<4>>
    }
  }
  %r = subview %R[1, :] : memref<f32x4x4>
  %z = load %r[2] : memref<f32x4,strided<4>>
}
"""


def test_stores_through_views_of_views_in_every_region():
    fn = fn_of(VIEWS)
    w = written_arguments(fn)
    assert set(w) == {"A", "B", "C", "D"}  # %R and %S are only read, %n is a scalar
    assert all(kind == "store" for v in w.values() for kind, _ in v)
    assert [s.line for _, s in w["A"]] == [7]
    assert [s.line for _, s in w["B"]] == [10]  # inside a foreach
    assert [s.line for _, s in w["C"]] == [17]  # fuse, subview, in the then branch in a for
    assert [s.line for _, s in w["D"]] == [22]  # subview of subview in the else branch


COLLECTIVES = {
    "axpby.n": "%a, %beta, %o : f32, memref<f32x4>, f32, memref<f32x4>",
    "axpby.t": "%m, %beta, %om : f32, memref<f32x4x4>, f32, memref<f32x4x4>",
    "sum.n": "%a, %beta, %o0 : f32, memref<f32x4>, f32, memref<f32>",
    "sum.t": "%m, %beta, %o : f32, memref<f32x4x4>, f32, memref<f32x4>",
    "gemm.n.t": "%m, %m2, %beta, %om : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
                "memref<f32x4x4>",
    "gemv.n": "%m, %a, %beta, %o : f32, memref<f32x4x4>, memref<f32x4>, f32, memref<f32x4>",
    "ger": "%a, %b, %beta, %om : f32, memref<f32x4>, memref<f32x4>, f32, memref<f32x4x4>",
    "hadamard_product": "%a, %b, %beta, %o : f32, memref<f32x4>, memref<f32x4>, f32, "
                        "memref<f32x4>",
}


def collective_kernel(head: str, atomic: bool) -> str:
    op = head + (".atomic" if atomic else "")
    return f"""
func @k(%A: memref<f32x4>, %B: memref<f32x4>, %M: memref<f32x4x4>, %M2: memref<f32x4x4>,
        %O: memref<f32x8>, %OM: memref<f32x4x4>, %O0: memref<f32x4>, %beta: f32) {{
  %a = subview %A[0:4] : memref<f32x4>
  %b = subview %B[0:4] : memref<f32x4>
  %m = subview %M[:, :] : memref<f32x4x4>
  %m2 = subview %M2[:, :] : memref<f32x4x4>
  %o = subview %O[2:4] : memref<f32x8>
  %om = subview %OM[:, :] : memref<f32x4x4>
  %o0 = subview %O0[1] : memref<f32x4>
  {op} 1.0, {COLLECTIVES[head]}
}}
"""


@pytest.mark.parametrize("atomic", [False, True], ids=["plain", "atomic"])
@pytest.mark.parametrize("head", COLLECTIVES)
def test_a_collective_writes_its_output_only(head, atomic):
    fn = fn_of(collective_kernel(head, atomic))
    (inst,) = [i for i in ir.walk(fn.body) if isinstance(i, ir.BLAS)]
    assert inst.atomic == atomic
    out = {"o": "O", "om": "OM", "o0": "O0"}[getattr(inst, inst.output()).name]
    assert written_arguments(fn) == {out: [(type(inst).__name__.lower(), inst.span)]}


def test_every_blas_class_is_covered_above():
    seen = {type(i) for h in COLLECTIVES for i in ir.walk(fn_of(collective_kernel(h, False)).body)}
    assert set(ir.BLAS) <= seen


GROUPS = """
func @k(%G: group<memref<f32x4>>, %H: group<memref<f32x4>, offset: ?>, %K: group<memref<f32x4>>,
        %R: memref<f32x4>) {
  %g = group_id
  %h = load %H[%g] : group<memref<f32x4>, offset: ?>
  %x = load %h[1] : memref<f32x4>
  %m = load %G[%g] : group<memref<f32x4>>
  %s = subview %m[1:2] : memref<f32x4>
  store %x, %s[0] : memref<f32x2>
  %k = load %K[%g] : group<memref<f32x4>>
  foreach %i = 0, 4 {
    %r = load %R[%i] : memref<f32x4>
  }
  axpby.n 1.0, %R, 0.0, %k : f32, memref<f32x4>, f32, memref<f32x4>
}
"""


def test_a_write_through_a_loaded_group_member_writes_the_group():
    w = written_arguments(fn_of(GROUPS))
    assert {n: [k for k, _ in v] for n, v in w.items()} == {"G": ["store"], "K": ["axpby"]}


REUSED = """
func @k(%P: memref<f32x4>, %Q: memref<f32x4>, %c: i1) {
  if %c {
    %v = subview %P[0:2] : memref<f32x4>
    %x = load %v[0] : memref<f32x2>
  }
  %v = alloca -> memref<f32x2>
  store 1.0, %v[0] : memref<f32x2>
  foreach %i = 0, 2 {
    %w = subview %P[%i:1] : memref<f32x4>
    %y = load %w[0] : memref<f32x1>
  }
  foreach %i = 0, 2 {
    %w = subview %Q[%i:1] : memref<f32x4>
    store 2.0, %w[0] : memref<f32x1>
  }
}
"""


def test_a_name_means_its_latest_definition():
    """Names are scoped by region: %v, a view of %P in a closed branch, is an alloca after
    it, and %w is a view of %P in one loop and of %Q in the next."""
    assert written(REUSED) == {"Q"}


def test_allocas_and_read_only_arguments_stay_out():
    text = """
func @k(%A: memref<f32x4>, %B: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  axpby.n 1.0, %A, 0.0, %t : f32, memref<f32x4>, f32, memref<f32x4>
  %e = expand %t[0->2x2] : memref<f32x4>
  store 3.0, %e[1, 1] : memref<f32x2x2>
  %x = load %B[0] : memref<f32x4>
}
"""
    assert written_arguments(fn_of(text)) == {}


def test_a_view_yielded_out_of_a_region_counts_as_written():
    """The grammar only lets scalars out of an `if`; hand-built IR that yields a view loses
    nothing: the view's argument counts as written."""
    text = """
func @k(%A: memref<f32x4>, %c: i1) {
  %s = subview %A[0:2] : memref<f32x4>
  %r = if %c -> (i32) {
    yield 0 : i32
  } else {
    yield 1 : i32
  }
}
"""
    fn = tlinterp.parse(text).function()
    assert written_arguments(fn) == {}
    (y, _) = [i for i in ir.walk(fn.body) if isinstance(i, ir.Yield)]
    y.values = (ir.Value("s"),)
    assert [k for k, _ in written_arguments(fn)["A"]] == ["yield"]


def test_redzone_writers_is_the_walk():
    for text in (VIEWS, GROUPS, REUSED):
        fn = fn_of(text)
        assert writers(fn) == written_arguments(fn)


def test_the_interpreter_tracks_races_only_on_written_arguments(monkeypatch):
    import numpy as np

    from tlinterp.interp import execute, run

    seen = {}
    real = execute.Env.set

    def spy(self, name, v):
        if self.parent is None and hasattr(v, "buf"):
            seen[name] = v.buf.may_be_written
        real(self, name, v)

    monkeypatch.setattr(execute.Env, "set", spy)
    program = tlinterp.check(tlinterp.parse(VIEWS))
    args = {n: np.zeros(s, np.float32) for n, s in
            (("A", (4, 4)), ("B", 8), ("C", (4, 4)), ("D", (4, 4)), ("R", (4, 4)), ("S", 4))}
    run(program, {**args, "n": np.int64(3)}, groups=1)
    assert {n: seen[n] for n in args} == {n: n in "ABCD" for n in args}


# --- (b) the walk against the lowering, over the corpus and generated kernels ---------------

def corpus_programs() -> list[tuple[str, ir.Program]]:
    out = []
    for case in load_corpus(default_corpus()):
        if case.lang != "v0.3":  # the OpenCL lowering's language (v0.4 SPMD code it refuses)
            continue
        try:
            out.append((case.id, tlinterp.check(tlinterp.parse(case.source(),
                                                                 lang=case.lang))))
        except tlinterp.TLError:
            continue
    return out


def fuzz_programs() -> list[tuple[str, ir.Program]]:
    return [(f"fuzz-{seed}", to_program([sample_function(seed)[0]])) for seed in FUZZ_SEEDS]


@pytest.fixture(scope="module")
def programs() -> list[tuple[str, ir.Program]]:
    ps = corpus_programs()
    assert len(ps) >= 150
    return ps + fuzz_programs()


# configs whose lowering differs in ways that touch memory roots (staging, tiles, barriers)
CONFIGS = {
    "default": LoweringConfig(),
    "cpu": LoweringConfig().for_device(gpu=False),
    "staged": LoweringConfig(local_staging_min_reuse=1, work_group_size=(4, 4)),
    "untiled": LoweringConfig(register_tiles=False, minimise_barriers=False,
                              reuse_local_memory=False, restrict_read_only=True),
}


def _argument_roots(fn: ir.Function) -> set[str]:
    return {a.value.name for a in fn.args if isinstance(a.type, (MemrefType, GroupType))}


@pytest.mark.parametrize("config", CONFIGS)
def test_the_walk_equals_what_the_lowering_writes(programs, config):
    """Equality, not just a superset: the lowering records a write for every store and
    collective output it lowers (whatever its shapes or config), and it lowers every
    instruction of every region; names bind the same way in both. Its other roots are local
    memory only (the alloca slab, gemm staging)."""
    config = CONFIGS[config].for_device(gpu=True)
    n = 0
    for name, program in programs:
        for fn in program.functions:
            geo = lowering.choose_geometry(fn, config)
            lw = FunctionLowerer(program, fn, config, geo, {}, read_only=frozenset())
            try:
                lw.lower()
            except BackendError:
                continue  # refused (e.g. local memory): nothing to compare
            args = _argument_roots(fn)
            assert set(written_arguments(fn)) == lw.written & args, name
            assert lw.written - args <= LOCAL_ROOTS, name
            n += 1
    assert n >= 350


# the former `lower_program` that bench/lowering_time.py keeps: lower, then lower again with
# the memref arguments the first pass never wrote as `const restrict`; (source, lower calls)
two_pass_source = bench("lowering_time").two_pass


@pytest.mark.parametrize("config", CONFIGS)
def test_one_lowering_per_function_and_the_same_c(programs, config, monkeypatch):
    cfg = CONFIGS[config]
    calls = 0
    real = FunctionLowerer.lower

    def counted(self):
        nonlocal calls
        calls += 1
        return real(self)

    compared = twice = 0
    for name, program in programs:
        try:
            old, old_calls = two_pass_source(program, cfg)
        except BackendError:
            with pytest.raises(BackendError):
                lowering.lower_program(program, config=cfg)
            continue
        monkeypatch.setattr(FunctionLowerer, "lower", counted)
        calls = 0
        new = lowering.lower_program(program, config=cfg)
        monkeypatch.setattr(FunctionLowerer, "lower", real)
        assert calls == len(program.functions), name
        assert new.source == old, name
        compared += 1
        twice += old_calls > calls
    assert compared >= 350 and twice >= 100  # most kernels were lowered twice before


def test_const_restrict_parameters_are_the_unwritten_memref_arguments(programs):
    for name, program in programs[:400]:
        for fn in program.functions:
            try:
                src = lowering.lower_program(program, fn.name).source
            except BackendError:
                continue
            w = written_arguments(fn)
            for a in fn.args:
                if isinstance(a.type, MemrefType):
                    const = re.search(rf" restrict v_{a.value.name}\b", src) is not None
                    assert const == (a.value.name not in w), (name, a.value.name)


def test_restrict_read_only_off_declares_nothing_const(programs):
    cfg = LoweringConfig(restrict_read_only=False)
    for _, program in programs[:50]:
        try:
            src = lowering.lower_program(program, config=cfg).source
        except BackendError:
            continue
        assert " restrict " not in src


def test_arguments_named_like_local_memory_are_global_memory():
    """The lowering names alloca memory and gemm staging with roots no identifier can spell:
    an argument called %local is global memory like any other (read only: const; written by
    one collective and read by the next: a global fence between them)."""
    read = """
func @k(%local: memref<f32x4>, %out: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  axpby.n 1.0, %local, 0.0, %t : f32, memref<f32x4>, f32, memref<f32x4>
  axpby.n 1.0, %t, 0.0, %out : f32, memref<f32x4>, f32, memref<f32x4>
}
"""
    src = lowering.lower_program(tlinterp.check(tlinterp.parse(read))).source
    assert "global const float* restrict v_local," in src
    written = """
func @k(%local: memref<f32x4>, %stage: memref<f32x4>, %out: memref<f32x4>) {
  axpby.n 1.0, %stage, 0.0, %local : f32, memref<f32x4>, f32, memref<f32x4>
  axpby.n 1.0, %local, 0.0, %out : f32, memref<f32x4>, f32, memref<f32x4>
}
"""
    src = lowering.lower_program(tlinterp.check(tlinterp.parse(written))).source
    assert "global float* v_local," in src and "global const float* restrict v_stage," in src
    assert "CLK_GLOBAL_MEM_FENCE" in src


def test_a_write_the_walk_missed_is_an_internal_error(monkeypatch):
    program = tlinterp.check(tlinterp.parse(collective_kernel("gemm.n.t", False)))
    monkeypatch.setattr(lowering, "written_arguments", lambda fn: {})
    with pytest.raises(BackendError, match=r"internal: .*%OM.*read-only"):
        lowering.lower_program(program)
    monkeypatch.setattr(lowering, "written_arguments", written_arguments)
    lowering.lower_program(program)
    off = dataclasses.replace(LoweringConfig(), restrict_read_only=False)
    monkeypatch.setattr(lowering, "written_arguments", lambda fn: {})
    lowering.lower_program(program, config=off)  # nothing declared const: nothing to check
