"""Every scalar operation declared in tlinterp/lang/ops.py is handled by every pass.

The static passes derive from the table (grammar, parser words, checker rule, result type,
generator lists, profiles); the semantics live in one table per pass keyed by the same names
and type classes. `missing()` names, for each declared (operation, type class), the passes
without an entry: NumPy semantics, the fast path, OpenCL C, value ranges, the generator, a
corpus case with an independent reference, and the row of docs/semantics.md. The planted rows
at the end show that it reports exactly the passes that lack one.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.conform.corpus import default_corpus, load_corpus
from fuzz.gen import core as gen_core
from fuzz.gen import ranges
from fuzz.gen.params import GenParams
from fuzz.profiles import INSTRUCTIONS as _INSTRUCTIONS
from fuzz.profiles import load as load_profile
from fuzz.profiles import names as profile_names
from tlgpu.lowering import collectives as lower_collectives
from tlgpu.lowering import scalar as lower_scalar
from tlinterp.front.pipeline import executable
from tlinterp.interp import collectives as interp_collectives
from tlinterp.interp import fastpath
from tlinterp.interp import scalar as interp_scalar
from tlinterp.lang import ir, ops, typerules
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.ops import BINARY, BOOL, COMPARE, FLOAT, INT, UNARY, ScalarOp
from tlinterp.lang.types import V03_SCALARS, MemrefType, ScalarType
from tlinterp.lang.v03.printer import format_program
from tlinterp.lang.v04 import printer as printer_v04
from tlinterp.lang.v04.printer import format_program_v04

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = {INT: ScalarType.i32, FLOAT: ScalarType.f32, BOOL: ScalarType.i1}
WORDS = {INT: "integer", FLOAT: "float", BOOL: "i1"}


def _semantics(module) -> Callable[[ScalarOp, str], bool]:
    """A pass whose tables are BINARY/UNARY[type class][name] and COMPARE[name]."""
    def has(o: ScalarOp, cls: str) -> bool:
        if o.family == COMPARE:
            return o.name in module.COMPARE
        return o.name in getattr(module, o.family.upper()).get(cls, {})
    return has


def _ranges(o: ScalarOp, cls: str) -> bool:
    if o.family == COMPARE or cls == BOOL:
        return True  # results in [0, 1]
    return o.name in _range_table(o, cls)


def _range_table(o: ScalarOp, cls: str) -> dict:
    return {(BINARY, INT): ranges.INT_BINARY, (BINARY, FLOAT): ranges.FLOAT_BINARY,
            (UNARY, INT): ranges.INT_UNARY, (UNARY, FLOAT): ranges.FLOAT_UNARY}[o.family, cls]


def _generator(o: ScalarOp, cls: str) -> bool:
    """Generated on the class, or explicitly without a range model there (then never)."""
    if o.family == COMPARE:
        return o.name in gen_core._CONDS
    if cls != BOOL and _range_table(o, cls).get(o.name) is ranges.NO_MODEL:
        return True
    g = gen_core.CoreGenerator(random.Random(0), GenParams(), "k")
    return o.name in g.op_names(o.family, EXAMPLE[cls])


@cache
def _corpus_coverage() -> frozenset:
    """(mnemonic, type class) of every valid corpus case's tags."""
    out = set()
    for case in load_corpus(default_corpus()):
        if case.kind != "valid" or case.lang != "v0.3":  # the v0.3 ops and type classes
            continue
        classes = {ops.type_class(ScalarType(t)) for t in case.tags["type"]}
        out.update(itertools.product(case.tags["instruction"], classes))
    return frozenset(out)


def _corpus(o: ScalarOp, cls: str) -> bool:
    return (o.mnemonic, cls) in _corpus_coverage()


