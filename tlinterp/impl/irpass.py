"""`ir:COMMAND {tl} [{out}]`: an IR pass checked by running what it wrote (translation
validation).

COMMAND rewrites the program and writes another tensor-language text, to `{out}` or to its
stdout. The reference reads that text (the input's version unless the text's own markers say
otherwise: tlinterp/front/detect.py), checks it, and runs the original and the rewritten
program on the interpreter with the same arguments; the rewritten program's outputs are the
implementation's outputs, so `tlconform` and `tlfuzz` compare them with the reference as for
any implementation. What can go wrong, and how it is reported:

- the pass rejects the program (a reject status with a diagnostic): "rejected", as for a
  compiler (`command.rejection`); another exit status, a signal: "crashed"; no answer in
  time: "timeout" (its process group killed); its address space is bounded
  (command.TOOL_MEMORY);
- the text it wrote is no program (empty, not UTF-8, a syntax error, a static rule broken)
  or the function to run lost or changed its parameters: "crashed", quoting our checker's
  diagnostic in the rewritten text;
- the rewritten program has undefined behaviour the original has not (a pass that drops a
  needed barrier makes a data race): "failed", "the rewritten program has undefined
  behaviour: data-race at L.C-C";
- the original program is invalid but the pass accepted it: "ok" without outputs, as for a
  compiler that accepts an invalid program (the invalid case fails).

The round trip: what the pass printed must read back. Our front end reads and checks it
(above), and with `--roundtrip-check 'CHECKER {tl}'` (ImplOptions.roundtrip_check) the
compiler's own checker must accept it too (exit 0, within the case's time). A refusal by
either is "crashed" with `Outcome.finding` "roundtrip" (a finding of its own kind), its
message naming the reader that refused and quoting it.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from typing import Optional

import numpy as np

from tlinterp.impl.base import (
    DEFAULT_OPTIONS,
    Implementation,
    ImplOptions,
    Job,
    Outcome,
    SpecError,
    mentioned_warnings,
    outcome_of_error,
)
from tlinterp.impl.command import (
    TOOL_MEMORY,
    OutputRefused,
    check_template,
    describe_exit,
    expand_template,
    rejection,
    run_command,
    written_output,
)
from tlinterp.impl.template import write_kernel
from tlinterp.io.foreigntext import printable
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import SourceError, TLError, UndefinedBehaviour, decode_source

FIELDS = ("tl", "out", "func")
REWRITTEN = "rewritten.tl"  # the rewritten text's name in diagnostics
ROUNDTRIP = "roundtrip"  # Outcome.finding of a pass whose output does not read back
# a bound for a job whose caller gives none (tlrun without --timeout)
DEFAULT_TIMEOUT = 600.0


class IRPass(Implementation):
    """ir:COMMAND: a pass whose rewritten program runs on the interpreter."""

    def __init__(self, command: str, options: ImplOptions = DEFAULT_OPTIONS):
        check_template(command, FIELDS, ("tl",))
        self.command = command
        self.spec = f"ir:{command}"
        self.options = options

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        deadline = time.monotonic() + (DEFAULT_TIMEOUT if timeout is None else timeout)
        text, said = self.rewrite(job, deadline - time.monotonic())
        if text is None:
            return said
        try:
            original = _original(job)
        except TLError:  # the reference rejects it: an accepted invalid program
            return Outcome("ok", outputs={}, message="the pass accepted the program (exit 0)",
                           command=said.command)
        lang = _lang_of(text, job, original)
        rewritten = _read(text, lang)
        theirs = self.roundtrip(text, deadline - time.monotonic())
        if isinstance(rewritten, str) or theirs:
            ours = rewritten if isinstance(rewritten, str) else ""
            o = _crash(said, "\n".join(x for x in (ours, theirs) if x))
            o.finding = ROUNDTRIP
            return o
        try:
            name = original.function(job.func).name
        except KeyError as e:  # no such function: the job's own mistake, as tlrun says it
            return Outcome("rejected", message=str(e.args[0]), command=said.command)
        changed = signature_change(original, rewritten, name)
        if changed is not None:
            return _crash(said, changed)
        left = deadline - time.monotonic()
        try:
            runs = _bounded(lambda: _both(original, rewritten, name, job), max(left, 0.1))
        except Exception as e:  # noqa: BLE001 - the interpreter's own bug, said as such
            return Outcome("crashed", message=f"the reference interpreter raised "
                           f"{type(e).__name__}: {e} (a bug of the reference: please report "
                           "it)", command=said.command)
        if runs is None:
            return Outcome("timeout", message=f"the interpreter's runs of the original and "
                           f"the rewritten program did not end within {max(left, 0):.3g} s",
                           command=said.command)
        first, second = runs
        return _verdict(first, second, said)

    def rewrite(self, job: Job, timeout: float) -> tuple[Optional[str], Outcome]:
        """(the rewritten text, ok with the pass's own output) or (None, what went wrong)."""
        with tempfile.TemporaryDirectory(prefix="tl-ir-") as tmp:
            tl = write_kernel(job, tmp)
            out = os.path.join(tmp, "out.tl")
            uses_out = "{out}" in self.command
            done = run_command(expand_template(self.command, {"tl": tl, "out": out,
                                                              "func": job.func}),
                               max(timeout, 0.1), memory=TOOL_MEMORY)
            command = " ".join(expand_template(self.command, {
                "tl": os.path.basename(tl), "out": "out.tl", "func": job.func}))
            # its messages name the files as the command line shown does, not the scratch
            # directory that is gone when anyone reads them
            done.stdout = done.stdout.replace(tmp + os.sep, "")
            done.stderr = done.stderr.replace(tmp + os.sep, "")
            if done.code is None:
                status = "timeout" if "no answer" in done.problem else "crashed"
                return None, Outcome(status, message=f"the pass: {done.problem}\n"
                                     f"{done.stderr}".strip(), command=command)
            said = rejection(done, self.options.reject_status)
            if said is not None:
                said.command = command
                return None, said
            if done.code != 0:
                return None, Outcome("crashed", message=f"the pass ended with "
                                     f"{describe_exit(done.code)}\n{done.text}".strip(),
                                     command=command)
            where = "{out}" if uses_out else "stdout"
            # the pass's own chatter: stderr (and stdout when the program went to {out})
            chatter = done.text if uses_out else done.stderr
            ok = Outcome("ok", message=chatter, command=command,
                         warnings=mentioned_warnings(chatter))
            try:
                data = written_output(done, out if uses_out else None, "the ir: pass")
            except OutputRefused as e:
                return None, _crash(ok, f"{e}: no rewritten kernel of this program")
            if not data.strip():
                return None, _crash(ok, f"the pass exited 0 but wrote no program to {where}")
            try:
                return decode_source(data, REWRITTEN), ok
            except SourceError as e:
                return None, _crash(ok, f"the rewritten program is not UTF-8 text:\n{e.format()}")


    def roundtrip(self, text: str, timeout: float) -> str:
        """Why the round-trip checker refuses the rewritten `text` ("" when it accepts it,
        or when there is none)."""
        check = self.options.roundtrip_check
        if not check:
            return ""
        with tempfile.TemporaryDirectory(prefix="tl-ir-rt-") as tmp:
            path = os.path.join(tmp, REWRITTEN)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            done = run_command(expand_template(check, {"tl": path}), max(timeout, 0.1),
                               memory=TOOL_MEMORY)
            shown = " ".join(expand_template(check, {"tl": REWRITTEN}))
            said = done.text.replace(tmp + os.sep, "").strip()
        if done.code == 0:
            return ""
        why = done.problem if done.code is None else f"ended with {describe_exit(done.code)}"
        return (f"round trip: the checker `{shown}` refuses what the pass wrote ({why})"
                + (f":\n{printable(said)}" if said else ""))


def _original(job: Job) -> ir.Program:
    """The job's checked program (the callers hand it in its own language; a `-D` definition
    of tlrun has reached it), else its text read and checked."""
    from tlinterp import check, parse

    if job.program is not None:
        return job.program
    return check(parse(job.source, filename=job.filename, lang=job.lang))


def _lang_of(text: str, job: Job, original: ir.Program) -> str:
    """The rewritten text's version: its own markers, else the input's."""
    from tlinterp.front.detect import detect

    return detect(text) or job.lang or original.lang or "v0.3"


def _read(text: str, lang: str):
    """The checked rewritten program, or why it is none (our diagnostics, quoted: a syntax
    error and a broken static rule alike, since the v0.4 parser checks some rules itself)."""
    from tlinterp import check, parse

    try:
        return check(parse(text, filename=REWRITTEN, lang=lang))
    except TLError as e:
        return f"the rewritten program is not valid {lang}:\n{e.format()}"


def signature_change(original: ir.Program, rewritten: ir.Program, name: str
                     ) -> Optional[str]:
    """What the pass changed about the parameters of @name (None: nothing): the arguments
    are bound by name and type, so a rewritten function must take the same ones."""
    try:
        fn = rewritten.function(name)
    except KeyError:
        names = ", ".join("@" + f.name for f in rewritten.functions) or "none"
        return f"the rewritten program has no function @{name} (it has {names})"
    before = original.function(name)
    if _params(before) == _params(fn):
        return None
    return (f"the pass changed the signature of @{name}: ({_shown(before)}) became "
            f"({_shown(fn)})")


def _params(fn: ir.Function) -> list[tuple[str, object]]:
    return [(a.value.name, a.type) for a in fn.args]


def _shown(fn: ir.Function) -> str:
    return ", ".join(f"%{a.value.name}: {a.type}" for a in fn.args)


class _Run:
    """One interpreter run: outputs, or the TLError it ended with."""

    def __init__(self, outputs: Optional[dict] = None, error: Optional[TLError] = None):
        self.outputs, self.error = outputs, error


def _one(program: ir.Program, name: str, job: Job) -> _Run:
    from tlinterp.interp import run

    try:
        # each run binds fresh copies of the arguments: the two never share a buffer
        return _Run(run(program, job.args, func=name, groups=job.groups))
    except TLError as e:
        return _Run(error=e)


def _both(original: ir.Program, rewritten: ir.Program, name: str, job: Job
          ) -> tuple[_Run, _Run]:
    return _one(original, name, job), _one(rewritten, name, job)


def _bounded(fn, timeout: float):
    """fn() on a thread, or None past `timeout` (the thread ends in the background: an
    interpreter run cannot be stopped from outside)."""
    result: list = []
    failure: list = []

    def body():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failure.append(e)

    worker = threading.Thread(target=body, daemon=True, name="tl-ir-interp")
    worker.start()
    worker.join(timeout)
    if failure:
        raise failure[0]
    return result[0] if result else None


def _verdict(original: _Run, rewritten: _Run, said: Outcome) -> Outcome:
    """The outcome from the two runs (see the module docstring)."""
    if rewritten.error is None:
        note = _difference(original, rewritten)
        return Outcome("ok", outputs=rewritten.outputs, command=said.command,
                       message="\n".join(x for x in (note, said.message.strip()) if x),
                       warnings=said.warnings)
    e = rewritten.error
    o = outcome_of_error(e)
    o.command = said.command
    if o.status == "rejected":
        # refused when run (a construct the interpreter cannot run, arguments it cannot
        # bind): no rejection of the program by the pass, which accepted it
        o.status = "crashed"
    if isinstance(e, UndefinedBehaviour) and original.error is None:
        places = ", ".join(dict.fromkeys(f"{r.kind} at {r.span}" for r in e.reports))
        o.message = (f"the rewritten program has undefined behaviour: {places} (the original "
                     f"program has none)\n{e.format()}")
    elif original.error is None:
        o.message = f"the rewritten program failed where the original did not:\n{e.format()}"
    else:
        o.message = f"the rewritten program (the original fails too):\n{e.format()}"
    return o


def _difference(original: _Run, rewritten: _Run) -> str:
    """A line on how the rewritten program's outputs differ from the original's, bit for
    bit (the verdict is the caller's comparison, with its error bounds)."""
    if original.error is not None:
        kind = "undefined behaviour" if isinstance(original.error, UndefinedBehaviour) \
            else "an error"
        return f"(the original program ends in {kind}; the rewritten one does not)"
    differ = [k for k, v in (original.outputs or {}).items()
              if k in rewritten.outputs and not _same(v, rewritten.outputs[k])]
    if differ:
        return ("the rewritten program's outputs differ from the original's in "
                + ", ".join(differ))
    return ""


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    # the bytes: bf16 (ml_dtypes, dtype kind "V") has NaNs that array_equal calls unequal
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _crash(said: Outcome, why: str) -> Outcome:
    chatter = said.message.strip()
    return Outcome("crashed", message=printable(why) + (f"\n{chatter}" if chatter else ""),
                   command=said.command)


def ir_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """an IR pass: ir:'COMMAND {tl} [{out}]' rewrites the program, the interpreter runs it"""
    if not arg:
        raise SpecError("expected ir:COMMAND with {tl} (and {out}, else stdout)")
    return IRPass(arg, options)
