"""A corpus case run on an implementation under test. Implementations are named and found
through the shared registry, `tlinterp.impl.resolve` (interp, opencl[:DEVICE],
opencl-c:COMMAND, python:MODULE:FUNCTION, command templates and whatever other packages
register); this module turns a case into the job they run and into a command to rerun it."""

from __future__ import annotations

import shlex
from typing import Optional

from fuzz.conform.corpus import Case, shown
from tlinterp.impl import Implementation, Job, Outcome


def case_job(case: Case) -> Job:
    """The case as a job; the implementation gets the text and arrays, never the corpus's
    own files (external tools receive fresh copies)."""
    return Job(case.source(), case.args(), func=case.func, groups=case.groups,
               filename=case.kernel.name, lang=case.lang)


def outcome_of(impl: Implementation, case: Case, timeout: Optional[float]) -> Outcome:
    """Run one case. Implementations that run tlinterp's front end in this process (the
    interpreter, our OpenCL lowering) report its warnings as theirs."""
    outcome = impl.run(case_job(case), timeout)
    if outcome.status == "ok" and not outcome.warnings and getattr(impl, "front_end", False):
        outcome.warnings = front_end_warnings(case)
    return outcome


def front_end_warnings(case: Case) -> list[tuple[str, str]]:
    """(range, message) of the warnings tlinterp's checker gives for an accepted kernel."""
    import tlinterp

    found: list = []
    tlinterp.check(tlinterp.parse(case.source(), filename=str(case.kernel), lang=case.lang),
                   found)
    return [(str(d.span), d.message) for d in found]


def reproduce(impl: Implementation, case: Case) -> str:
    """The command that reruns `impl` (not the reference) on the corpus's files: for a valid
    case `tlfuzz reproduce`, which exits 1 while its outputs differ from the reference's (a
    reducer's interestingness test); else the implementation's own command."""
    args = shown(case.args_path) if case.args_path is not None else None
    groups = case.groups  # the command builders spell a grid as --groups takes it (X,Y,Z)
    kernel, first = shown(case.kernel), ""
    if case.meta.get("migrated"):  # the implementation got the v0.4 form: write it first
        v04 = f"{case.name}.v04.tl"
        first = shlex.join(["tlrun", kernel, "--emit", "ir", "--from", case.meta["migrated"],
                            "--lang", case.lang]) + f" > {shlex.quote(v04)} && "
        kernel = v04
    if case.kind == "valid" and args is not None and impl.spec not in ("interp", "tlinterp"):
        from fuzz.triage.reproduce import reproduce_line

        return first + reproduce_line(kernel, args, case.func, groups,
                                      impl.spec, impl.options)
    return first + impl.reproduce(kernel, args, case.func, groups)
