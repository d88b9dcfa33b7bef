"""`tlrun`: check, print, lower or run a tensor-language kernel.

    tlrun KERNEL.tl [--check] [--werror] [--emit ir|opencl] [--args ARGS.npz] [--func NAME]
                    [--lang v0.3|v0.4] [--from v0.3|v0.4]
                    [--groups N] [--out OUT.npz] [--no-check] [--max-steps N] [--impl NAME]
                    [--device D] [--lowering KEY=VALUE ...] [--work-group-size W0xW1]
                    [--build-options 'OPTIONS'] [--reject-status N[,N...]]
                    [--repeat N] [-v] [-q] [--tune]
    tlrun --list-impls
    tlrun --list-devices

--impl (old spelling: --backend) takes any implementation name of the registry
(`--list-impls`): interp (default), opencl, 'opencl-c:COMMAND {tl}', python:MODULE:FUNCTION, a
command template, or one another package registers.

Warnings go to stderr and leave the exit status alone; `--werror` makes them errors (exit 2).
`--lang` names the input's tensor-language version (else it is detected from markers, or the
error asks for it); with `--emit ir` it names the OUTPUT version and `--from` the input's.
A v0.4 program using a construct the interpreter does not execute yet is refused with
"not yet executable: CONSTRUCT at L.C-C" and exit status 2 (`--check`/`--emit ir` work).
Exit statuses: EXIT_STATUSES below (`tlrun --help` lists them). Code (--emit) goes to stdout,
or to --out; diagnostics, the run summary and the line saying what --out wrote go to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Optional

import numpy as np

from tlinterp.cli.conventions import (
    add_impl_choice,
    add_lang,
    add_verbosity,
    grid_arg,
    print_impls,
    tool_parser,
    wrote,
)
from tlinterp.front.preprocess import define_flags, parse_define_flag
from tlinterp.impl.flags import add_impl_flags, positive_seconds
from tlinterp.impl.shutdown import (
    adopt_orphans,
    descendants,
    exit_status_of,
    kill_children,
    scratch_dir,
    stop_on_signals,
)
from tlinterp.io.args import count_groups, groups_count, load_npz, save_npz
from tlinterp.io.boundedread import MAX_SOURCE_BYTES, RefusedFile, read_bounded
from tlinterp.io.foreigntext import for_rich, shown
from tlinterp.io.outfile import check_target, write_text
from tlinterp.lang.diagnostics import (
    ERROR,
    ArgumentError,
    BackendError,
    Diagnostic,
    ExecutionError,
    SourceError,
    TLError,
    decode_source,
)

EXIT_INTERNAL = 3
DEFAULT_MAX_STEPS = 1_000_000  # a runaway scalar loop stops in ~3 s (fast path: ~300k/s)
DEFAULT_TIMEOUT = 600.0  # seconds for a run outside this process (another implementation, OpenCL)


PURPOSE = ("Check, print, lower or run a tensor-language kernel on the reference interpreter "
           "or another implementation.")
EXAMPLES = (
    ("tlrun kernel.tl --check", "parse and check only"),
    ("tlrun kernel.tl --emit ir", "print the canonical text"),
    ("tlrun old.tl --emit ir --lang v0.4", "convert a v0.3 kernel to v0.4"),
    ("tlrun kernel.tl --args in.npz --out out.npz", "run on the interpreter, save the results"),
    ("tlrun kernel.tl --args in.npz --groups 8", "run 8 work-groups"),
    ("tlrun kernel.tl --args in.npz --impl opencl --device pocl", "run our OpenCL lowering"),
)
EXIT_STATUSES = (
    (0, "success"),
    (1, "undefined behaviour or a run-time failure (step budget, memory, timeout)"),
    (2, "the source, the arguments or the implementation setup was rejected, or a usage error; "
        "also a v0.4 construct not yet executable, or without equivalent in --emit's version"),
    (3, "an internal error (a bug: please report it)"),
    (129, "stopped by SIGHUP (cleaned up as for Ctrl-C)"),
    (130, "interrupted (Ctrl-C)"),
    (143, "stopped by SIGTERM (cleaned up as for Ctrl-C)"),
)
NOTES = """\
arguments file (.npz): one entry per argument, keyed by its name; a group is one array
(members, ...) or entries NAME.0, NAME.1, ...; NAME.strides and NAME.offset give layouts.
See docs/language.md. Code (--emit) goes to stdout; diagnostics and the run summary to stderr."""


def _lowering_keys() -> str:
    """The --lowering keys of the `opencl` implementation, asked of the registry when help is
    printed (tlinterp knows no backend: the entry point loads it)."""
    from dataclasses import fields

    from tlinterp.impl import resolve

    try:
        config = resolve("opencl").config
        keys = ", ".join(f.name for f in fields(config))
    except Exception:  # noqa: BLE001 - help must print even without the backend
        return "--lowering keys: the OpenCL backend is not available here.\n"
    return f"--lowering keys of the opencl backend (KEY=VALUE, repeatable): {keys}\n"


class _Help(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        # with the notes, before the examples and exit statuses every tool's help ends with
        parser.epilog = _lowering_keys() + "\n" + (parser.epilog or "")
        parser.print_help()
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p, g = tool_parser("tlrun", PURPOSE, EXAMPLES, EXIT_STATUSES, notes=NOTES, help_action=_Help)
    g.run.add_argument("kernel", nargs="?", help="the .tl source file")
    add_impl_choice(g.implementation, default="interp", first="interp (default), opencl")
    add_impl_flags(g.implementation,
                   help={"lowering": "opencl: override a lowering decision (repeatable; the "
                                     "keys are listed below)"})
    g.implementation.add_argument(
        "--list-devices", action="store_true",
        help="list every OpenCL platform and device: the --device string that picks each, "
             "and which one pocl/intel/nvidia/oclgrind picks; exit 0")
    g.run.add_argument("--check", action="store_true",
                       help="parse and check only (with --emit: then print, never run)")
    g.run.add_argument("--werror", action="store_true",
                       help="treat warnings as errors (exit status 2)")
    g.run.add_argument("--args", dest="args_file", metavar="ARGS.npz", help="arguments (.npz)")
    g.run.add_argument("--func", help="function to run (optional when the file has one)")
    g.run.add_argument("--groups", type=grid_arg, metavar="X[,Y[,Z]]",
                       help="number of work-groups, or a v0.4 grid X,Y,Z (group_id.x runs "
                            "fastest; every implementation but our 1-D opencl lowering)")
    g.run.add_argument("--no-check", action="store_true",
                       help="turn undefined-behaviour detection off (faster)")
    g.run.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                       help=f"instruction budget against runaway loops (default "
                            f"{DEFAULT_MAX_STEPS}; 0 = unlimited)")
    g.run.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="S",
                       help="seconds a run of another implementation or of --impl opencl may "
                            f"take, build included (default {DEFAULT_TIMEOUT:g}); past it the "
                            "run is stopped, exit 1 (the reference interpreter: --max-steps)")
    g.run.add_argument("--repeat", type=int, default=1, metavar="N",
                       help="opencl: launch N times on the same inputs and report the kernel "
                            "time's median and minimum (default 1)")
    g.run.add_argument("--tune", action="store_true",
                       help="opencl: time lowering configs on the device with these "
                            "arguments, cache the fastest per kernel and device, use it "
                            "(--lowering applies on top); the search goes to stderr")
    g.output.add_argument("--emit", choices=["ir", "opencl"],
                          help="print canonical IR or OpenCL C (stdout, or --out)")
    add_lang(g.output, default=None,
             help="tensor-language version of the input (with --emit ir: of the "
                  "output; default: the input's)")
    g.run.add_argument("-D", dest="defines", action="append", type=parse_define_flag,
                       metavar="NAME=VALUE",
                       help="v0.4 preprocessor: define $NAME before the file (repeatable)")
    g.output.add_argument("--from", dest="from_lang", choices=["v0.3", "v0.4"],
                          help="with --emit ir: version of the input (default: detected)")
    g.output.add_argument("--out", metavar="OUT.npz",
                          help="write memref/group arguments after the run; with --emit, the "
                               "code (says so on stderr)")
    add_verbosity(g.output, verbose="opencl: also show compiler warnings and driver output",
                  quiet="no run summary (errors and what --out wrote still print)")
    return p


def _read(path: str) -> str:
    try:
        # bounded (/dev/zero, a huge file); a pipe the user gives (`<(gen)`) is read
        data = read_bounded(path, MAX_SOURCE_BYTES, "a kernel source", regular_only=False)
        return decode_source(data, path)
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except RefusedFile as e:
        raise SourceError(str(e)) from None
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e.strerror or e})") from None


def _emit_ir(program, lang: str) -> str:
    """The program printed as tensor language `lang` (migrated when it is the other one)."""
    if lang == "v0.4":
        from tlinterp.lang.v04.printer import format_program_v04

        return format_program_v04(program)
    from tlinterp.front.migrate import to_v03
    from tlinterp.lang.v03.printer import format_program

    return format_program(to_v03(program) if program.lang == "v0.4" else program)


def _emitted(ns, text: str, what: str) -> int:
    """--emit's code to stdout, or to --out (it was silently ignored there)."""
    if ns.out is None:
        sys.stdout.write(text)
    else:
        write_text(ns.out, text)
        wrote("tlrun", ns.out, f"{what}, {text.count(chr(10))} lines")
    return 0


