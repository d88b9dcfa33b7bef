"""Valid programs an implementation rejects: one finding per rejected construct, not per case.
(The same saving serves every `Keyed` finding: the front-end disagreements of
fuzz/campaign/frontdiff.py are keyed by their rule.)

A target that does not know a construct (a type, an instruction, a form of operand) rejects
every kernel using it; saved case by case, that drowns a campaign in copies of one fact. The
construct is named from the implementation's diagnostic: the type or instruction at the
place its `FILE:LINE.COL-COL: message` points to, with the message (numbers, names and
parenthesised details with numbers left out, so the same complaint about another kernel
gives the same key). The first case of a
construct is saved as `rejected-construct-KEY.{tl,npz,txt}`; later ones are only counted, one
line each in `rejected-construct-KEY.cases` (which the first case opens).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Optional

from fuzz.campaign.findings import Finding, reproduce_command, save_files
from fuzz.campaign.trust import signature_line
from fuzz.strategies import FuzzCase
from tlinterp.impl.base import mentioned_diagnostics
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import TLError
from tlinterp.lang.types import ScalarType
from tlinterp.lang.v03.printer import mnemonic

__all__ = ["REJECTED", "Keyed", "RejectedConstruct", "rejected", "construct_of",
           "message_shape", "save_rejection", "drop_known", "count"]

REJECTED = "rejected-construct"
_TYPES = "|".join(sorted((t.value for t in ScalarType), key=len, reverse=True))
_TYPE = re.compile(rf"({_TYPES})(?=x[0-9?]|[^0-9A-Za-z_]|$)")  # u8, and u8x4x? in a memref
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


@dataclass
class Keyed(Finding):
    """A finding saved once per key (`construct`); its later cases are only counted."""

    construct: str = ""  # the key, e.g. "type u8", "store: syntax error..."

    def header(self, base: str) -> str:
        """The first line of the saved NAME.txt: the command that reruns the case."""
        return reproduce_command(base + ".tl", base + ".npz", self)


@dataclass
class RejectedConstruct(Keyed):
    """A valid program the implementation rejected; the key is what it rejected."""


def rejected(case: FuzzCase, impl, said: str) -> RejectedConstruct:
    """The finding for a valid, UB-free program that `impl` rejected, saying `said`."""
    construct = construct_of(case.program, said)
    return RejectedConstruct(case, REJECTED, f"{impl.name} rejected a valid, UB-free program "
                             f"({construct}):\n{said}", impl=(impl.spec, impl.options),
                             construct=construct)


def _normal(message: str) -> str:
    """A diagnostic without what differs from kernel to kernel (names, numbers)."""
    message = re.sub(r"%[\w.]+", "%_", message)
    return re.sub(r"\d+", "N", message).strip()[:120]


def message_shape(message: str) -> str:
    """`_normal`, with quoted words ("found 'x'") and parenthesised details holding numbers
    ("(Got A=1x1, B=1x?)", which one front end gives for some cases of a rule and not for
    others) left out too: the rule a diagnostic is about, the same whatever token or shape
    of whichever program broke it."""
    message = re.sub(r'"[^"\n]*"', '"_"', message)
    message = re.sub(r"'[^'\n]*'", "'_'", message)
    return _normal(_no_details(message))


def _no_details(message: str) -> str:
    """Without parenthesised details holding numbers: "(Got A=1x1, B=1x?)"."""
    return re.sub(r"\s*\([^()\n]*\d[^()\n]*\)", "", message)


def construct_of(program: ir.Program, said: str) -> str:
    """The construct a rejection is about (see the module docstring); without a place in
    the program, the first line of what the implementation said."""
    lines = program.source.split("\n")
    for where, message in mentioned_diagnostics(said):
        line, col = (int(x) for x in where.split("-")[0].split(".")[:2])
        if not 1 <= line <= len(lines):
            continue
        text = lines[line - 1][col - 1:]
        m = _TYPE.match(text)
        if m:  # `u8`, `u8x4x?` (a memref of it): the scalar type is the construct
            return f"type {m.group(1)}: {_normal(_no_details(message))}"
        inst = _instruction_at(program, line, col)
        if inst is not None:
            return f"{_name(inst)}: {_normal(_no_details(message))}"
        w = _WORD.match(text)
        return f"{w.group(0) if w else text[:1]}: {_normal(_no_details(message))}"
    first = next((s for s in said.strip().splitlines() if s.strip()), "(no message)")
    return _normal(first)


def _name(inst: ir.Instruction) -> str:
    """The instruction's mnemonic: v0.3's, else (an instruction only v0.4 has: `constant`,
    `parallel`, ...) v0.4's."""
    try:
        return mnemonic(inst)
    except TLError:  # the v0.3 printer has no spelling for it
        from tlinterp.lang.v04.names import construct

        return construct(inst)


