"""`tlfuzz reproduce`: rerun a finding against the reference, as an interestingness test.

    tlfuzz reproduce FINDING [--device D] [--timeout S]
    tlfuzz reproduce KERNEL.tl --args ARGS.npz --impl SPEC [--func F] [--groups X[,Y[,Z]]]
                     [--lang v0.3|v0.4] [--device D] [--lowering KEY=VALUE ...]
                     [--work-group-size W0xW1] [--build-options '...'] [--reject-status 1,2]
                     [--timeout S]

FINDING is NAME, NAME.tl or NAME.txt of a finding saved by tlfuzz: the implementation and its
flags come from the first line of NAME.txt (flags given here override them). The reference
interpreter and the implementation run the kernel on the arguments; their outputs are compared
within the fuzzer's error bounds (fuzz.oracle.compare).

Exit statuses: EXIT_STATUSES below (`tlfuzz reproduce --help` lists them): 0 agrees, 1 differs,
2 usage error or no test, 3 internal error, 4 rejected or failed, 5 crashed or timed out, 130.
A reducer (creduce, cvise) keeps a candidate when this exits 1: `...; test $? = 1`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import Optional

from fuzz.campaign.options import positive_seconds
from tlinterp.io.args import Groups, groups_text
from tlinterp.io.foreigntext import shown

AGREES, DIFFERS, USAGE, INTERNAL, SAID_NO, CRASHED = 0, 1, 2, 3, 4, 5
DEFAULT_TIMEOUT = 300.0  # seconds per run of the implementation


def reproduce_line(tl: str, npz: str, func: Optional[str], groups: Optional[Groups],
                   spec: str, options, lang: Optional[str] = None) -> str:
    """The `tlfuzz reproduce` command for these files and implementation (with its flags,
    `option_words`): exits 1 while the implementation still differs from the reference.
    `lang`: the kernel's version, when it must be said."""
    from tlinterp.impl.base import option_words

    words = ["tlfuzz", "reproduce", tl, "--args", npz]
    if func:
        words += ["--func", func]
    if groups is not None:
        words += ["--groups", groups_text(groups)]
    if lang is not None:
        words += ["--lang", lang]
    return shlex.join(words + ["--impl", spec] + option_words(options))


class UsageError(Exception):
    """A bad command line or finding: exit status 2."""


class DeviceError(UsageError):
    """The device cannot build or run a known-good kernel: exit status 2, no verdict."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # a saved line is parsed too: no exit from in here
        raise UsageError(message)


PURPOSE = "Rerun a kernel on the reference and on an implementation, as an interestingness test."
EXAMPLES = (
    ("tlfuzz reproduce f/mismatch-0123abcd4567", "the implementation and flags of NAME.txt"),
    ("tlfuzz reproduce k.tl --args k.npz --impl opencl --device pocl", "any kernel"),
    ("tlfuzz reproduce k.tl --args k.npz --impl 'cc {kernel}'; test $? = 1",
     "as a reducer's test"),
)
EXIT_STATUSES = (
    (AGREES, "the implementation agrees with the reference"),
    (DIFFERS, "its result differs (the finding reproduces)"),
    (USAGE, "a usage error, unreadable files, or a kernel that is no test (the reference "
            "rejects it or reports undefined behaviour)"),
    (INTERNAL, "an internal error (please report it)"),
    (SAID_NO, "the implementation rejected the program or failed at run time (its exit 2 "
              "or 1)"),
    (CRASHED, "it crashed or timed out"),
    (130, "interrupted (Ctrl-C)"),
)
NOTES = """\
FINDING is NAME, NAME.tl or NAME.txt of a finding saved by tlfuzz: the implementation and its
flags come from the first line of NAME.txt (flags given here override them). Outputs are
compared within the fuzzer's error bounds (fuzz.oracle.compare). See docs/triage.md."""


def build_parser() -> argparse.ArgumentParser:
    from tlinterp.cli.conventions import add_impl_choice, add_lang, grid_arg, tool_parser
    from tlinterp.impl.flags import add_impl_flags

    p, g = tool_parser("tlfuzz reproduce", PURPOSE, EXAMPLES, EXIT_STATUSES, notes=NOTES,
                       parser_class=_Parser)
    # --backend: the spelling of tlrun lines saved before this command existed
    add_impl_choice(g.implementation, default=None, first="opencl (our lowering)",
                    list_impls=False)
    add_impl_flags(g.implementation)  # --device --lowering --work-group-size ...
    g.run.add_argument("kernel", help="NAME, NAME.tl or NAME.txt of a saved finding, or a .tl "
                       "file (then with --args and --impl)")
    g.run.add_argument("--args", dest="args_file", metavar="ARGS.npz", help="arguments (.npz)")
    g.run.add_argument("--func", help="function to run (optional when the file has one)")
    g.run.add_argument("--groups", type=grid_arg, metavar="X[,Y[,Z]]",
                       help="number of work-groups, or a v0.4 grid X,Y,Z")
    add_lang(g.run, default=None, help="the kernel's tensor-language version (default: "
                                       "detected from the text)")
    g.run.add_argument("--timeout", type=positive_seconds, default=None, metavar="S",
                       help=f"seconds per run of the implementation (default "
                            f"{DEFAULT_TIMEOUT:g})")
    return p


