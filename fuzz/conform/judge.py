"""Judging an implementation's outcome on one corpus case.

valid: must exit 0 with outputs that `fuzz.oracle.compare.compare_outputs` accepts. A valid
    case may expect a warning; whether it was reported is recorded and never fails the case.
invalid: must be rejected (exit 2); whether the diagnostic (range and message) matches the
    expected one is reported separately and never fails the case.
undefined: the reference must report the recorded kind (exit 1); for any other
    implementation what it did is informational.
"""

from __future__ import annotations

from dataclasses import dataclass

from tlinterp.impl import Implementation, Outcome

from ..oracle import compare_outputs
from .corpus import Case

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
    warning_match: str = ""  # valid cases expecting a warning: "yes" | "no"
    reproduce: str = ""  # the command that reruns the implementation on this case


def _did(o: Outcome) -> str:
    first = o.message.strip().splitlines()[0] if o.message.strip() else ""
    return {"ok": "ran to completion", "rejected": f"rejected it: {first}",
            "failed": f"failed at run time: {first}", "crashed": f"crashed: {first}",
            "timeout": f"gave {first}" if first else "timed out"}.get(o.status, o.status)


def judge_valid(case: Case, o: Outcome) -> tuple[str, str]:
    if o.status != "ok":
        return FAIL, _did(o)
    import tlinterp

    try:
        program = tlinterp.parse(case.source(), filename=str(case.kernel))
        mismatches = compare_outputs(program, case.func, case.args(), case.expected(), o.outputs,
                             groups=case.groups)
    except Exception as e:  # noqa: BLE001 - e.g. outputs of the wrong shape or dtype
        return FAIL, f"outputs cannot be compared: {type(e).__name__}: {e}"
    if mismatches:
        more = f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        return FAIL, f"{mismatches[0]}{more}"
    return PASS, "outputs agree"


def message_matches(case: Case, o: Outcome) -> str:
    want_range, want_msg = case.meta.get("range", ""), case.meta.get("message", "")
    if o.diagnostics:
        return "yes" if (want_range, want_msg) in o.diagnostics else "no"
    if o.message:  # a command: look for `FILE:RANGE: MESSAGE` in its output
        return "yes" if f":{want_range}: {want_msg}" in o.message else "no"
    return "n/a"


def judge_invalid(case: Case, o: Outcome) -> tuple[str, str, str]:
    if o.status == "rejected":
        match = message_matches(case, o)
        note = "" if match == "yes" else (
            f"; expected {case.meta.get('range')}: {case.meta.get('message')}")
        return PASS, f"rejected{note}", match
    return FAIL, f"must be rejected (exit 2), but it {_did(o)}", "n/a"


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
        status, detail = judge_valid(case, o)
        match = warning_matches(case, o)
        if match and o.status == "ok":
            detail += "; expected warning reported" if match == "yes" else \
                "; expected warning not reported (not a failure)"
        return Verdict(case, status, detail, o, warning_match=match)
    if case.kind == "invalid":
        status, detail, match = judge_invalid(case, o)
        return Verdict(case, status, detail, o, message_match=match)
    status, detail = judge_undefined(case, o, impl)
    return Verdict(case, status, detail, o)

