"""Every planted bug `tlfuzz --mutation` accepts, by name: the v0.3 and the v0.4 lowering's
mutants and the self-tests (one module above both lists, so neither imports the other)."""

from __future__ import annotations

from fuzz.mutants.lowering_v03 import MUTATIONS, SELF_TESTS, Mutation
from fuzz.mutants.lowering_v04 import MUTATIONS as V04_LOWERING


def known() -> dict[str, Mutation]:
    """Every name `tlfuzz --mutation` accepts (the bench's mutants of the v0.3 and the v0.4
    lowering, plus self-tests)."""
    return {**MUTATIONS, **V04_LOWERING, **SELF_TESTS}


def apply(name: str) -> None:
    """Install the named mutation in this process (KeyError for unknown names)."""
    known()[name].install()
