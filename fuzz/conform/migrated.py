"""v0.3 corpus cases offered in their v0.4 form (`tlconform --lang v0.4`), so that a v0.4
implementation is checked against the whole corpus, not only the cases written in v0.4.

A valid or undefined-behaviour v0.3 case migrates when `tlinterp.front.migrate.to_v04` can express
its kernel: the implementation gets the v0.4 text (printed by printer_v04 and checked again as
v0.4) with the same arguments, expected outputs and undefined-behaviour kind, since migration
keeps the program's meaning. The case keeps its id and files and is marked: `meta["migrated"]`
and the tag `origin: migrated from v0.3`. What cannot migrate is skipped with the reason: an
invalid v0.3 program (it has no IR to migrate, and its diagnostics are v0.3's), or a construct
v0.4 cannot express (an unsigned type, a cast to i1, lifetime_stop).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from fuzz.conform.corpus import Case

ORIGIN = "migrated from v0.3"


def to_v04_text(source: str, filename: str) -> str:
    """The v0.4 text of a v0.3 kernel; raises TLError (a SourceError naming what v0.4 cannot
    express, or the v0.4 front end's complaint about the migrated text)."""
    import tlinterp
    from tlinterp.front.migrate import to_v04
    from tlinterp.lang.v04.printer import format_program_v04

    program = tlinterp.check(tlinterp.parse(source, filename=filename, lang="v0.3"))
    text = format_program_v04(to_v04(program))
    tlinterp.check(tlinterp.parse(text, filename=filename, lang="v0.4"))  # a bug of ours if not
    return text


def migrate_cases(cases: Sequence[Case]) -> tuple[list[Case], list[tuple[Case, str]]]:
    """The v0.4 forms of the v0.3 cases among `cases`, and those that cannot migrate with the
    reason (see the module text)."""
    from tlinterp import TLError

    out: list[Case] = []
    skipped: list[tuple[Case, str]] = []
    for case in cases:
        if case.lang != "v0.3":
            continue
        if case.kind == "invalid":
            skipped.append((case, "not migrated: an invalid v0.3 program has no v0.4 form"))
            continue
        try:
            text = to_v04_text(case.source(), case.kernel.name)
        except TLError as e:
            first = e.diagnostics[0].message if e.diagnostics else str(e)
            skipped.append((case, f"not migrated: {first}"))
            continue
        m = copy.copy(case)
        m.meta = {**case.meta, "lang": "v0.4", "migrated": "v0.3",
                  "tags": {**case.tags, "origin": [ORIGIN]}}
        m._cache = {"source": text}  # a dict of its own: the v0.3 case keeps its text
        out.append(m)
    return out, skipped