def _instruction_at(program: ir.Program, line: int, col: int) -> Optional[ir.Instruction]:
    """The innermost instruction whose span holds the place (its region's instructions come
    after it in the walk, so the last match is the innermost)."""
    found = None
    for fn in program.functions:
        for inst in ir.walk(fn.body):
            s = getattr(inst, "span", None)
            if s is not None and (s.line, s.col) <= (line, col) <= (s.end_line, s.end_col):
                found = inst
    return found


def _slug(construct: str) -> str:
    """A file-name part for the construct: readable, short, and unique by its hash."""
    text = re.sub(r"[^A-Za-z0-9_.]+", "-", construct.split(":")[0]).strip("-")[:40]
    return f"{text}-{hashlib.sha1(construct.encode()).hexdigest()[:8]}"


def base_of(finding: Keyed, out_dir: str) -> str:
    """Where the key's first case is (or will be) saved, without extension."""
    return os.path.join(out_dir, f"{finding.kind}-{_slug(finding.construct)}")


def drop_known(findings: list[Finding], out_dir: Optional[str], count_them: bool
               ) -> list[Finding]:
    """The findings without rejections of constructs already saved in `out_dir`; each of
    those is counted (when `count_them`: not while shrinking, whose variants are no new
    cases), and the search goes on instead of stopping at a known fact."""
    if out_dir is None:
        return findings
    keep = []
    for f in findings:
        if isinstance(f, Keyed) and os.path.exists(base_of(f, out_dir) + ".tl"):
            if count_them:
                _count(f, base_of(f, out_dir))
            continue
        keep.append(f)
    return keep


def _count(finding: Finding, base: str) -> None:
    digest = hashlib.sha1(finding.case.source.encode()).hexdigest()[:12]
    # one short append per case: O_APPEND keeps the lines of concurrent jobs whole
    with open(base + ".cases", "a") as f:
        f.write(f"{digest} {finding.case.func}\n")


def save_rejection(finding: Keyed, out_dir: str) -> tuple[str, bool]:
    """(path without extension, whether this case is the construct's first). The first case
    is saved in full; each case (the first too) adds a line to NAME.cases: the count. Safe
    across the campaign's jobs: creating NAME.tl exclusively decides which case is first."""
    os.makedirs(out_dir, exist_ok=True)
    base = base_of(finding, out_dir)
    try:
        fd = os.open(base + ".tl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        first = False
    else:
        first = True
        os.close(fd)  # the claim; its content comes last, atomically, over it
        header = finding.header(base)
        text = (header + "\n" + signature_line(header) + "\n"
                f"key: {finding.construct}\n(the first case; {base}.cases counts "
                "every case with this key, one line each)\n\n"
                + finding.message + "\n")
        try:
            save_files(base, [(".npz", finding.case.args), (".txt", text),
                              (".tl", finding.case.source)])
        except BaseException:  # saved whole or not at all: the claim goes too
            try:
                os.unlink(base + ".tl")
            except OSError:
                pass
            raise
    _count(finding, base)
    return base, first


def count(base: str) -> int:
    """How many cases were rejected at the construct saved as `base`."""
    try:
        with open(base + ".cases") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0
