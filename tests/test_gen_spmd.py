"""Generated SPMD v0.4 kernels (fuzz.gen.spmd): they check, print and parse back to the same
IR, run on the interpreter with its undefined-behaviour detector and report none; every
construct family is generated; and their results observe the rules: an interpreter with one
rule planted wrong computes a different result for some generated kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.gen.spmd import sample_spmd, spmd_cases, spmd_program
from tlinterp.interp import coopmatrix, run, subgroups
from tlinterp.lang import ir
from tlinterp.lang.types import CoopMatrixType, MemrefType

EXAMPLES = min(settings.default.max_examples, 100)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(spmd_cases())
def test_generated_kernels_round_trip_and_run_without_undefined_behaviour(case):
    fn, args, groups = case
    program = spmd_program(fn)  # printed as v0.4, parsed with lang="v0.4", checked
    assert program.functions[0] == fn
    out = run(program, args, groups=groups, check=True)  # raises on undefined behaviour
    for a in fn.args:
        assert np.asarray(out[a.value.name]).shape == np.asarray(args[a.value.name]).shape


def _kinds(fn: ir.Function) -> set[str]:
    """IR classes, sub-group operations and memref element types of a function."""
    kinds = {type(i).__name__ for i in ir.walk(fn.body)}
    kinds |= {"subgroup_" + i.op for i in ir.walk(fn.body) if isinstance(i, ir.SubgroupOp)}
    kinds |= {"reduce." + i.mode for i in ir.walk(fn.body) if isinstance(i, ir.CoopReduce)}
    kinds |= {"load." + ("t" if i.trans else "n") + (i.checked or "")
              for i in ir.walk(fn.body) if isinstance(i, ir.CoopLoad)}
    kinds |= {"use." + i.type.use for i in ir.walk(fn.body) if isinstance(i, ir.CoopLoad)}
    for a in fn.args:
        t = getattr(a.type, "memref", a.type)
        if isinstance(t, MemrefType):
            kinds.add("type." + t.element.value)
        if not isinstance(a.type, MemrefType):
            kinds.add("group argument")
    if any(isinstance(i, ir.CoopStore) and i.atomic for i in ir.walk(fn.body)):
        kinds.add("atomic coopmatrix store")
    if any(isinstance(i, ir.For) and i.inits for i in ir.walk(fn.body)):
        kinds.add("loop-carried")
    if any(isinstance(i, ir.If) and i.results for i in ir.walk(fn.body)):
        kinds.add("if yields")
    return kinds


FAMILIES = {
    "Parallel", "Builtin", "Barrier", "Alloca", "SubgroupBroadcast", "If", "if yields", "For",
    "loop-carried", "ForeachTile", "Cast", "ArithUnary", "group argument",
    *(f"subgroup_{k}_{o}" for k in ("reduce", "inclusive_scan", "exclusive_scan")
      for o in ("add", "max", "min")),
    "CoopLoad", "CoopStore", "CoopMulAdd", "CoopConstruct", "CoopScale", "CoopExtract",
    "CoopInsert", "CoopReduce", "CoopApply", "CoopPrefetch", "reduce.row", "reduce.column",
    "AtomicLoad", "AtomicStore", "AtomicUpdate", "CoopAtomicUpdate", "atomic coopmatrix store",
    "use.matrix_a", "use.matrix_b", "use.matrix_acc", "load.n", "load.t", "load.nrows",
    "load.tcols", "load.nboth",
    *(f"type.{t}" for t in ("i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "c32",
                            "c64")),
}


def test_every_construct_family_is_generated():
    # plain random sampling of the same builder: a bounded number of kernels reaches them all
    seen: set[str] = set()
    for seed in range(300):
        seen |= _kinds(sample_spmd(seed)[0])
    assert FAMILIES - seen == set()


def test_knobs_bias_the_mix_and_unknown_ones_are_rejected():
    for seed in range(20):
        fn = sample_spmd(seed, weights={"coop": 0}, foreach_tile_percent=0,
                         subgroup_sizes=(8,))[0]
        kinds = _kinds(fn)
        assert fn.subgroup_size == 8
        assert not any(k.startswith("Coop") for k in kinds) and "ForeachTile" not in kinds
    with pytest.raises(TypeError, match="no_such_knob"):
        spmd_cases(no_such_knob=1)
    with pytest.raises(TypeError, match="nope"):
        sample_spmd(0, weights={"nope": 1})
    with pytest.raises(ValueError, match="not \\['i1', 'bool'\\]"):
        sample_spmd(0, types=("f32", "i1", "bool"))
    fn = sample_spmd(0, types=("f16",), foreach_tile_percent=100)[0]
    # besides f16 data, only the work-item ids (i32, index) may be stored
    assert {getattr(a.type, "memref", a.type).element.value for a in fn.args} - \
        {"i32", "index"} == {"f16"}


def _skip_last_lane(wg, x, op, ty):
    inc = wg.as_subgroups(subgroups.inclusive_scan(wg, x, op, ty))
    return wg.as_items(np.broadcast_to(inc[:, :, -2:-1], inc.shape).copy())


def _exclusive_zero(wg, x, op, ty):
    out = wg.as_subgroups(subgroups.inclusive_scan(wg, x, op, ty))
    out = np.concatenate([np.zeros_like(out[:, :, :1]), out[:, :, :-1]], axis=2)
    return wg.as_items(out)


class _RowsSwapped(coopmatrix.Layout):
    """The layout with the rows of each column walked backwards (a wrong register layout)."""

    def position(self, p, v):
        i, j = super().position(p, v)
        return self.M - 1 - i, j


def _swap_layout(monkeypatch):
    import tlinterp.interp.spmd_exec as spmd_exec

    monkeypatch.setattr(spmd_exec.cm, "Layout", _RowsSwapped)


PLANTED = {
    "subgroup reduction skips the last lane":
        lambda mp: mp.setattr(subgroups, "reduce", _skip_last_lane),
    "exclusive scan starts from 0 instead of the identity":
        lambda mp: mp.setattr(subgroups, "exclusive_scan", _exclusive_zero),
    "coopmatrix rows laid out backwards": _swap_layout,
}


def _outputs(fn, args, groups) -> dict[str, bytes] | str:
    try:
        out = run(spmd_program(fn), args, groups=groups)
    except Exception as e:  # a planted bug may also make a kernel fail: also a difference
        return type(e).__name__
    return {k: np.asarray(v).tobytes() for k, v in out.items()}


@pytest.mark.parametrize("bug", PLANTED)
def test_a_planted_wrong_rule_changes_some_generated_result(bug, monkeypatch):
    kernels = [sample_spmd(seed)[:3] for seed in range(40)]
    right = [_outputs(*k) for k in kernels]
    with monkeypatch.context() as mp:
        PLANTED[bug](mp)
        wrong = [_outputs(*k) for k in kernels]
    assert all(isinstance(r, dict) for r in right)
    assert sum(r != w for r, w in zip(right, wrong)) >= 1


def test_atomic_types_restrict_every_atomic():
    atomics = 0
    for seed in range(60):
        fn = sample_spmd(seed, atomic_types=("i32", "f64"), weights={"atomic": 6})[0]
        elem = {a.value.name: getattr(a.type, "memref", a.type).element for a in fn.args}
        for i in ir.walk(fn.body):
            if isinstance(i, ir.Load) and hasattr(i.type, "memref"):  # a group's member
                elem[i.result.name] = i.type.memref.element
            if isinstance(i, (ir.AtomicLoad, ir.AtomicUpdate, ir.CoopAtomicUpdate)) or \
                    getattr(i, "atomic", False):
                assert elem[i.operand.name].value in ("i32", "f64"), (seed, i)
                atomics += 1
    assert atomics >= 30


def test_extract_padding_off_extracts_only_matrix_entries():
    from tlinterp.interp.coopmatrix import Layout

    extracts = 0
    for seed in range(60):
        fn = sample_spmd(seed, extract_padding=False)[0]
        types = {i.result.name: t for i in ir.walk(fn.body)  # coopmatrix results (casts too)
                 if isinstance(t := getattr(i, "to_type", getattr(i, "type", None)),
                               CoopMatrixType)}
        for i in ir.walk(fn.body):  # carried by a for (in its body and after), yielded by an if
            if isinstance(i, (ir.For, ir.If)):
                carried = [v for v, _ in i.inits] if isinstance(i, ir.For) else i.results
                types |= {v.name: t for vs in (i.results, carried)
                          for v, t in zip(vs, i.result_types)}
        for i in ir.walk(fn.body):
            if isinstance(i, ir.CoopExtract):
                t = types[i.operand.name]
                cols = Layout(t.rows, t.cols, t.component.value, t.use, fn.subgroup_size) \
                    .positions[1]
                assert cols[:, i.index].max() < t.cols, (seed, i)
                extracts += 1
    assert extracts >= 20
