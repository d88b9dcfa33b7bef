"""Running an external command for one job: its own process group (killed when the command
ends or times out, so nothing it started is left behind), output decoded whatever bytes it
prints, inputs handed over as copies in a scratch directory (a tool that deletes or rewrites
its input cannot touch the caller's)."""

from __future__ import annotations

import os
import re
import resource
import shlex
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Optional

from tlinterp.impl.base import Outcome, SpecError, mentioned_diagnostics
from tlinterp.io.boundedread import RefusedFile, read_bounded, size_text
from tlinterp.io.foreigntext import printable

_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass
class Finished:
    """How a command ended: `code` is None after a timeout or when it could not start."""

    code: Optional[int]
    stdout: str
    stderr: str
    command: str
    problem: str = ""  # why there is no exit code
    stdout_bytes: bytes = b""  # stdout undecoded (a binary such as SPIR-V), up to MAX_OUTPUT
    stdout_size: int = 0  # bytes it printed to stdout, read or not

    @property
    def text(self) -> str:
        return self.stderr + self.stdout


def check_template(template: str, fields: tuple[str, ...], required: tuple[str, ...]) -> None:
    """SpecError unless the template splits like a command line and names only `fields`."""
    for name in _PLACEHOLDER.findall(template):
        if name not in fields:
            raise SpecError(f"unknown placeholder {{{name}}} in the template (known: "
                            f"{', '.join('{' + f + '}' for f in fields)})")
    for name in required:
        if "{" + name + "}" not in template:
            raise SpecError(f"the template needs {{{name}}}")
    try:
        words = shlex.split(_OPTIONAL.sub(r"\1", template))
    except ValueError as e:  # e.g. an unbalanced quote
        raise SpecError(f"the template does not split like a command line ({e}): "
                        f"{template}") from None
    if not words:
        raise SpecError("the template is empty")
    if len(words) == 1 and " " in words[0] and _PLACEHOLDER.search(words[0]):
        # --impl "opencl-c:'tinytc {tl}'": the shell keeps the inner quotes, and the whole
        # command would become one program name
        raise SpecError(f"the command is one quoted word, so '{words[0]}' would be run as "
                        "a program name: quote the whole option once, as in --impl "
                        f"'KIND:{words[0]}', not inner quotes")


def expand_template(template: str, values: dict[str, Optional[str]]) -> list[str]:
    """The argv for one job: `[...]` parts vanish when a placeholder in them has no value;
    placeholders are substituted per word, so paths need no quoting."""

    def optional(m: re.Match) -> str:
        inner = m.group(1)
        names = _PLACEHOLDER.findall(inner)
        return inner if all(values.get(n) is not None for n in names) else ""

    text = _OPTIONAL.sub(optional, template)
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise SpecError(f"the template does not split like a command line ({e})") from None

    def fill(m: re.Match) -> str:
        v = values.get(m.group(1))
        if v is None:
            raise SpecError(f"the template uses {{{m.group(1)}}} outside [...] but this case "
                            "has no value for it")
        return v

    return [_PLACEHOLDER.sub(fill, w) for w in words]


def _decode(data: Optional[bytes]) -> str:
    # the one place a command's output becomes text: no terminal escapes get past it
    return printable((data or b"").decode("utf-8", errors="replace"))


# Output read back per stream: a command that prints without end must not exhaust memory.
MAX_OUTPUT = 16 << 20
# The address space of a tool that reads or rewrites one small program (an IR pass, another
# front end): far more than it needs, and a runaway one fails its allocation instead of
# taking the machine's memory from the other jobs.
TOOL_MEMORY = 4 << 30


