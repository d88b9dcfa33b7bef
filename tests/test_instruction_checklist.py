"""docs/architecture.md "To add an instruction / Any other instruction", followed for a toy.

`Twice` (`%r = twice %a : T`, r = a + a, floats only) is a scalar instruction that is neither a
row of ops.py nor a collective, so it goes through the checklist for any other instruction.
`PLACES` names each place of the checklist (common to both versions, v0.3's and v0.4's) with
how a change there is made (here by monkeypatching the place's table, or for a grammar by
rebuilding it from grammar.peg's text with the rule added, as the parser module does at
import) and a probe that the pass at that place handles the toy. The v0.4 checker's place is
a method named after the class, which no table lists: without it the toy was accepted
silently, so its probe asks for the rule's error. `missing()` names the places
whose probe fails: with the dataclass alone it names every place, with every place added it
names none (and then the toy parses, prints, checks, runs on the interpreter and lowers), and
with one place left out it names that place and the places that need it (`NEEDS`).

Not probed: the fuzzers' builders (fuzz/gen/body.py, gen/v04.py are code, not tables),
names.MNEMONICS (v0.4-only instructions) and migrate.py (the toy's v0.3 form is itself);
tests/test_op_declarations.py covers ops.py rows and collectives the same way.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Optional, Union

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.conform.corpus import default_corpus, load_corpus
from tlgpu.lowering import function as lower_function
from tlinterp.checker import v03 as checker_v03
from tlinterp.checker import v04 as checker_v04
from tlinterp.front.migrate import to_v04
from tlinterp.front.pipeline import executable
from tlinterp.interp import execute, run_bound, select_function
from tlinterp.interp import scalar as interp_scalar
from tlinterp.io.args import bind, unbind
from tlinterp.lang import effects, ir, typerules
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.ir import Span, Value
from tlinterp.lang.types import MemrefType, ScalarType
from tlinterp.lang.v03 import parser as parser_v03
from tlinterp.lang.v03 import printer as printer_v03
from tlinterp.lang.v04 import parser as parser_v04
from tlinterp.lang.v04 import printer as printer_v04

ROOT = Path(__file__).resolve().parents[1]
THIS = sys.modules[__name__]
MNEMONIC = "twice"


@dataclasses.dataclass
class Twice:  # checklist step 1: the dataclass
    result: Value
    operand: ir.Operand
    type: ScalarType
    span: Optional[Span] = dataclasses.field(default=None, compare=False, repr=False)


F32 = ScalarType.f32
MEMREF = MemrefType.make(F32, ())
TEXT = ("func @k(%a: memref<f32>) {\n  %x = load %a[] : memref<f32>\n"
        "  %y = twice %x : f32\n  store %y, %a[] : memref<f32>\n}\n")
TEXT04 = ("func @k(%a: memref<f32>) {\n    %x = load %a[] : f32\n    %y = twice %x : f32\n"
          "    store %y, %a[]\n}\n")


def sample(t: ScalarType = F32) -> ir.Program:
    """TEXT as IR: a = twice(a)."""
    memref = MemrefType.make(t, ())
    a, x, y = Value("a"), Value("x"), Value("y")
    body = ir.Region([ir.Load(x, a, (), memref), Twice(y, x, t), ir.Store(y, a, (), memref)])
    return ir.Program((ir.Function("k", (ir.Argument(a, memref),), body),), lang="v0.3")


# --- the changes at each place ----------------------------------------------------------------

def _union(mp) -> None:
    mp.setattr(ir, "Instruction", Union[(*typing.get_args(ir.Instruction), Twice)])


def _with_rule(mp, grammar_text: str, builder: type, operand: str, type_rule: str) -> None:
    """A version's grammar.peg with the rule (and its keyword), as its parser module loads
    it, for `builder`'s functions."""
    head = "value_instruction = local_identifier EQUALS ("
    assert grammar_text.count(head) == 1
    text = grammar_text.replace(head, head + "twice_instruction / ") + (
        f"\ntwice_instruction = TWICE {operand} COLON {type_rule}\n"
        'TWICE = ~r"twice(?![A-Za-z0-9_])[ \\t\\r\\n]*(?:;[^\\n]*[ \\t\\r\\n]*)*"\n')
    grammar = parser_v03.Grammar(text)
    mp.setattr(builder, "FUNCTION", grammar["function_definition"])
    mp.setattr(builder, "SKIP", grammar["_"])


