"""A command template as an implementation: `tool {kernel} --args {args} --out {out}
[--func {func}] [--groups {groups}]`, following tlrun's exit statuses and .npz convention."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from typing import Optional

from tlinterp.impl.base import (
    DEFAULT_OPTIONS,
    Implementation,
    ImplOptions,
    Job,
    Outcome,
    mentioned_kinds,
    mentioned_warnings,
)
from tlinterp.impl.command import (
    check_template,
    describe_exit,
    expand_template,
    rejection,
    run_command,
)
from tlinterp.io.args import Groups, groups_text, load_npz, save_npz
from tlinterp.lang.diagnostics import TLError

FIELDS = ("kernel", "args", "out", "func", "groups")


def write_kernel(job: Job, directory: str) -> str:
    """A fresh copy of the job's kernel text (named after it, ending in .tl) for a tool."""
    kernel = os.path.join(directory, os.path.basename(job.filename) or "kernel.tl")
    if not kernel.endswith(".tl"):
        kernel += ".tl"
    with open(kernel, "w", encoding="utf-8") as f:
        f.write(job.source)
    return kernel


def write_inputs(job: Job, directory: str) -> tuple[str, str]:
    """Fresh copies of the job's kernel and arguments for an external tool to consume."""
    args = os.path.join(directory, "args.npz")
    save_npz(args, job.args)
    return write_kernel(job, directory), args


def output_limit(args) -> int:
    """The most bytes an implementation's output file may declare: the outputs are the job's
    memref and group arguments again (twice over for echoed or extra entries), plus room for
    small extras; anything larger is no output of this job (a zip bomb, a runaway writer)."""
    return 2 * sum(int(getattr(a, "nbytes", 0)) for a in args.values()) + 2**20


class Template(Implementation):
    def __init__(self, template: str, options: ImplOptions = DEFAULT_OPTIONS):
        check_template(template, FIELDS, ("kernel",))
        self.spec = template
        self.options = options

    def argv(self, kernel: str, args: str, out: str, func: Optional[str],
             groups: Optional[Groups]) -> list[str]:
        return expand_template(self.spec, {"kernel": kernel, "args": args, "out": out,
                                           "func": func, "groups": None if groups is None
                                           else groups_text(groups)})

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="tl-impl-") as tmp:
            kernel, args = write_inputs(job, tmp)
            out = os.path.join(tmp, "out.npz")
            done = run_command(self.argv(kernel, args, out, job.func, job.groups), timeout)
            shown = self.argv(os.path.basename(kernel), "args.npz", "out.npz", job.func,
                              job.groups)
            command = " ".join(shown)
            if done.code is None:
                status = "timeout" if "no answer" in done.problem else "crashed"
                return Outcome(status, message=f"{done.problem}\n{done.text}".strip(),
                               command=command)
            if done.code == 0:
                if not os.path.isfile(out):
                    return Outcome("crashed", message="exit 0 but no output file\n"
                                   + done.text, command=command)
                try:
                    outputs = load_npz(out, limit=output_limit(job.args))
                except TLError as e:
                    return Outcome("crashed", message=f"unreadable output: {e.format()}",
                                   command=command)
                return Outcome("ok", outputs=outputs, message=done.text, command=command,
                               warnings=mentioned_warnings(done.text))
            said = rejection(done, self.options.reject_status)
            if said is not None:
                said.command = command  # as shown, with the scratch directory's names
                return said
            if done.code == 1:  # not a reject status: undefined behaviour or a run-time failure
                return Outcome("failed", message=done.text, ub_kinds=mentioned_kinds(done.text),
                               command=command)
            return Outcome("crashed", message=f"{describe_exit(done.code)}\n{done.text}",
                           command=command)

    def reproduce(self, kernel: str, args: Optional[str], func: Optional[str],
                  groups: Optional[Groups]) -> str:
        argv = self.argv(kernel, args or "args.npz", "out.npz", func, groups)
        line = shlex.join(argv)
        if args is None and "{args}" in self.spec:
            # a case without arguments (an invalid program): run() hands the tool an empty
            # archive, so the command line makes one first instead of naming a missing file
            make = shlex.join([sys.executable, "-c", 'import numpy; numpy.savez("args.npz")'])
            line = f"{make} && {line}"
        return line


def factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """a command template: TOOL {kernel} --args {args} --out {out} [--func {func}] ..."""
    return Template(arg or "", options)