def run_command(argv: list[str], timeout: Optional[float], cwd: Optional[str] = None,
                memory: Optional[int] = None) -> Finished:
    """Run argv to the end or the timeout; never raises for the command's own failures.

    Its output goes to temporary files, not pipes: waiting for a pipe's end would also wait
    for any process it left running in the background (or detached with setsid), so a command
    that answered at once would look like one that never did. `memory` bounds its address
    space in bytes (and that of every process it starts afterwards): an allocation past it
    fails in the command, which then ends as it handles that (a C++ tool aborts)."""
    command = shlex.join(argv)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    cwd=cwd, start_new_session=True)
        except OSError as e:
            return Finished(None, "", "", command, f"cannot run {argv[0]}: {e.strerror or e}")
        if memory is not None:
            limit_memory(proc, memory)
        problem = ""
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            signal_group(proc)
            proc.wait()
            problem = f"no answer within {timeout:g} s (killed)"
        except BaseException:  # Ctrl-C: leave no orphans behind
            signal_group(proc)
            proc.wait()
            raise
        signal_group(proc)  # what it left running in its group (detached sessions escape)
        code = None if problem else proc.returncode
        size = out.seek(0, os.SEEK_END)
        out.seek(0)
        raw = out.read(MAX_OUTPUT)
        return Finished(code, _read(out), _read(err), command, problem, raw, size)


class OutputRefused(Exception):
    """The program a command wrote is not read: too large, or {out} is no regular file."""


def written_output(done: Finished, out: Optional[str], who: str) -> bytes:
    """What a command wrote as its result: the file `out` (its `{out}`) or, with None, its
    stdout; at most MAX_OUTPUT bytes, never blocking (a FIFO as {out} is refused, not
    waited on).  OutputRefused, naming `who` (e.g. "the spirv: compiler"), when there is
    more or {out} is not a regular file; b"" when {out} was not written."""
    if out is None:
        if done.stdout_size > MAX_OUTPUT:
            raise OutputRefused(f"{who} wrote {size_text(done.stdout_size)} to stdout, more "
                                f"than the {size_text(MAX_OUTPUT)} read back: refused")
        return done.stdout_bytes
    try:
        return read_bounded(out, MAX_OUTPUT, "a command's output")
    except RefusedFile as e:
        raise OutputRefused(f"{who} wrote {{out}} ({os.path.basename(out)}), which "
                            f"{e.strerror}") from None
    except OSError:  # not written (or unreadable): the callers say "wrote nothing"
        return b""


def limit_memory(proc: subprocess.Popen, memory: int) -> None:
    """RLIMIT_AS of the started command. Set from outside just after the start (Popen has no
    rlimit argument, and a preexec_fn is unsafe in a process with threads, as tlconform -j
    is): the command's first microseconds run unbounded, which no runaway allocation
    exploits."""
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (memory, memory))
    except (ProcessLookupError, PermissionError, ValueError, OSError):
        pass  # it has already ended, or the system refuses: it runs unbounded


def _read(f) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    text = _decode(f.read(MAX_OUTPUT))
    if size > MAX_OUTPUT:
        text += f"\n[... {size - MAX_OUTPUT} more bytes of output not read]\n"
    return text


def signal_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """`sig` to the process group of a command started with start_new_session."""
    try:
        os.killpg(proc.pid, sig)  # the session leader's pid is the group id
    except (ProcessLookupError, PermissionError):
        pass


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


# the contract's own "rejected" status: it means nothing else, so it needs no diagnostic
CONTRACT_REJECT = 2


def rejection(done: Finished, reject_status: tuple[int, ...]) -> Optional[Outcome]:
    """How an external compiler's end reads when its exit status is one of `reject_status`
    (ImplOptions.reject_status): "rejected" with the diagnostics its output names, or
    "crashed" for a status other than 2 without any `FILE:LINE.COL-COL: message` line (gcc,
    clang and tinytc exit 1 for their own failures too: a rejection must point at the
    program). None when the status is no reject status (or there is none: a signal or a
    timeout), for the caller's own rules."""
    if done.code is None or done.code not in reject_status:
        return None
    diagnostics = mentioned_diagnostics(done.text)
    if diagnostics or done.code == CONTRACT_REJECT:
        return Outcome("rejected", message=done.text, diagnostics=diagnostics,
                       command=done.command)
    return Outcome("crashed", message=f"{describe_exit(done.code)} (a --reject-status) but no "
                   f"FILE:LINE.COL-COL: message diagnostic in its output\n{done.text}".strip(),
                   command=done.command)