def saved_words(txt: str) -> list[str]:
    """The flags of the command on the first line of a finding's NAME.txt (`tlfuzz reproduce`,
    or `tlrun` as saved by older campaigns), without the command and its file operand."""
    line = read_finding_line(txt)
    try:
        words = shlex.split(line)
    except ValueError as e:  # e.g. an unbalanced quote: a damaged or hand-edited line
        raise UsageError(f"the first line of {txt} does not split like a command line "
                         f"({e}): {shown(line[:200])}") from None
    if words[:1] and os.path.basename(words[0]) == "tlrun":
        return words[2:]
    if words[:2] and os.path.basename(words[0]) == "tlfuzz" and words[1] == "reproduce":
        return words[3:]
    # the line names the device, function and flags: guessing them would rerun another run
    raise UsageError(f"the first line of {txt} is not the tlfuzz reproduce (or tlrun) "
                     "command that tlfuzz saved")


def read_finding_line(txt: str) -> str:
    """The first line of a finding's NAME.txt, read bounded (a huge line, a FIFO or
    /dev/zero in its place is a UsageError, not minutes of reading or a hang)."""
    from tlinterp.io.boundedread import MAX_LINE_BYTES, read_first_line

    try:
        return read_first_line(txt, MAX_LINE_BYTES, "a finding's command file")
    except OSError as e:  # RefusedFile says what it is; the rest as the system says
        raise UsageError(str(e) if e.filename else f"{txt}: {e.strerror or e}") from None


def read_finding_source(tl: str) -> bytes:
    """A finding's kernel source (NAME.tl), bounded as tlrun bounds its source."""
    from tlinterp.io.boundedread import MAX_SOURCE_BYTES, read_bounded

    return read_bounded(tl, MAX_SOURCE_BYTES, "a finding's kernel source")


@dataclass
class Request:
    """What to rerun: files, function, work-group count, implementation and its options."""

    tl: str
    npz: str
    func: Optional[str]
    groups: Optional[Groups]
    spec: str
    options: object  # tlinterp.impl.ImplOptions
    timeout: float
    lang: Optional[str] = None  # the kernel's version (None: detected)


def finding_base(path: str) -> str:
    """NAME of NAME, NAME.tl, NAME.npz or NAME.txt."""
    return re.sub(r"\.(tl|txt|npz)$", "", path)


def request(argv: list[str]) -> Request:
    """The rerun a command line asks for (a saved finding's flags first, then argv's)."""
    from tlinterp.impl import SpecError
    from tlinterp.impl.flags import impl_options, lowering_needs_opencl

    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.args_file is None:  # a saved finding: its NAME.txt names the implementation
        base = finding_base(ns.kernel)
        if not os.path.exists(base + ".txt"):
            raise UsageError(f"{base}.txt does not exist: give a saved finding, or a kernel "
                             "with --args and --impl")
        words = saved_words(base + ".txt")  # its messages name the file themselves
        try:
            saved = parser.parse_args([base + ".tl"] + words)
        except UsageError as e:
            raise UsageError(f"the first line of {base}.txt: {e}") from None
        if ns.impl is None and saved.impl:  # the file's choice, not the user's
            from fuzz.campaign.trust import check_saved_impl

            check_saved_impl(base + ".txt", saved.impl, UsageError)
        for key, value in vars(ns).items():  # flags given on this command line win
            if key != "kernel" and value != parser.get_default(key):
                setattr(saved, key, value)
        ns, tl, npz = saved, base + ".tl", base + ".npz"
    else:
        tl, npz = ns.kernel, ns.args_file
    if not ns.impl:
        raise UsageError("give the implementation under test with --impl SPEC")
    timeout = DEFAULT_TIMEOUT if ns.timeout is None else ns.timeout
    if not 0 < timeout < float("inf"):
        raise UsageError("--timeout must be a positive number of seconds")
    try:
        options = impl_options(ns)
        lowering_needs_opencl(ns.impl, options.lowering, "--impl")
    except SpecError as e:
        raise UsageError(str(e)) from None
    from fuzz.campaign.options import check_device, check_known_good, runs_on_a_device

    builds = runs_on_a_device(ns.impl)
    if options.device is not None or builds:  # else every run fails as the implementation's

        problem = check_device(options.device) or check_known_good(ns.impl, options)
        if problem:
            raise DeviceError(problem)
    if builds:
        from fuzz.campaign.options import chosen_device

        print(f"tlfuzz reproduce: device {chosen_device(options.device)}", file=sys.stderr)
    return Request(tl, npz, ns.func, ns.groups, ns.impl, options, timeout, ns.lang)


@dataclass
class Verdict:
    status: int  # the exit status
    text: str  # what to print (stderr)


