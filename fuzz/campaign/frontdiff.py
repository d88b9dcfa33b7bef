"""The front-end differential campaign (`tlfuzz --frontend --against 'COMMAND {tl}'`): our
parser and checker against another front end on the same texts, generated programs and
near-valid mutants of them (fuzz/campaign/frontend.py).

The other front end is a command that exits 0 when it accepts the file `{tl}` and non-zero
when it rejects it; it runs in its own process group with a time bound (AGAINST_TIMEOUT) and
a bounded address space (tlinterp.impl.command.TOOL_MEMORY). Four disagreements:

| class | what happened |
|---|---|
| `we-accept-they-reject` | our checker accepts, the other front end exits non-zero |
| `we-reject-they-accept` | our checker rejects, the other front end exits 0 |
| `they-crash` | the other front end is killed by a signal (an assertion, a segfault) |
| `they-hang` | no answer within AGAINST_TIMEOUT seconds (killed with its group) |

Each is a `Disagreement` finding with both messages and the program, keyed by its class and
the shape of the deciding diagnostic (theirs when they reject, ours when we do: names,
numbers and quoted words left out, `rejections.message_shape`), so one rule the two front
ends disagree on is one saved finding and every further case of it is only counted
(fuzz/campaign/rejections.py saves them).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import dataclass
from typing import Optional

from fuzz.campaign.rejections import Keyed, message_shape
from fuzz.strategies import FuzzCase
from tlinterp.impl.base import SpecError, mentioned_diagnostics
from tlinterp.impl.command import (
    TOOL_MEMORY,
    check_template,
    describe_exit,
    expand_template,
    run_command,
)
from tlinterp.io.foreigntext import shown
from tlinterp.lang.diagnostics import TLError

__all__ = ["DISAGREEMENT", "CLASSES", "AGAINST_TIMEOUT", "Disagreement", "OtherFrontEnd",
           "Ours", "ours", "disagreement", "check_against"]

DISAGREEMENT = "frontend-disagreement"
CLASSES = ("we-accept-they-reject", "we-reject-they-accept", "they-crash", "they-hang")
# seconds for the other front end on one small program: a parser answers in milliseconds
AGAINST_TIMEOUT = 10.0
FIELDS = ("tl",)


def check_against(command: str) -> None:
    """SpecError unless `command` is a usable front-end command: `{tl}` and nothing else as
    placeholder, and a program that exists."""
    check_template(command, FIELDS, FIELDS)
    program = shlex.split(command)[0]
    if os.sep in program:
        found = os.access(program, os.X_OK)
    else:
        import shutil

        found = shutil.which(program) is not None
    if not found:
        raise SpecError(f"--against: cannot run '{program}' (no such executable)")


@dataclass
class Theirs:
    """What the other front end said: `verdict` is accepted, rejected, crashed or hang."""

    verdict: str
    output: str
    status: str  # "exit status N", "killed by signal S", "no answer within S s"


class OtherFrontEnd:
    """The command of `--against`, run on one text at a time."""

    def __init__(self, command: str, timeout: float = AGAINST_TIMEOUT):
        check_template(command, FIELDS, FIELDS)
        self.command, self.timeout = command, timeout

    def judge(self, text: str, lang: str) -> Theirs:
        with tempfile.TemporaryDirectory(prefix="tl-against-") as tmp:
            path = os.path.join(tmp, "kernel.tl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            done = run_command(expand_template(self.command, {"tl": path}), self.timeout,
                               memory=TOOL_MEMORY)
        # the scratch path means nothing to a reader: the file is saved as the finding
        output = done.text.replace(path, "kernel.tl").strip()
        if done.code is None:
            if "no answer" in done.problem:
                return Theirs("hang", output, done.problem)
            return Theirs("crashed", output, done.problem)
        if done.code < 0:
            return Theirs("crashed", output, describe_exit(done.code))
        return Theirs("accepted" if done.code == 0 else "rejected", output,
                      describe_exit(done.code))

    def shown(self, file: str) -> str:
        """The command line on a saved file."""
        return shlex.join(expand_template(self.command, {"tl": file}))


@dataclass
class Ours:
    """What our parser and checker said: accepted, rejected (with the first diagnostic's
    message and everything formatted) or crashed (an exception that is no TLError: the
    front-end robustness finding of fuzz/campaign/frontend.py)."""

    verdict: str
    first: str = ""
    output: str = ""


def ours(text: str, lang: str) -> Ours:
    import tlinterp

    try:
        tlinterp.check(tlinterp.parse(text, "kernel.tl", lang=lang))
    except TLError as e:
        first = next((d.message for d in e.diagnostics), str(e))
        return Ours("rejected", first, e.format())
    except RecursionError:
        return Ours("crashed", "RecursionError (deeply nested input must be a diagnostic)")
    except Exception as e:  # noqa: BLE001 - anything else is a robustness finding
        return Ours("crashed", f"{type(e).__name__}: {e}")
    return Ours("accepted")


@dataclass
class Disagreement(Keyed):
    """A text the two front ends judge differently (the key: class and rule)."""

    klass: str = ""
    command: str = ""  # the other front end's command template
    lang: str = "v0.3"

    def header(self, base: str) -> str:
        return (f"ours:   tlrun {shlex.quote(base + '.tl')} --check --lang {self.lang}\n"
                f"theirs: {OtherFrontEnd(self.command).shown(base + '.tl')}")


def _their_rule(theirs: Theirs) -> str:
    found = mentioned_diagnostics(theirs.output)
    if found:
        return found[0][1]
    return next((line.strip() for line in theirs.output.splitlines() if line.strip()),
                "(no message)")


def disagreement(case: FuzzCase, text: str, lang: str, other: OtherFrontEnd,
                 we: Optional[Ours] = None) -> Optional[Disagreement]:
    """The finding when our front end and `other` judge `text` differently, else None
    (both accept, or both reject: where each points is not compared). `case` carries the
    arguments and the function the text was made from; `we` is our verdict when the
    caller has it."""
    we = we or ours(text, lang)
    if we.verdict == "crashed":
        return None  # frontend.py's own finding
    theirs = other.judge(text, lang)
    if theirs.verdict == "hang":
        klass, rule = "they-hang", theirs.status
    elif theirs.verdict == "crashed":
        klass, rule = "they-crash", f"{theirs.status}: {_their_rule(theirs)}"
    elif we.verdict == "accepted" and theirs.verdict == "rejected":
        klass, rule = "we-accept-they-reject", _their_rule(theirs)
    elif we.verdict == "rejected" and theirs.verdict == "accepted":
        klass, rule = "we-reject-they-accept", we.first
    else:
        return None
    key = f"{klass}: {message_shape(rule)}"
    message = (f"front ends disagree ({klass}) on this {lang} text:\n"
               f"our checker: {we.verdict}" + (f"\n{we.output}" if we.output else "")
               + f"\nthe other front end ({other.command}): {theirs.verdict}, "
               f"{theirs.status}" + (f"\n{shown(theirs.output)}" if theirs.output else ""))
    return Disagreement(case, DISAGREEMENT, message, construct=key, klass=klass,
                        command=other.command, lang=lang)
