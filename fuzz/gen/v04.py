"""The v0.4 kernel builder behind `fuzz.strategies.kernels(lang="v0.4")`.

The v0.3 builder (`fuzz.gen.function`) makes the program; `tlinterp.migrate.to_v04` gives its
v0.4 form (literals become `constant`, slices `offset:size`, allocas `local`), so everything the
v0.3 generator covers is covered in v0.4 too. `V04Generator` then draws, beyond it, what only
v0.4 spells, keeping the same by-construction rules (value ranges, own slices per work-group,
sinks nobody reads).
"""

from __future__ import annotations

import dataclasses

from tlinterp.checker_v04 import promotable, promote
from tlinterp.ir import Const
from tlinterp.types import ScalarType

from .function import FunctionGenerator
from .model import Scal, Unavailable
from .params import GenParams

_UNSIGNED = frozenset({ScalarType.u8, ScalarType.u16, ScalarType.u32, ScalarType.u64})
# v0.4 has no unsigned types; the new types come on top of the v0.3 ones
V04_MEMREF_TYPES = tuple(t for t in GenParams().memref_types if t not in _UNSIGNED)
V04_SCALAR_TYPES = tuple(t for t in GenParams().scalar_types if t not in _UNSIGNED)


def v04_params() -> GenParams:
    """The defaults of a v0.4 generator: no unsigned types, no `lifetime_stop` (v0.4 frees
    an alloca at the end of its region)."""
    return dataclasses.replace(GenParams(), memref_types=V04_MEMREF_TYPES,
                               scalar_types=V04_SCALAR_TYPES, lifetime_stop_percent=0)


class V04Generator(FunctionGenerator):
    """The v0.3 builder with v0.4's rules and constructs (see the module text)."""

    # --- v0.4's rules on what the v0.3 builder makes -------------------------------------------

    def cast(self, a: Scal, to: ScalarType) -> Scal:
        if to.is_bool and not a.type.is_bool:
            raise Unavailable("v0.4's bool is no cast result")  # compares make bools
        return super().cast(a, to)

    def collective_inst(self, kind, atomic, ta, tb, alpha, a, b, beta, c):
        """v0.4's mixed precision (alpha <= promote(A, B) <= C, beta <= C): a literal alpha
        or beta takes the type it must have, other mixes are drawn again; `.atomic` only
        with a literal beta of 0 or 1 (else the update is plain: the slice is the work-group's
        own)."""
        ins = [a.type.element] + ([] if b is None else [b.type.element])
        comp = ins[0] if len(ins) == 1 else promote(ins[0], ins[1])
        out = c.type.element
        if comp is None or not promotable(comp, out):
            raise Unavailable("operands that do not promote to the output")
        if not promotable(alpha.type, comp):
            if not isinstance(alpha.op, Const):
                raise Unavailable("alpha does not promote")
            alpha = dataclasses.replace(alpha, type=comp)
        if not promotable(beta.type, out):
            if not isinstance(beta.op, Const):
                raise Unavailable("beta does not promote")
            beta = dataclasses.replace(beta, type=out)
        if atomic and not (isinstance(beta.op, Const) and beta.op.value in (0, 1)):
            if c.buf.kind == "atomic":
                raise Unavailable("a shared sink needs beta 1")
            atomic = False
        return super().collective_inst(kind, atomic, ta, tb, alpha, a, b, beta, c)


__all__ = ["V04Generator", "v04_params", "V04_MEMREF_TYPES", "V04_SCALAR_TYPES"]
