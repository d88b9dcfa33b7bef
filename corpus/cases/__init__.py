"""The conformance corpus as code: every case with its independent NumPy reference.

`all_valid()`, `all_invalid()` and `all_undefined()` list the cases; `corpus/generate.py`
writes them to disk and re-verifies them. Nothing here calls the interpreter: each expected
result is computed by a NumPy function written for that case's instruction.
"""

from __future__ import annotations

from corpus.cases.model import InvalidCase, UndefinedCase, ValidCase, text_range

__all__ = ["InvalidCase", "UndefinedCase", "ValidCase", "all_invalid", "all_undefined",
           "all_valid", "text_range"]


def all_valid() -> list[ValidCase]:
    from corpus.cases import blas, control, groups, scalar, views
    from corpus.cases.v04 import coop as v04_coop
    from corpus.cases.v04 import core as v04
    from corpus.cases.v04 import folding as v04_folding
    from corpus.cases.v04 import memory as v04_memory
    from corpus.cases.v04 import nan as v04_nan
    from corpus.cases.v04 import scalar as v04_scalar

    cases = [*blas.cases(), *scalar.cases(), *views.cases(), *groups.cases(), *control.cases(),
             *v04.cases(), *v04_scalar.cases(), *v04_memory.cases(), *v04_coop.cases(),
             *v04_nan.cases(), *v04_folding.cases()]
    _unique(c.id for c in cases)
    return cases


def all_invalid() -> list[InvalidCase]:
    from corpus.cases import invalid
    from corpus.cases.v04 import invalid as invalid_v04

    cases = [*invalid.cases(), *invalid_v04.cases()]
    _unique(c.id for c in cases)
    return cases


def all_undefined() -> list[UndefinedCase]:
    from corpus.cases import undefined

    cases = undefined.cases()
    _unique(c.id for c in cases)
    return cases


def _unique(ids) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"duplicate corpus case {i}")
        seen.add(i)