def _grammar(mp) -> None:
    """v0.3: grammar.peg and the builder in `_VALUE_BUILDERS`."""
    _with_rule(mp, parser_v03.grammar_text(), parser_v03._Builder, "identifier_or_constant",
               "scalar_type")

    def build(self, n, r, s):
        _, a, _, ty = n.children
        return Twice(r, self.operand(a), self.scalar(ty), s)
    mp.setitem(parser_v03._VALUE_BUILDERS, "twice_instruction", build)


def _grammar_v04(mp) -> None:
    """v0.4: grammar.peg and the builder in `_VALUE`."""
    _with_rule(mp, parser_v04.GRAMMAR_PATH.read_text(encoding="utf-8") + "\n"
               + parser_v04.blas_syntax.rules("v0.4"), parser_v04._Builder04,
               "local_identifier", "type")

    def build(self, n, r, s):
        _, a, _, ty = n.children
        return Twice(r, self.use(a)[0], self.type(ty), s)
    mp.setitem(parser_v04._VALUE, "twice_instruction", build)


def _printer_v04(mp) -> None:
    mp.setitem(printer_v04._HEADERS, Twice, printer_v04._defines(
        lambda i: f"{MNEMONIC} {printer_v04._op(i.operand)} : {i.type.value}"))


def _checker_v04(mp) -> None:
    def rule(self, inst, spmd) -> None:
        if not inst.type.is_float:
            self.error(f"'{MNEMONIC}' needs a floating-point type, got {inst.type}", inst.span)
    mp.setattr(checker_v04._Function, "_twice", rule, raising=False)


def _printer(mp) -> None:
    mp.setitem(printer_v03._HEADERS, Twice, printer_v03._defines(
        lambda i: f"{MNEMONIC} {printer_v03.format_operand(i.operand)} : {i.type.value}"))


def _checker(mp) -> None:
    def rule(self, inst, ctx) -> None:
        if not inst.type.is_float:
            self._error(f"'{MNEMONIC}' needs a floating-point type, got {inst.type}", inst.span)
        self._operand(inst.operand, inst.type)
    mp.setitem(checker_v03._HANDLERS, Twice, rule)


def _interpreter(mp) -> None:
    def run(self, inst, env, lanes, col) -> None:
        a = self.val(inst.operand, inst.type, env)
        r, faults = interp_scalar.binary("add", inst.type, a, a)
        self.faults(faults, lanes, col, inst.span)
        env.set(inst.result.name, r)
    mp.setitem(execute.DISPATCH, Twice, run)


def _lowering(mp) -> None:
    def lower(self, w, inst) -> None:
        a = self.operand(inst.operand, inst.type)
        self.define(w, inst.result, inst.type, f"/* twice */ ({a} + {a})")
    mp.setitem(lower_function.LOWER, Twice, lower)


# --- the probes -------------------------------------------------------------------------------