def _implementation(ns, name: str):
    """The implementation `name` from the registry, made with the command line's options."""
    from tlinterp.impl import SpecError, resolve
    from tlinterp.impl.flags import impl_options, lowering_needs_opencl

    if name.partition(":")[0] != "opencl":  # options only this package's lowering reads
        for option, given, why in (("--tune", ns.tune, ""),
                                   ("--repeat", ns.repeat != 1, " (it times launches there)")):
            if given:
                raise ArgumentError(f"{option} needs --impl opencl{why}")
    try:
        lowering_needs_opencl(name, ns.lowering, "--impl")
        options = impl_options(ns, tune=ns.tune)
    except SpecError as e:
        raise ArgumentError(str(e)) from None
    try:
        return resolve(name, options)
    except SpecError as e:  # a message that names its flag (--lowering: ...) keeps it
        raise BackendError(str(e) if str(e).startswith("--") else f"--impl: {e}") from None


def _arrays(out: dict) -> str:
    n = len(out)
    return f"{n} array{'s' if n != 1 else ''}"


def _list_devices(console) -> int:
    """The device table; the OpenCL implementation supplies the rows (tlinterp does not
    import tlgpu), so an installation without it says so."""
    from rich.table import Table

    from tlinterp.impl import SpecError, resolve
    from tlinterp.impl.base import DEFAULT_OPTIONS

    try:
        rows = resolve("opencl", DEFAULT_OPTIONS).devices() or []
    except SpecError as e:
        console.print(f"tlrun: no OpenCL implementation: {e}", highlight=False, markup=False)
        return 0
    if not rows:
        console.print("no OpenCL platform found (pip install 'pyopencl[pocl]' brings a CPU "
                      "device)", highlight=False, markup=False)
        return 0
    t = Table(title="OpenCL devices (best first for each --device name)")
    for col in ("platform", "driver version", "device", "type", "--device", "default for",
                "v0.4 sub-groups"):
        t.add_column(col)
    for r in rows:
        # a device that fails the one-line build is the choice of no name (docs/devices.md)
        use = (f"cannot build here: {r.cannot_build}" if getattr(r, "cannot_build", "")
               else ", ".join(r.default_for) or "-")
        t.add_row(*(for_rich(x) for x in (r.platform, r.version, r.device, r.kind, r.select,
                                         use, getattr(r, "subgroups", "") or "-")))
    console.print(t)
    return 0


