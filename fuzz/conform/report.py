"""Reports of a conformance run: rich summary tables, JUnit XML, and the per-case log."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.table import Table

from fuzz.conform.judge import FAIL, INFO, NO, PASS, RANGE_AND_MESSAGE, RANGE_ONLY, SKIP, Verdict
from tlinterp.io.foreigntext import for_rich, shown
from tlinterp.io.outfile import write_bytes, write_text

DIMENSIONS = ("instruction", "type", "layout")


def counts_by(verdicts: Sequence[Verdict], key) -> dict[str, dict[str, int]]:
    """{group: {pass, fail, info}} where `key(verdict)` lists the groups a verdict is in."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {PASS: 0, FAIL: 0, INFO: 0, SKIP: 0})
    for v in verdicts:
        for g in key(v):
            out[g][v.status] += 1
    return dict(out)


def _table(title: str, rows: dict[str, dict[str, int]], extra=None) -> Table:
    t = Table(title=for_rich(title), title_justify="left")
    t.add_column(title.split()[-1] if " " in title else "group")
    t.add_column("pass", justify="right", style="green")
    t.add_column("fail", justify="right", style="red")
    t.add_column("info", justify="right", style="dim")
    skips = any(r[SKIP] for r in rows.values())  # a column only with --profile skips
    if skips:
        t.add_column("skip", justify="right", style="yellow")
    if extra:
        t.add_column(extra[0], justify="right")
    for name in sorted(rows):
        r = rows[name]
        cells = [for_rich(name), str(r[PASS]), str(r[FAIL]) if r[FAIL] else "", str(r[INFO] or "")]
        if skips:
            cells.append(str(r[SKIP] or ""))
        if extra:
            cells.append(for_rich(extra[1].get(name, "")))
        t.add_row(*cells)
    return t


def diagnostic_counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """How many rejections blamed the expected range with the expected message, with other
    words, or another place (or none); plus "wrong_place": those of the last that did give a
    diagnostic, somewhere else."""
    n = {k: sum(v.diagnostic_match == k for v in verdicts)
         for k in (RANGE_AND_MESSAGE, RANGE_ONLY, NO)}
    n["wrong_place"] = sum(v.diagnostic_match == NO and bool(v.diagnostic_range)
                           for v in verdicts)
    return n


def diagnostic_cell(v: Verdict) -> str:
    """`range+message`, `range` or `no`, with the range the implementation gave."""
    if not v.diagnostic_match:
        return ""
    return f"{v.diagnostic_match} ({v.diagnostic_range or 'no diagnostic'})"


def summary_tables(verdicts: Sequence[Verdict]) -> list[Table]:
    by_kind = counts_by(verdicts, lambda v: [v.case.kind])
    invalid = [v for v in verdicts if v.case.kind == "invalid"]
    valid = [v for v in verdicts if v.case.kind == "valid"]
    warned = [v for v in valid if v.warning_match]  # expected warnings: reported, not judged
    matched: dict[str, str] = {}
    if invalid:
        n = diagnostic_counts(invalid)
        matched["invalid"] = (f"{n[RANGE_AND_MESSAGE]}/{len(invalid)} range+message, "
                              f"{n[RANGE_ONLY]} range, {n[NO]} no")
    if warned:
        matched["valid"] = f"{sum(v.warning_match == 'yes' for v in warned)}/{len(warned)} warnings"
    extra = ("diagnostics match", matched) if matched else None
    tables = [_table("Conformance by case kind", by_kind, extra)]
    if any(v.case.meta.get("migrated") for v in verdicts):  # tlconform --lang v0.4
        tables.append(_table("Cases by origin", counts_by(verdicts, lambda v: [
            f"migrated from {v.case.meta['migrated']}" if v.case.meta.get("migrated")
            else f"written in {v.case.lang}"])))
    tables.append(_table("Valid kernels by category",
                         counts_by(valid, lambda v: [v.case.category])))
    for dim in DIMENSIONS:
        rows = counts_by(valid, lambda v, d=dim: v.case.tags.get(d, []))
        if rows:
            tables.append(_table(f"Valid kernels by {dim}", rows))
    ub = [v for v in verdicts if v.case.kind == "undefined"]
    if ub:
        tables.append(_table("Undefined behaviour by kind",
                             counts_by(ub, lambda v: [v.case.meta.get("kind", "?")])))
    return tables


OUTPUT_TAIL = 12  # lines of an implementation's output -v shows under a failure


def failure_lines(v: Verdict) -> list[str]:
    """What `tlconform -v` shows under a failure: the first differences of the outputs, then
    the end of the implementation's output (its diagnostics, its stderr)."""
    lines = [f"differs: {m}" for m in v.mismatches]
    said = v.outcome.message.strip().splitlines()
    if said:
        cut = len(said) - OUTPUT_TAIL
        lines.append("its output" + (f" (last {OUTPUT_TAIL} of {len(said)} lines)" if cut > 0
                                     else "") + ":")
        lines += [f"| {line}" for line in said[max(cut, 0):]]
    return [shown(line) for line in lines]