def doc_rows() -> dict[str, tuple[set, set]]:
    """docs/semantics.md's table of scalar operations: mnemonic -> (type words, UB kinds)."""
    text = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    rows = {}
    for m in re.finditer(r"^\| `((?:arith|cmp)\.\w+)` \| ([^|]+) \| ([^|]+) \|$", text, re.M):
        kinds = {k.strip() for k in m.group(3).split(",")} - {"—"}
        rows[m.group(1)] = ({w.strip() for w in m.group(2).split(",")}, kinds)
    return rows


def _docs(o: ScalarOp, cls: str) -> bool:
    return doc_rows().get(o.mnemonic) == ({WORDS[c] for c in o.accepts}, set(o.ub))


PASSES: dict[str, Callable[[ScalarOp, str], bool]] = {
    "numpy": _semantics(interp_scalar),
    "fast path": _semantics(fastpath),
    "OpenCL C": _semantics(lower_scalar),
    "value ranges": _ranges,
    "generator": _generator,
    "corpus": _corpus,
    "docs": _docs,
}


def missing() -> dict[tuple[str, str], list[str]]:
    """(mnemonic, type class) -> the passes without an entry for it."""
    out = {}
    for o in ops.OPS:
        for cls in sorted(o.accepts):
            gone = [name for name, has in PASSES.items() if not has(o, cls)]
            if gone:
                out[o.mnemonic, cls] = gone
    return out


def test_every_declared_operation_has_an_entry_in_every_pass():
    assert missing() == {}


def test_a_planted_operation_is_missing_in_exactly_the_passes_without_its_entries(monkeypatch):
    fake = ScalarOp(BINARY, "fake", frozenset({INT}))
    monkeypatch.setattr(ops, "OPS", ops.OPS + (fake,))
    assert missing() == {("arith.fake", INT): list(PASSES)}


def test_a_removed_entry_is_reported_for_its_pass_and_class_only(monkeypatch):
    monkeypatch.delitem(fastpath.BINARY[FLOAT], "min")
    monkeypatch.delitem(ranges.INT_UNARY, "not")
    assert missing() == {("arith.min", FLOAT): ["fast path"],
                         ("arith.not", INT): ["value ranges", "generator"]}


def test_no_range_model_is_an_explicit_entry_the_generator_respects(monkeypatch):
    monkeypatch.setitem(ranges.INT_BINARY, "max", ranges.NO_MODEL)
    g = gen_core.CoreGenerator(random.Random(0), GenParams(), "k")
    assert "max" not in g.op_names(BINARY, ScalarType.i64)
    assert "min" in g.op_names(BINARY, ScalarType.i64)
    assert missing() == {}


# --- collectives ---------------------------------------------------------------------------
# The BLAS classes of tlinterp/lang/ir.py declare their static facts; the grammars, parsers,
# printers and checkers of both versions, the generator and the profiles derive from them, and
# what a collective computes lives in the interpreter's `_PRODUCTS` and the lowering's
# `_PROBLEMS`. `missing_collectives()` names, per class, the passes that do not handle it: a
# sample instance (every transposable matrix transposed) must print, parse back equal and
# check in each version, run on the interpreter and lower to OpenCL C.

def sample(cls: type) -> ir.Program:
    """One function running one `cls` on f32 arguments of fitting static shapes."""
    out_order = max(o for o in cls.role(cls.output()).orders if o <= 2)
    shapes = {**cls.input_shapes((3, 5)[:out_order], 4), cls.output(): (3, 5)[:out_order]}
    kw: dict = dict(atomic=False, alpha=Const(1.5, True), beta=Const(0.5, True),
                    alpha_type=ScalarType.f32, beta_type=ScalarType.f32)
    args = []
    for r in cls.ROLES:
        op_shape = shapes[r.field]
        flip = r.trans is not None and len(op_shape) == 2
        if r.trans:
            kw[r.trans] = flip
        t = MemrefType.make(ScalarType.f32, op_shape[::-1] if flip else op_shape)
        kw[r.field], kw[r.field + "_type"] = Value(r.field), t
        args.append(ir.Argument(Value(r.field), t))
    inst = cls(**kw)
    return ir.Program((ir.Function("k", tuple(args), ir.Region((inst,))),), lang="v0.3")