def load_case(tl: str, npz: str, func: Optional[str], groups: Optional[Groups],
              lang: Optional[str] = None):
    """The kernel (tensor language `lang`, None: detected) and its arguments as a FuzzCase;
    TLError/OSError when they do not load."""
    import tlinterp
    from fuzz.strategies import FuzzCase
    from tlinterp.io.args import bind, load_npz
    from tlinterp.lang.diagnostics import decode_source

    # a SourceError at the bad byte's line and column
    text = decode_source(read_finding_source(tl), tl)
    program = tlinterp.check(tlinterp.parse(text, tl, lang=lang))
    func = func or program.functions[0].name
    args = load_npz(npz)
    bound = bind(program.function(func), args)
    grid = bound.grid(groups)  # a grid stays one (X,1,1 is the count X)
    return FuzzCase(program, func, args, grid if grid[1:] != (1, 1) else grid[0],
                    program.lang or "v0.3")


def run_impl(case, spec: str, options, timeout: float):
    """One run of the implementation on the case, as an Outcome (never raises for the
    implementation's own failures). Our OpenCL lowering runs in a child process so that a
    crashing driver is an outcome (tlgpu.runtime.isolated)."""
    from tlinterp.impl import Job, Outcome, outcome_of_error, resolve
    from tlinterp.lang.diagnostics import TLError

    impl = resolve(spec, options)
    if hasattr(impl, "run_isolated"):  # our lowering, in a child process as tlrun runs it
        try:
            r = impl.run_isolated(case.program, case.args, case.func, case.groups,
                                  timeout=timeout)
        except TLError as e:
            return outcome_of_error(e)
        return Outcome("ok", outputs=r.outputs)
    job = Job(case.source, case.args, func=case.func, groups=case.groups,
              filename=os.path.basename(case.program.filename or "kernel.tl"),
              program=case.program, lang=case.lang)
    return impl.run(job, timeout)


def judge(case, expected: dict, outcome) -> Verdict:
    """Compare an implementation's outcome with the reference's outputs."""
    from fuzz.oracle.compare import compare_outputs

    said = shown((outcome.message or "").strip()) or "(no message)"
    if outcome.status in ("rejected", "failed"):
        return Verdict(SAID_NO, f"the implementation {outcome.status} the program:\n{said}")
    if outcome.status != "ok":
        return Verdict(CRASHED, f"the implementation: {outcome.status}:\n{said}")
    mism = compare_outputs(case.program, case.func, case.args, expected, outcome.outputs or {},
                           groups=case.groups)
    if mism:
        return Verdict(DIFFERS, "the implementation differs from the reference:\n"
                       + "\n".join(str(m) for m in mism))
    return Verdict(AGREES, "the implementation agrees with the reference")


def reproduce(req: Request) -> Verdict:
    from tlinterp.impl import SpecError
    from tlinterp.interp import run
    from tlinterp.lang.diagnostics import TLError, UndefinedBehaviour

    try:
        case = load_case(req.tl, req.npz, req.func, req.groups, req.lang)
    except OSError as e:
        return Verdict(USAGE, f"cannot read the kernel or its arguments: {e}")
    except (KeyError, ValueError) as e:
        return Verdict(USAGE, f"the kernel does not fit its arguments: {e}")
    except TLError as e:
        return Verdict(USAGE, f"the reference rejects the kernel or its arguments:\n{e}")
    try:
        expected = run(case.program, case.args, func=case.func, groups=case.groups)
    except UndefinedBehaviour as e:
        return Verdict(USAGE, f"no test: the reference reports undefined behaviour:\n{e}")
    except TLError as e:
        return Verdict(USAGE, f"no test: the reference fails:\n{e}")
    try:
        outcome = run_impl(case, req.spec, req.options, req.timeout)
    except SpecError as e:
        return Verdict(USAGE, f"--impl: {e}")
    return judge(case, expected, outcome)


def main(argv: Optional[list[str]] = None) -> int:
    import warnings

    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        build_parser().print_help()
        return 0
    try:
        req = request(argv)
    except (UsageError, OSError) as e:
        print(f"tlfuzz reproduce: {e}", file=sys.stderr)
        return USAGE
    warnings.filterwarnings("ignore")  # pyopencl's compiler chatter is no verdict
    from fuzz.shutdown import (
        adopt_orphans,
        exit_status_of,
        kill_children,
        scratch_dir,
        stop_on_signals,
    )

    # SIGTERM (an interestingness test's `timeout`, cvise) and Ctrl-C end it in order, as a
    # campaign: the implementation's processes killed, its scratch files removed
    adopt_orphans()
    try:
        with stop_on_signals(), scratch_dir("tlfuzz-reproduce-"):
            try:
                verdict = reproduce(req)
            except KeyboardInterrupt:
                kill_children()
                raise
    except KeyboardInterrupt as e:
        return exit_status_of(e)
    except Exception as e:  # noqa: BLE001 - a bug of ours, said in one line, never a traceback
        print(f"tlfuzz reproduce: internal error (please report): {type(e).__name__}: {e}",
              file=sys.stderr)
        return INTERNAL
    print(f"tlfuzz reproduce: {verdict.text}", file=sys.stderr)
    return verdict.status


if __name__ == "__main__":
    sys.exit(main())