def print_summary(console: Console, verdicts: Sequence[Verdict], impl_name: str,
                  max_failures: int = 20, verbose: bool = False, not_run: int = 0,
                  stop_after: Optional[int] = None) -> None:
    """The tables, the failures (with -v their output inline) and the one-line total;
    `not_run` cases were left out when the run stopped after `stop_after` failures."""
    for t in summary_tables(verdicts):
        console.print(t)
    failures = [v for v in verdicts if v.status == FAIL]
    for v in failures[:max_failures]:
        console.print(f"[red]FAIL[/red] {for_rich(v.case.id)}: {for_rich(v.detail)}",
                      highlight=False)
        if verbose:
            for line in failure_lines(v):
                console.print(f"     {line}", highlight=False, markup=False)
        console.print(f"     reproduce: {shown(v.reproduce or v.case.reproduce())}",
                      highlight=False, style="dim", markup=False)
    if len(failures) > max_failures:
        console.print(f"... and {len(failures) - max_failures} more failures (see --log)")
    # passes, but a compiler blaming the wrong text is worth seeing
    elsewhere = [v for v in verdicts if v.status == PASS and v.diagnostic_match == NO]
    for v in elsewhere[:max_failures]:
        console.print(f"[yellow]ELSEWHERE[/yellow] {for_rich(v.case.id)}: "
                      f"{for_rich(v.detail)}", highlight=False)
    if len(elsewhere) > max_failures:
        console.print(f"... and {len(elsewhere) - max_failures} more rejections elsewhere "
                      "(see --log)")
    n = {s: sum(v.status == s for v in verdicts) for s in (PASS, FAIL, INFO, SKIP)}
    colour = "red" if n[FAIL] else "green"
    # outside --profile, or a v0.3 case with no v0.4 form under --lang v0.4
    skipped = f", {n[SKIP]} skipped (--log and --json say why)" if n[SKIP] else ""
    stopped = (f"; stopped early after {stop_after} failure{'s' if stop_after != 1 else ''} "
               f"(-x/--max-failures), {not_run} case{'s' if not_run != 1 else ''} not run"
               if stop_after is not None and not_run else "")
    console.print(f"[{colour}]{for_rich(impl_name)}: {n[PASS]} passed, {n[FAIL]} failed, "
                  f"{n[INFO]} informational{skipped}, of {len(verdicts)} cases{stopped}"
                  f"[/{colour}]", highlight=False)


def log_lines(verdicts: Sequence[Verdict], impl_name: str) -> list[str]:
    lines = [f"# tlconform --impl {impl_name}: {len(verdicts)} cases"]
    for v in verdicts:
        lines.append(f"{v.status.upper():4} {v.case.id} ({v.seconds:.3f} s): {v.detail}")
        if v.case.kind == "invalid":
            lines.append(f"     message matches: {v.message_match}")
            if v.diagnostic_match:
                lines.append(f"     diagnostic: {diagnostic_cell(v)}")
        if v.warning_match:
            lines.append(f"     expected warning reported: {v.warning_match}")
        for where, text in v.outcome.warnings:
            lines.append(f"     warning {where}: {text}")
        lines.append(f"     reproduce: {v.reproduce or v.case.reproduce()}")
        if v.outcome.command:
            lines.append(f"     command:   {v.outcome.command}")
        if v.status != PASS and v.outcome.message.strip():
            for text in v.outcome.message.strip().splitlines()[:12]:
                lines.append(f"     | {text}")
    return lines


def write_log(path: Path, verdicts: Sequence[Verdict], impl_name: str) -> None:
    """Atomically (a full disk leaves no truncated log); an ArgumentError when it cannot."""
    write_text(str(path), shown("\n".join(log_lines(verdicts, impl_name))) + "\n", "--log")


def junit_xml(verdicts: Sequence[Verdict], impl_name: str) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"tlconform {impl_name}")
    by_kind: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_kind[v.case.kind].append(v)
    for kind, vs in by_kind.items():
        suite = ET.SubElement(root, "testsuite", name=kind, tests=str(len(vs)),
                              failures=str(sum(v.status == FAIL for v in vs)), errors="0",
                              skipped=str(sum(v.status == SKIP for v in vs)),
                              time=f"{sum(v.seconds for v in vs):.3f}")
        for v in vs:
            classname = v.case.id.rsplit("/", 1)[0].replace("/", ".")
            tc = ET.SubElement(suite, "testcase", classname=classname, name=v.case.name,
                               time=f"{v.seconds:.3f}")
            if v.status == SKIP:
                ET.SubElement(tc, "skipped", message=shown(v.detail[:500]))
            if v.status == FAIL:
                # an implementation's control characters would make the XML unreadable
                f = ET.SubElement(tc, "failure", message=shown(v.detail[:500]))
                f.text = shown(f"{v.outcome.message}\nreproduce: "
                               f"{v.reproduce or v.case.reproduce()}")
            out = ET.SubElement(tc, "system-out")
            out.text = shown(f"{v.detail}\nreproduce: {v.reproduce or v.case.reproduce()}")
    return ET.ElementTree(root)


def write_junit(path: Path, verdicts: Sequence[Verdict], impl_name: str) -> None:
    tree = junit_xml(verdicts, impl_name)
    ET.indent(tree)
    data = io.BytesIO()
    tree.write(data, encoding="utf-8", xml_declaration=True)
    write_bytes(str(path), data.getvalue(), "--junit-xml")