def _v03(cls: type) -> bool:
    p = sample(cls)
    return tlinterp.check(tlinterp.parse(format_program(p), lang="v0.3")) == p


def _v04(cls: type) -> bool:
    p = sample(cls)
    q = tlinterp.parse(format_program_v04(p), lang="v0.4")
    tlinterp.check(q)  # the v0.4 checker
    return executable(q).functions == p.functions


def _interpreter(cls: type) -> bool:
    p = sample(cls)
    rng = np.random.default_rng(0)
    args = {a.value.name: rng.standard_normal(a.type.shape).astype(np.float32)
            for a in p.functions[0].args}
    out = tlinterp.run(p, args, groups=1)
    return cls in interp_collectives._PRODUCTS and cls.output() in out


def _lowering(cls: type) -> bool:
    # collectives.py opens each collective's block with its class name
    return cls in lower_collectives._PROBLEMS and f"/* {cls.__name__.lower()} */" in tlgpu.lower(
        sample(cls))


def _generator(cls: type) -> bool:
    return GenParams().collective_weights.get(cls.__name__.lower(), 0) > 0


def _collective_corpus(cls: type) -> bool:
    """A valid case tagged with the mnemonic (or the generator's kind: `hadamard`)."""
    return any(m in (cls.MNEMONIC, cls.__name__.lower()) for m, _ in _corpus_coverage())


def _collective_docs(cls: type) -> bool:
    text = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    return re.search(rf"^\| `{re.escape(cls.MNEMONIC)}` \|", text, re.M) is not None


COLLECTIVE_PASSES: dict[str, Callable[[type], bool]] = {
    "v0.3 parser/printer/checker": _v03,
    "v0.4 parser/printer/checker": _v04,
    "interpreter": _interpreter,
    "lowering": _lowering,
    "generator": _generator,
    "profiles": lambda cls: cls.MNEMONIC in _INSTRUCTIONS,
    "corpus": _collective_corpus,
    "docs": _collective_docs,
}


def _handles(has: Callable[[type], bool], cls: type) -> bool:
    try:
        return bool(has(cls))
    except Exception:  # a pass that cannot take the class at all lacks it
        return False


def missing_collectives() -> dict[str, list[str]]:
    """mnemonic -> the passes that do not handle the collective."""
    out = {}
    for cls in ir.BLAS:
        gone = [name for name, has in COLLECTIVE_PASSES.items() if not _handles(has, cls)]
        if gone:
            out[cls.MNEMONIC] = gone
    return out


def test_every_declared_collective_is_handled_by_every_pass():
    assert missing_collectives() == {}


def test_a_planted_collective_is_missing_in_every_pass(monkeypatch):
    @dataclasses.dataclass
    class Toy(ir.Product):  # a dot product: c := alpha a.b + beta c
        MNEMONIC: ClassVar[str] = "toy_dot"
        ROLES: ClassVar = (ir.MemrefRole("a", "a", (1,)), ir.MemrefRole("b", "b", (1,)),
                           ir.MemrefRole("c", "c", (0,)))
        RELATIONS: ClassVar = (("K", ("a", 0), ("b", 0)),)
        REDUCED: ClassVar = "a"

    monkeypatch.setattr(ir, "BLAS", ir.BLAS + (Toy,))
    assert missing_collectives() == {"toy_dot": list(COLLECTIVE_PASSES)}


def test_a_removed_entry_is_reported_for_its_collective_and_pass_only(monkeypatch):
    monkeypatch.delitem(lower_collectives._PROBLEMS, ir.Ger)
    monkeypatch.delitem(printer_v04._HEADERS, ir.Sum)
    monkeypatch.delitem(interp_collectives._PRODUCTS, ir.Gemv)
    assert missing_collectives() == {"gemv": ["interpreter"], "ger": ["lowering"],
                                     "sum": ["v0.4 parser/printer/checker"]}