def _semantics_text() -> str:
    return (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")


def _corpus_tags() -> set[str]:
    return {m for case in load_corpus(default_corpus()) if case.kind == "valid"
            for m in case.tags["instruction"]}


def _in_union() -> bool:
    return Twice in typing.get_args(ir.Instruction)


def _result_types() -> bool:
    return typerules.result_types(sample().functions[0].body.instructions[1]) == (F32,)


def _effects() -> bool:
    return set(effects.written_arguments(sample().functions[0])) == {"a"}  # by the store


def _parses() -> bool:
    return tlinterp.parse(TEXT, lang="v0.3") == sample()


def _prints() -> bool:
    return printer_v03.format_program(sample()) == TEXT


def _rejects(program: ir.Program) -> bool:
    """The checker's rule for the toy: an integer type is an error at the instruction."""
    try:
        tlinterp.check(program)
    except SourceError as e:
        return f"'{MNEMONIC}' needs a floating-point type, got i32" in [
            d.message for d in e.diagnostics]
    return False


def _checks() -> bool:
    tlinterp.check(sample())
    return _rejects(sample(ScalarType.i32))


def _runs() -> bool:
    program = sample()
    function = select_function(program, None)
    bound = bind(function, {"a": np.array(1.25, np.float32)})
    run_bound(program, function, bound, 1)
    return float(unbind(bound)["a"]) == 2.5


def _parses_v04() -> bool:
    return executable(tlinterp.parse(TEXT04, lang="v0.4")).functions == sample().functions


def _prints_v04() -> bool:
    return printer_v04.format_program_v04(sample()) == TEXT04


def _checks_v04() -> bool:
    program = to_v04(sample())  # the IR v0.4 prints (to_v04 runs the v0.3 checker first)
    program.lang = "v0.4"
    tlinterp.check(program)
    body = program.functions[0].body.instructions
    body[1] = dataclasses.replace(body[1], type=ScalarType.i32)
    return _rejects(program)  # without a rule the v0.4 checker accepted it silently


def _lowers() -> bool:
    return "/* twice */ (" in tlgpu.lower(sample())


# place -> (the change there, the probe that the pass there handles the toy)
PLACES: dict[str, tuple[Optional[Callable], Callable[[], bool]]] = {
    "ir.Instruction": (_union, _in_union),
    "docs/semantics.md": (
        lambda mp: mp.setattr(THIS, "_semantics_text",
                              lambda: f"| `{MNEMONIC}` | float | — |\n"),
        lambda: f"`{MNEMONIC}`" in _semantics_text()),
    "typerules._RULES": (lambda mp: mp.setitem(typerules._RULES, Twice, lambda i: (i.type,)),
                         _result_types),
    "effects._EFFECTS": (lambda mp: mp.setitem(effects._EFFECTS, Twice,
                                               lambda i: effects.NONE), _effects),
    "interpreter DISPATCH": (_interpreter, _runs),
    "lowering LOWER": (_lowering, _lowers),
    "corpus": (lambda mp: mp.setattr(THIS, "_corpus_tags", lambda: {MNEMONIC}),
               lambda: MNEMONIC in _corpus_tags()),
    "v0.3 grammar and parser": (_grammar, _parses),
    "v0.3 printer _HEADERS": (_printer, _prints),
    "v0.3 checker _HANDLERS": (_checker, _checks),
    "v0.4 grammar and parser": (_grammar_v04, _parses_v04),
    "v0.4 printer _HEADERS": (_printer_v04, _prints_v04),
    "v0.4 checker _twice": (_checker_v04, _checks_v04),
}
# a pass that also runs another place's rule: missing where that place is
NEEDS = {"v0.3 checker _HANDLERS": ("typerules._RULES",),
         "interpreter DISPATCH": ("effects._EFFECTS",),
         "lowering LOWER": ("effects._EFFECTS", "typerules._RULES")}


def missing() -> list[str]:
    """The places whose pass does not handle the toy."""
    out = []
    for name, (_, probe) in PLACES.items():
        try:
            ok = probe()
        except Exception:  # a pass that cannot take the class at all lacks it
            ok = False
        if not ok:
            out.append(name)
    return out


def _add(mp, places) -> None:
    for name in places:
        PLACES[name][0](mp)


def test_the_dataclass_alone_is_missing_everywhere():
    assert missing() == list(PLACES)


def test_through_every_place_the_toy_parses_prints_checks_runs_and_lowers(monkeypatch):
    _add(monkeypatch, PLACES)
    assert missing() == []
    program = tlinterp.check(tlinterp.parse(TEXT, "t.tl"))  # detected as v0.3 (a marker)
    assert tlinterp.parse(printer_v03.format_program(program)) == program
    out = tlinterp.run(program, {"a": np.array(-3.5, np.float32)})
    assert float(out["a"]) == -7.0
    with pytest.raises(SourceError) as e:  # the checker's rule, at the instruction
        tlinterp.check(tlinterp.parse(TEXT.replace("f32", "i32"), "t.tl"))
    assert str(e.value.diagnostics[0].span) == "3.3-21"


@pytest.mark.parametrize("left_out", list(PLACES))
def test_a_place_left_out_is_named(left_out, monkeypatch):
    _add(monkeypatch, [p for p in PLACES if p != left_out])
    assert missing() == [p for p in PLACES
                         if p == left_out or left_out in NEEDS.get(p, ())]