def _describe(v: np.ndarray) -> str:
    return f"{v.dtype}{list(v.shape)}" if v.ndim else f"{v.dtype} = {v.item()}"


def _summary(console, function, backend, groups, args, out, timing, check) -> None:
    from rich.table import Table

    note = "" if check or backend not in ("interp", "tlinterp") else " (no checks)"
    # the backend's spec and the device's name are foreign text
    console.print(f"@{function.name}: {groups} work-group(s), backend {for_rich(backend)}"
                  f"{note}, {for_rich(timing)}", highlight=False, soft_wrap=True)
    t = Table()
    t.add_column("argument")
    t.add_column("value")
    t.add_column("elements changed", justify="right")
    for k, v in args.items():
        changed = ""
        if k in out and not (k.endswith(".strides") or k.endswith(".offset")):
            a, b = np.asarray(v), np.asarray(out[k])
            if a.dtype != b.dtype and a.dtype.itemsize == b.dtype.itemsize:
                a = a.view(b.dtype)  # bf16 given as its bit patterns (uint16, V2)
            from tlinterp.lang.types import ScalarType

            nan = a.dtype.kind == "f" or a.dtype == ScalarType.bf16.dtype
            same = (a == b) | ((a != a) & (b != b)) if nan else a == b
            changed = f"{int(a.size - np.count_nonzero(same))} / {a.size}"
        t.add_row(for_rich(k), _describe(np.asarray(v)), changed)
    console.print(t)


