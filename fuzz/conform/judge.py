"""Judging an implementation's outcome on one corpus case.

valid: must exit 0 with outputs that `fuzz.oracle.compare.compare_outputs` accepts. A valid
    case may expect a warning; whether it was reported is recorded and never fails the case.
invalid: must be rejected (exit 2, or a --reject-status); where the diagnostic points is
    reported separately and never fails the case: "range+message" (the expected range and
    message), "range" (the expected range in other words: what another compiler gives) or
    "no" (another place, or no diagnostic), with the range the implementation gave. A case
    with a "restriction" (a rule the v0.3 text does not state) binds only the reference: what
    another implementation does with it is informational.
undefined: the reference must report the recorded kind (exit 1); for any other
    implementation what it did is informational.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Optional

from fuzz.conform.corpus import Case
from fuzz.oracle import compare_outputs
from tlinterp.impl import Implementation, Outcome
from tlinterp.impl.base import mentioned_diagnostics
from tlinterp.io.foreigntext import MAX_KEPT, MAX_LINE_KEPT, clipped

PASS, FAIL, INFO = "pass", "fail", "info"
SKIP = "skip"  # outside the target's profile (tlconform --profile): not run


@dataclass
class Verdict:
    case: Case
    status: str  # pass | fail | info | skip
    detail: str  # one line: why
    outcome: Outcome
    seconds: float = 0.0
    message_match: str = ""  # invalid cases: "yes" | "no" | "n/a"
    diagnostic_match: str = ""  # rejected invalid cases: "range+message" | "range" | "no"
    diagnostic_range: str = ""  # the range of the diagnostic that decided it ("": none)
    warning_match: str = ""  # valid cases expecting a warning: "yes" | "no"
    reproduce: str = ""  # the command that reruns the implementation on this case
    mismatches: list[str] = field(default_factory=list)  # valid cases: the first differences

    def __post_init__(self) -> None:
        # every report and log reads the verdict: one cap here bounds them all per case
        self.detail = clipped(self.detail, MAX_LINE_KEPT)
        if len(self.outcome.message) > MAX_KEPT:
            self.outcome = dataclasses.replace(self.outcome,
                                               message=clipped(self.outcome.message))


def _did(o: Outcome) -> str:
    first = o.message.strip().splitlines()[0] if o.message.strip() else ""
    return {"ok": "ran to completion", "rejected": f"rejected it: {first}",
            "failed": f"failed at run time: {first}", "crashed": f"crashed: {first}",
            "timeout": f"gave {first}" if first else "timed out"}.get(o.status, o.status)


SHOWN_MISMATCHES = 5  # differences a failed valid case keeps (tlconform -v shows them)


def judge_valid(case: Case, o: Outcome) -> tuple[str, str, list[str]]:
    """(status, detail, the first differences of the outputs)."""
    if o.status != "ok":
        return FAIL, _did(o), []
    import tlinterp

    try:
        program = tlinterp.parse(case.source(), filename=str(case.kernel), lang=case.lang)
        mismatches = compare_outputs(program, case.func, case.args(), case.expected(), o.outputs,
                             groups=case.groups)
    except Exception as e:  # noqa: BLE001 - e.g. outputs of the wrong shape or dtype
        return FAIL, f"outputs cannot be compared: {type(e).__name__}: {e}", []
    if mismatches:
        more = f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        return FAIL, f"{mismatches[0]}{more}", [str(m) for m in mismatches[:SHOWN_MISMATCHES]]
    return PASS, "outputs agree", []


_RANGE = re.compile(r"(\d+)\.(\d+)(?:-(?:(\d+)\.)?(\d+))?")
RANGE_AND_MESSAGE, RANGE_ONLY, NO = "range+message", "range", "no"


def range_key(text: str) -> Optional[tuple[int, int, int, int]]:
    """`L.C`, `L.C-C2` or `L.C-L2.C2` as (L, C, L2, C2), so that spellings of one range
    compare equal (`3.5-3.9` is `3.5-9`); None for anything else."""
    m = _RANGE.fullmatch(text.strip())
    if not m:
        return None
    line, col = int(m.group(1)), int(m.group(2))
    end_line = int(m.group(3)) if m.group(3) else line
    end_col = int(m.group(4)) if m.group(4) else col
    return line, col, end_line, end_col


def _diagnostics(o: Outcome) -> list[tuple[str, str]]:
    """(range, message) pairs: those an in-process implementation attached, else the
    `FILE:RANGE: MESSAGE` lines of a command's output."""
    return o.diagnostics or mentioned_diagnostics(o.message)