def test_cast_declares_what_the_semantics_reports():
    """ops.CAST's undefined behaviour is what casting edge values reports; its linearity is
    what the generator and the oracle use."""
    seen = set()
    for src, dst in itertools.product(V03_SCALARS, repeat=2):
        vals = np.array([0.0, -1.5, 1e30, np.inf, np.nan], src.dtype) if src.is_float \
            else np.array(_edges(src), dtype=object).astype(src.dtype)
        _, faults = interp_scalar.cast(src, dst, vals)
        seen |= {k for k, mask, _ in faults if np.any(mask)}
    assert seen == set(ops.CAST.ub)
    assert ops.linear_cast(ScalarType.i32, ScalarType.f32)
    assert ops.linear_cast(ScalarType.f64, ScalarType.f32)
    assert not ops.linear_cast(ScalarType.f32, ScalarType.i32)
    assert [o.mnemonic for o in ops.OPS if o.linear] == ["arith.add", "arith.sub", "arith.mul",
                                                         "arith.neg"]


def _kernel(o: ScalarOp, t: ScalarType) -> str:
    operands = ", ".join(["%a"] * o.arity)
    return f"func @k(%a: {t}) {{\n  %r = {o.mnemonic} {operands} : {t}\n}}\n"


@pytest.mark.parametrize("o", ops.OPS, ids=lambda o: o.mnemonic)
def test_the_static_passes_follow_the_row(o):
    """Parsed, printed back and checked on every type: accepted exactly on the declared type
    classes, otherwise rejected with the row's message; the result type is the row's."""
    for t in V03_SCALARS:  # the v0.3 spellings (v0.4 types: tests/test_parser_v04.py)
        text = _kernel(o, t)
        program = tlinterp.parse(text, lang="v0.3")
        assert format_program(program) == text
        cls = ops.type_class(t)
        if cls in o.accepts:
            tlinterp.check(program)
            assert typerules.result_types(program.functions[0].body.instructions[0]) \
                == (ScalarType.i1 if o.family == COMPARE else t,)
        else:
            with pytest.raises(SourceError) as e:
                tlinterp.check(program)
            assert [d.message for d in e.value.diagnostics] == [ops.type_error(o, t)]


def _edges(t: ScalarType) -> list:
    lo, hi = ranges.type_range(t).lo, ranges.type_range(t).hi
    return sorted({lo, lo + 1, -1 if lo else 2, 0, 1, 3, t.bits, t.bits - 1, hi - 1, hi})


@pytest.mark.parametrize("o", [o for o in ops.OPS if o.family != COMPARE],
                         ids=lambda o: o.mnemonic)
def test_the_declared_undefined_behaviour_is_what_the_semantics_reports(o):
    """Over the edge values of every integer type, the NumPy semantics reports exactly the
    row's kinds (each one somewhere, no other); floats report none."""
    seen = set()
    for t in V03_SCALARS:  # the v0.3 spellings (v0.4 types: tests/test_parser_v04.py)
        if t.is_bool or ops.type_class(t) not in o.accepts:
            continue
        vals = np.array([0.0, -0.0, 1.5, -2.0, np.inf, np.nan], t.dtype) if t.is_float \
            else np.array(_edges(t), dtype=object).astype(t.dtype)
        a, b = (np.array(p, t.dtype) for p in zip(*itertools.product(vals, repeat=2)))
        _, faults = interp_scalar.binary(o.name, t, a, b) if o.family == BINARY \
            else interp_scalar.unary(o.name, t, vals)
        kinds = {k for k, mask, _ in faults if np.any(mask)}
        assert not (t.is_float and kinds), (t, kinds)
        seen |= kinds
    assert seen == set(o.ub)