def _run(ns) -> int:
    from rich.console import Console

    from tlinterp.front.pipeline import read

    # piped or redirected: no wrapping at rich's default 80 columns
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 100_000)
    if ns.list_impls:
        return print_impls()
    if ns.list_devices:
        from rich.console import Console as Out

        return _list_devices(Out(width=None if sys.stdout.isatty() else 200))
    if ns.kernel is None:
        raise ArgumentError("give a kernel file (tlrun KERNEL.tl ...), or --list-impls")
    text = _read(ns.kernel)
    warnings: list[Diagnostic] = []
    if ns.from_lang is not None and ns.emit != "ir":
        raise ArgumentError("--from names the input version for --emit ir; use --lang")
    in_lang = ns.from_lang if ns.emit == "ir" else ns.lang
    if ns.defines and in_lang == "v0.3":
        raise ArgumentError("-D defines for the v0.4 preprocessor; the input is read as v0.3")
    program = read(text, ns.kernel, in_lang, define_flags(ns.defines or ()), warnings=warnings)
    if warnings and ns.werror:
        raise SourceError([Diagnostic(d.message, d.span, d.filename, ERROR) for d in warnings],
                          text)
    for d in warnings:
        print(d.format(text), file=sys.stderr)
    if ns.check and ns.emit is None:  # with --emit, the checked program is still printed
        return 0
    func_name = ns.func
    if isinstance(ns.groups, tuple) and ns.groups[1:] == (1, 1):
        ns.groups = ns.groups[0]  # X,1,1 is the count X
    groups_count(ns.groups)  # a count or grid in range
    if ns.out is not None:
        check_target(ns.out)  # before the run, not after it
        if os.path.exists(ns.out) and os.path.samefile(ns.out, ns.kernel):
            raise ArgumentError(f"{ns.out}: is the kernel source; --out would replace it")
    if ns.emit == "ir":
        lang = ns.lang or program.lang or "v0.3"
        return _emitted(ns, _emit_ir(program, lang), f"{lang} text")
    from tlinterp.front.pipeline import executable

    checked = program  # in its own language: what other implementations are handed
    program = executable(program)  # a v0.4 program: its v0.3 form, or "not yet executable"
    if ns.emit == "opencl":
        code = _implementation(ns, "opencl").emit(program, func_name, checked.lang)
        if code is None:
            raise BackendError("the 'opencl' implementation emits no code")
        return _emitted(ns, code, "OpenCL C")
    from tlinterp.interp import select_function

    impl = _implementation(ns, ns.impl)  # a bad name is reported before the arguments
    function = select_function(program, func_name)
    if ns.args_file is None:
        if function.args:
            need = ", ".join(f"'{a.value.name}' ({a.type})" for a in function.args)
            raise ArgumentError(f"@{function.name} takes arguments {need}: give them with "
                                "--args ARGS.npz")
        args: dict[str, np.ndarray] = {}
    else:
        # declared shapes are checked before loading; the run holds the loaded arrays, their
        # bound copy, the results and the summary's comparisons: about four times the data
        args = load_npz(ns.args_file, function, factor=4)
    if ns.max_steps is not None and ns.max_steps < 0:
        raise ArgumentError("--max-steps must be >= 0")
    start = time.perf_counter()
    timing = ""
    if hasattr(impl, "run_isolated"):  # our OpenCL lowering: a child process, timed
        out, timing = _run_opencl(ns, impl, program, function, args)
    elif impl.spec != "interp":  # the reference runs here, with its own options
        out = _run_impl(impl, checked, text, ns, function.name, args)
        _check_convention(impl, function, args, out)
    else:
        from tlinterp.interp import run_bound
        from tlinterp.io.args import bind, unbind

        bound = bind(function, args)
        grid = bound.grid(ns.groups)
        run_bound(program, function, bound, grid, check=not ns.no_check,
                  max_steps=ns.max_steps or None)
        groups = grid[0] * grid[1] * grid[2]
        out = unbind(bound)
    seconds = time.perf_counter() - start
    if ns.out is not None:
        save_npz(ns.out, out)
    if impl.spec != "interp":  # the reference runs here, with its own options
        groups = count_groups(function, args, groups_count(ns.groups))
    if not ns.quiet:
        _summary(err, function, impl.name, groups, args, out,
                 timing or f"{seconds * 1e3:.1f} ms", not ns.no_check)
    if ns.out is not None:  # last, so that it is the line a script sees
        wrote("tlrun", ns.out, _arrays(out))
    return 0