def diagnostic_match(case: Case, o: Outcome) -> tuple[str, Optional[tuple[str, str]]]:
    """How the implementation's diagnostics meet the expected one: (RANGE_AND_MESSAGE |
    RANGE_ONLY | NO, the diagnostic that decided it, None when there was none). Ranges are
    compared apart from the words: another compiler blaming the same text is what the corpus
    can demand of it, its message is its own."""
    want = range_key(case.meta.get("range", ""))
    want_msg = case.meta.get("message", "").strip()
    found = _diagnostics(o)
    here = [d for d in found if want is not None and range_key(d[0]) == want]
    for d in here:
        if d[1].strip() == want_msg:
            return RANGE_AND_MESSAGE, d
    if here:
        return RANGE_ONLY, here[0]
    return NO, found[0] if found else None


def message_matches(case: Case, o: Outcome) -> str:
    """"yes" when a diagnostic has the expected range and message, "no" when not, "n/a"
    when the implementation said nothing at all."""
    if not o.diagnostics and not o.message:
        return "n/a"
    return "yes" if diagnostic_match(case, o)[0] == RANGE_AND_MESSAGE else "no"


def judge_invalid(case: Case, o: Outcome, reject_status: tuple[int, ...] = (2,),
                  reference: bool = False) -> tuple[str, str, str, str, str]:
    """(status, detail, message_match, diagnostic_match, diagnostic_range)."""
    if o.status != "rejected":
        restriction = case.meta.get("restriction")
        if restriction and not reference:  # a rule of the reference's own (semantics.md)
            return (INFO, f"not rejected, which the spec allows (the reference's own "
                    f"restriction: {restriction}); it {_did(o)}", "n/a", "", "")
        statuses = " or ".join(map(str, reject_status))
        return FAIL, f"must be rejected (exit {statuses}), but it {_did(o)}", "n/a", "", ""
    match, said = diagnostic_match(case, o)
    expected = f"expected {case.meta.get('range')}: {case.meta.get('message')}"
    if match == RANGE_AND_MESSAGE:
        detail = "rejected"
    elif match == RANGE_ONLY:
        detail = f"rejected at the expected range, in other words: {said[1]}"
    elif said is not None:
        detail = f"rejected at another place: {said[0]}: {said[1]}; {expected}"
    else:
        detail = f"rejected without a FILE:RANGE: MESSAGE diagnostic; {expected}"
    return PASS, detail, message_matches(case, o), match, said[0] if said else ""


def judge_undefined(case: Case, o: Outcome, impl: Implementation) -> tuple[str, str]:
    kind = case.meta.get("kind", "?")
    if o.status == "failed" and kind in o.ub_kinds:
        return PASS, f"reported {kind}"
    said = f"{_did(o)}" + (f" (reported {', '.join(o.ub_kinds)})" if o.ub_kinds else "")
    if impl.reference:
        return FAIL, f"must report {kind}, but it {said}"
    return INFO, f"undefined ({kind}); it {said}"


def warning_matches(case: Case, o: Outcome) -> str:
    """"yes" when the expected warning (range and message) was reported, else "no"; "" for
    cases that expect none."""
    want = case.meta.get("warning")
    if not want:
        return ""
    if (want["range"], want["message"]) in o.warnings:
        return "yes"
    return "yes" if f":{want['range']}: warning: {want['message']}" in o.message else "no"


def judge(case: Case, o: Outcome, impl: Implementation) -> Verdict:
    if case.kind == "valid":
        status, detail, mismatches = judge_valid(case, o)
        match = warning_matches(case, o)
        if match and o.status == "ok":
            detail += "; expected warning reported" if match == "yes" else \
                "; expected warning not reported (not a failure)"
        return Verdict(case, status, detail, o, warning_match=match, mismatches=mismatches)
    if case.kind == "invalid":
        status, detail, match, diag, where = judge_invalid(case, o, impl.options.reject_status,
                                                          impl.reference)
        return Verdict(case, status, detail, o, message_match=match, diagnostic_match=diag,
                       diagnostic_range=where)
    status, detail = judge_undefined(case, o, impl)
    return Verdict(case, status, detail, o)

