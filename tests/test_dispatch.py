"""Every pass handles every instruction: Python's stand-in for an exhaustive match.

Each pass dispatches through one `{ir.Class: handler}` table. The tables below must cover
`ir.Instruction` (or the subset of it they are declared for, e.g. `ir.BLAS`), so a class
added to the IR and forgotten in a pass fails here rather than on a user's kernel.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable

import pytest

from tlgpu.lowering import collectives as lower_collectives
from tlgpu.lowering import function as lower_function
from tlinterp.checker import v03 as checker
from tlinterp.interp import collectives, execute
from tlinterp.lang import effects, ir, typerules
from tlinterp.lang.v03 import printer

INSTRUCTIONS = typing.get_args(ir.Instruction)

# name -> (the table, the classes it must cover)
TABLES: dict[str, tuple[Callable[[], dict], tuple[type, ...]]] = {
    "checker": (lambda: checker._HANDLERS, INSTRUCTIONS),
    "printer": (lambda: printer._HEADERS, INSTRUCTIONS),
    "typerules": (lambda: typerules._RULES, INSTRUCTIONS),
    "memory effects": (lambda: effects._EFFECTS, INSTRUCTIONS),
    "interpreter": (lambda: execute.DISPATCH, INSTRUCTIONS),
    "lowering": (lambda: lower_function.LOWER, INSTRUCTIONS),
    "interpreter collectives": (lambda: collectives._PRODUCTS, ir.BLAS),
    "lowering collectives": (lambda: lower_collectives._PROBLEMS, ir.BLAS),
}


def tables_missing(cls: type) -> list[str]:
    """Names of the tables that should handle `cls` and do not."""
    return [name for name, (table, covers) in TABLES.items()
            if cls in covers and cls not in table()]


@pytest.mark.parametrize("cls", INSTRUCTIONS, ids=lambda c: c.__name__)
def test_every_table_handles_the_instruction(cls):
    assert tables_missing(cls) == []


@pytest.mark.parametrize("name", TABLES)
def test_a_removed_entry_is_reported(name, monkeypatch):
    table, covers = TABLES[name]
    cls = covers[-1]
    monkeypatch.delitem(table(), cls)
    assert tables_missing(cls) == [name]


def test_the_union_lists_every_instruction_class():
    not_instructions = {ir.Span, ir.Value, ir.Const, ir.Slice, ir.Region, ir.Argument,
                        ir.Function, ir.Program, ir.MemrefRole,
                        ir.Update, ir.Product}  # field bases of the BLAS classes
    classes = {c for c in vars(ir).values()
               if isinstance(c, type) and dataclasses.is_dataclass(c)
               and c.__module__ == ir.__name__} - not_instructions
    assert classes == set(INSTRUCTIONS)
    assert set(ir.BLAS) <= set(ir.COLLECTIVES) <= set(INSTRUCTIONS)


@pytest.mark.parametrize("cls", ir.BLAS, ids=lambda c: c.__name__)
def test_collective_facts_name_real_fields(cls):
    fields = {f.name for f in dataclasses.fields(cls)}
    roles = [r.field for r in cls.ROLES]
    assert cls.MNEMONIC and len(roles) == len(set(roles)) >= 2
    for r in cls.ROLES:
        assert {r.field, r.field + "_type"} <= fields and r.orders
        assert r.trans is None or r.trans in fields
    for _, (fi, mi), (fj, mj) in cls.RELATIONS:
        for f, m in ((fi, mi), (fj, mj)):
            assert f in roles and 0 <= m < max(cls.role(f).orders)
    assert cls.REDUCED is None or cls.REDUCED in roles
    assert cls.output() == roles[-1] and cls.inputs() == tuple(roles[:-1])


def test_collectives_have_a_mnemonic():
    names = [c.MNEMONIC for c in ir.COLLECTIVES]
    assert len(set(names)) == len(names)


def test_every_lowered_spmd_instruction_has_its_rule():
    """What the front door lets through for the lowering (frontend._LOWERED_SPMD) has a rule
    in function.LOWER, not the not-yet one."""
    from tlgpu.lowering.function import LOWER, _not_yet
    from tlinterp.front.pipeline import _LOWERED_SPMD

    assert all(LOWER[cls] is not _not_yet for cls in _LOWERED_SPMD)