def _run_opencl(ns, impl, program, function, args) -> tuple[dict, str]:
    """Outputs and the timing line of a run of our OpenCL lowering in a child process, so a
    crash on the device cannot take tlrun down (tlgpu.runtime.isolated)."""
    if ns.repeat < 1:
        raise ArgumentError(f"--repeat must be >= 1, got {ns.repeat}")
    # Oclgrind's output is its error reports, not noise: always shown
    show = ns.verbose or "oclgrind" in (ns.device or os.environ.get("PYOPENCL_CTX", "")).lower()
    try:
        r = impl.run_isolated(program, args, func=function.name, groups=ns.groups,
                              repeat=ns.repeat, timeout=ns.timeout)
    except TLError as e:
        if show and getattr(e, "log", ""):
            print(e.log, file=sys.stderr)
        raise
    if (show or "oclgrind" in r.device.lower()) and r.log:
        print(r.log, file=sys.stderr)
    k = [t * 1e3 for t in r.kernel_seconds] or [0.0]
    kernel = (f"kernel {k[0]:.3f} ms" if len(k) == 1 else
              f"kernel {float(np.median(k)):.3f} ms median, {min(k):.3f} ms min of {len(k)}")
    return r.outputs, f"device {r.device}, build {r.build_seconds * 1e3:.1f} ms, {kernel}"


def _run_impl(impl, program, text: str, ns, func: str, args) -> dict[str, np.ndarray]:
    """Outputs of a registry implementation; its failures as TLErrors with its exit status."""
    from tlinterp.impl import Job, SpecError

    # the checked program in its own language (as tlfuzz reproduce hands it): a foreign
    # compiler's kernel follows that language's calling convention
    job = Job(text, args, func=func, groups=ns.groups, filename=ns.kernel, program=program,
              lang=program.lang)
    try:
        outcome = impl.run(job, ns.timeout)
    except SpecError as e:  # e.g. a template placeholder this run has no value for
        raise BackendError(f"--impl: {e}") from None
    if outcome.status == "ok":
        return outcome.outputs or {}
    said = shown(outcome.message.strip()) or "(no message)"  # its escape codes as \x1b
    if outcome.status == "rejected":
        raise BackendError(f"{impl.name} rejected it:\n{said}")
    verb = {"failed": "failed", "timeout": "timed out"}.get(outcome.status, "crashed")
    raise ExecutionError(f"{impl.name} {verb}:\n{said}")


def _check_convention(impl, function, args, out: dict) -> None:
    """Another implementation's outputs must be what the reference would write (the inputs'
    keys, dtypes and shapes; the echoed .strides/.offset entries may be left out): --out and
    the summary must never pass on something else as a result."""
    from tlinterp.io.args import bind, unbind

    want = unbind(bind(function, args))
    for key in sorted(set(want) | set(out)):
        if key not in out:
            if key.endswith((".strides", ".offset")):
                continue
            problem = "is missing"
        elif key not in want:
            problem = "is not a memref or group argument of @" + function.name
        elif out[key].dtype != want[key].dtype or out[key].shape != want[key].shape:
            problem = (f"is {out[key].dtype}{list(out[key].shape)}, the argument is "
                       f"{want[key].dtype}{list(want[key].shape)}")
        else:
            continue
        raise ExecutionError(f"{impl.name} crashed:\nits output '{key}' {problem}")


def _contained(ns) -> int:
    """_run with SIGTERM and SIGHUP handled as Ctrl-C (temporary files and directories
    removed, external commands killed), its temporary files in a scratch directory of its
    own, and the processes an implementation left behind (setsid or not: they come back to
    us as orphans) killed at the end.  Processes that were there before (tlrun called
    in-process) are spared."""
    adopt_orphans()
    before = frozenset(descendants(os.getpid()))
    with scratch_dir("tlrun-"):
        try:
            with stop_on_signals():
                return _run(ns)
        finally:  # before the scratch directory goes: they may still write there
            kill_children(spare=before)


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of `tlrun`; returns (and, as a script, exits with) the exit status."""
    try:
        ns = _parser().parse_args(argv)
    except SystemExit as e:
        if not e.code:  # --help, --version: argparse's own end
            raise
        return int(e.code)  # a usage error (2): argparse named the flag
    if ns.out:  # an implementation run in this process may change the working directory
        ns.out = os.path.abspath(ns.out)
    try:
        return _contained(ns)
    except TLError as e:
        print(e.format(), file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP (shutdown.Stopped)
        by = getattr(e, "signum", signal.SIGINT)
        print("tlrun: interrupted" if by == signal.SIGINT else f"tlrun: stopped by {e}",
              file=sys.stderr)
        return exit_status_of(e)
    except MemoryError:
        # the interpreter names the instruction (Executor.out_of_memory); this is the rest:
        # reading arguments, an implementation's outputs, the report
        print("tlrun: out of memory outside the kernel's instructions (reading or comparing "
              "arguments): the machine's free memory is too small for them", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - last resort: no traceback for users
        print(f"tlrun: internal error: {type(e).__name__}: {e}\n"
              "This is a bug in the reference implementation; please report it with the "
              "kernel and arguments.", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