def test_extensions_are_excludable_and_excluded_for_tinytc_0_3_1():
    assert set(ops.extensions()) == {"arith.min", "arith.max"}
    tinytc = [n for n in profile_names() if n.startswith("tinytc-0.3.1")]
    assert tinytc
    for name in tinytc:
        profile = load_profile(name)
        assert set(ops.extensions()) <= profile.exclude_instructions, name
        g = gen_core.CoreGenerator(random.Random(0), profile.restrict(GenParams()), "k")
        for t in (ScalarType.i32, ScalarType.f64):
            assert not {"min", "max"} & set(g.op_names(BINARY, t)), (name, t)
    g = gen_core.CoreGenerator(random.Random(0), load_profile("all").restrict(GenParams()), "k")
    assert {"min", "max"} <= set(g.op_names(BINARY, ScalarType.f64))


def test_type_error_messages_name_what_the_row_accepts():
    only_i1 = ScalarOp(BINARY, "x", frozenset({BOOL}))
    only_float = ScalarOp(UNARY, "y", frozenset({FLOAT}))
    assert ops.type_error(only_i1, ScalarType.i32) == "'arith.x' needs i1, got i32"
    assert ops.type_error(only_float, ScalarType.u8) == "'arith.y' needs a floating-point " \
                                                        "type, got u8"
    assert ops.type_error(ops.find(BINARY, "min"), ScalarType.i1) == (
        "'arith.min' is not defined on i1 (no arithmetic on booleans; and, or, xor and not are)")
    assert ops.type_error(ops.find(COMPARE, "lt"), ScalarType.i1) == (
        "'cmp.lt' is not defined on i1 (booleans have no order; use cmp.eq or cmp.ne)")


@pytest.mark.parametrize("op", ["add", "max", "min"])
@pytest.mark.parametrize("cls", [INT, FLOAT])
def test_atomic_updates_take_their_operation_from_the_scalar_tables(op, cls):
    """atomic_add|max|min (v0.4) combine the old value and the operand with the scalar
    operation of that name: the interpreter's table (tlinterp/interp/scalar.py) and the
    OpenCL C table the lowering's compare-and-swap helpers use (tlgpu/lowering/v04/atomics.py)
    both have it for integers and floats."""
    from tlgpu.lowering.v04.atomics import Helpers

    t = EXAMPLE[cls]
    assert op in lower_scalar.BINARY[cls]
    got, _ = interp_scalar.binary(op, t, np.array([3], t.dtype), np.array([5], t.dtype))
    assert got.tolist() == [{"add": 8, "max": 5, "min": 3}[op]]

    class Lw:  # the helper table of one kernel
        helpers: dict = {}
    for cl20 in (False, True):
        name = Helpers(Lw, cl20).update(op, "global", ScalarType.f64 if cls is FLOAT
                                        else ScalarType.i16, "memory_order_relaxed",
                                        "memory_scope_device")
        code = Lw.helpers[name]
        assert lower_scalar.binary(op, "o", "v", ScalarType.f64 if cls is FLOAT
                                   else ScalarType.i16) in code
def test_every_v04_operation_has_an_opencl_lowering_on_every_type_it_takes():
    """v0.4's arithmetic (binary and unary, abs/conj/re/im and the math functions included)
    and comparisons on every number type the v0.4 checker lets them take, f16/bf16/c32/c64
    too: tlgpu/lowering/scalar.py has an entry for each."""
    from tlinterp.checker.v04 import _allowed
    from tlinterp.lang.v04.names import ARITH_BINARY, UNARY

    missing = []
    for t in ScalarType:
        if t.is_bool or (t.is_int and not t.is_signed and t is not ScalarType.index):
            continue  # bool has its own class, v0.2's unsigned types are not v0.4's
        cls = lower_scalar.class_of(t)
        for op in ARITH_BINARY:
            if _allowed(op, t) and op not in lower_scalar.BINARY[cls]:
                missing.append((op, t.value))
        for op in UNARY:
            if _allowed(op, t) and op not in lower_scalar.UNARY[cls]:
                missing.append((op, t.value))
        lower_scalar.compare("eq", "a", "b", t)  # equality exists on every number type
    assert missing == []
