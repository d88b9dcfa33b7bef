"""`tlconform --json FILE`: the run as one JSON object, for scripts and dashboards.

    {"format": "tlconform-report/1", "implementation": "...",
     "cases": [{"id", "kind", "category", "status", "detail", "outcome", "seconds",
                "message_match", "diagnostic_match", "diagnostic_range", "ub_kinds", "tags",
                "reproduce", "command", "message"}, ...],
     "summary": {"total", "pass", "fail", "info", "skip",
                 "by_kind": {KIND: {pass, fail, info, skip}},
                 "message_matches": [matched, invalid cases],
                 "diagnostic_matches": {"range+message", "range", "no", "wrong_place"},
                 "exit_status"}}

`status` is the verdict (pass | fail | info | skip: outside `--profile`, `detail` says which
construct and why, `outcome` is "skipped"); `outcome` is what the implementation did (ok |
rejected | failed | crashed | timeout); `message` is its output, kept only for cases that did
not pass. For a rejected invalid case `diagnostic_match` says where its diagnostic points
(range+message | range | no) and `diagnostic_range` the range it gave (null: none); keys
added later leave the format name alone, older keys keep their meaning.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from fuzz.conform.judge import FAIL, INFO, PASS, SKIP, Verdict
from fuzz.conform.report import counts_by, diagnostic_counts

__all__ = ["FORMAT", "case_record", "json_report", "write_json"]

FORMAT = "tlconform-report/1"


def case_record(v: Verdict) -> dict[str, Any]:
    o = v.outcome
    return {"id": v.case.id, "kind": v.case.kind, "category": v.case.category,
            "status": v.status, "detail": v.detail, "outcome": o.status,
            "seconds": round(v.seconds, 6), "message_match": v.message_match or None,
            "diagnostic_match": v.diagnostic_match or None,
            "diagnostic_range": v.diagnostic_range or None,
            "ub_kinds": list(o.ub_kinds), "tags": v.case.tags,
            # the implementation's own command, as in --log and the table (its flags too)
            "reproduce": v.reproduce or v.case.reproduce(), "command": o.command,
            "message": o.message if v.status != PASS else ""}


def json_report(verdicts: Sequence[Verdict], impl_name: str, exit_status: int) -> dict:
    invalid = [v for v in verdicts if v.case.kind == "invalid"]
    summary = {s: sum(v.status == s for v in verdicts) for s in (PASS, FAIL, INFO, SKIP)}
    return {"format": FORMAT, "implementation": impl_name,
            "cases": [case_record(v) for v in verdicts],
            "summary": {"total": len(verdicts), **summary,
                        "by_kind": counts_by(verdicts, lambda v: [v.case.kind]),
                        "message_matches": [sum(v.message_match == "yes" for v in invalid),
                                            len(invalid)],
                        "diagnostic_matches": diagnostic_counts(invalid),
                        "exit_status": exit_status}}


def write_json(path: str, verdicts: Sequence[Verdict], impl_name: str,
               exit_status: int) -> None:
    """Write the report to `path` ("-": standard output)."""
    text = json.dumps(json_report(verdicts, impl_name, exit_status), indent=1) + "\n"
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from tlinterp.io.outfile import write_text

        write_text(path, text, "--json")  # atomically: a full disk leaves no partial report
