"""Running a v0.4 kernel text in the interpreter, and expecting one kind of undefined
behaviour from it: the helpers of the v0.4 interpreter tests."""

from __future__ import annotations

import pytest

from tlinterp.front.pipeline import parse
from tlinterp.interp import run
from tlinterp.lang.diagnostics import UndefinedBehaviour


def run_v04(src: str, args: dict, **kw) -> dict:
    """The outputs of `src`, parsed as v0.4 whatever its markers say."""
    return run(parse(src, lang="v0.4"), args, **kw)


def ub_v04(src: str, args: dict, kind: str) -> str:
    """The report of running `src`, which must raise undefined behaviour of `kind` only."""
    with pytest.raises(UndefinedBehaviour) as e:
        run_v04(src, args)
    assert {r.kind for r in e.value.reports} == {kind}
    return e.value.format()
