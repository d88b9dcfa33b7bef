"""`tlrun`: check, print, lower or run a tensor-language kernel.

    tlrun KERNEL.tl [--check] [--werror] [--emit ir|opencl] [--args ARGS.npz] [--func NAME]
                    [--groups N] [--out OUT.npz] [--no-check] [--max-steps N] [--backend NAME]
                    [--device D] [--lowering KEY=VALUE ...] [--work-group-size W0xW1]
                    [--tune]
    tlrun --list-impls

--backend takes any implementation name of the registry (`--list-impls`): interp (default),
opencl, opencl-c:'COMMAND {tl}', python:MODULE:FUNCTION, a command template, or one another
package registers.

Warnings go to stderr and leave the exit status alone; `--werror` makes them errors (exit 2).
Exit status: 0 success; 1 undefined behaviour or a run-time failure; 2 source, arguments or
backend rejected; 3 an internal error (a bug: please report it); 130 interrupted.
Code (--emit) goes to stdout; diagnostics and the run summary go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

import numpy as np

from .args import count_groups, load_npz, save_npz
from .diagnostics import (
    ERROR,
    ArgumentError,
    BackendError,
    Diagnostic,
    ExecutionError,
    SourceError,
    TLError,
)

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
DEFAULT_MAX_STEPS = 10_000_000


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tlrun", description="Run a tensor-language kernel with "
                                "the reference interpreter (or the OpenCL backend).")
    p.add_argument("kernel", nargs="?", help="the .tl source file")
    p.add_argument("--list-impls", action="store_true",
                   help="list the implementations --backend accepts, then exit")
    p.add_argument("--check", action="store_true", help="parse and check only")
    p.add_argument("--werror", action="store_true",
                   help="treat warnings as errors (exit status 2)")
    p.add_argument("--emit", choices=["ir", "opencl"], help="print canonical IR or OpenCL C")
    p.add_argument("--args", dest="args_file", metavar="ARGS.npz", help="arguments (.npz)")
    p.add_argument("--func", help="function to run (optional when the file has one)")
    p.add_argument("--groups", type=int, help="number of work-groups")
    p.add_argument("--out", metavar="OUT.npz", help="write memref/group arguments after the run")
    p.add_argument("--no-check", action="store_true",
                   help="turn undefined-behaviour detection off (faster)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                   help=f"instruction budget against runaway loops (default "
                        f"{DEFAULT_MAX_STEPS}; 0 = unlimited)")
    p.add_argument("--backend", default="interp", metavar="NAME",
                   help="implementation to run: interp (default), opencl, "
                        "opencl-c:'COMMAND {tl}', python:MODULE:FUNCTION, a command template, "
                        "... (see --list-impls)")
    p.add_argument("--device", help="OpenCL device: pocl, nvidia, oclgrind, PLATFORM:DEVICE")
    p.add_argument("--work-group-size", metavar="W0xW1",
                   help="opencl-c: work-group size of kernels without reqd_work_group_size")
    p.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE",
                   help="override a lowering decision (repeatable)")
    p.add_argument("--tune", action="store_true",
                   help="opencl: time lowering configs on the device with these arguments, "
                        "cache the fastest per kernel and device, use it (--lowering applies "
                        "on top); the search goes to stderr")
    return p


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read ({e})") from None


def _implementation(ns, name: str):
    """The implementation `name` from the registry, made with the command line's options."""
    from .impl import ImplOptions, SpecError, resolve

    if ns.tune and name.partition(":")[0] != "opencl":
        raise ArgumentError("--tune needs --backend opencl")
    options = ImplOptions(device=ns.device, lowering=tuple(ns.lowering),
                          work_group_size=ns.work_group_size, tune=ns.tune)
    try:
        return resolve(name, options)
    except SpecError as e:
        raise BackendError(f"--backend: {e}") from None


def _list_impls() -> int:
    from .impl import available

    for name, doc in available():
        print(f"{name:12} {doc}")
    return 0


def _describe(v: np.ndarray) -> str:
    return f"{v.dtype}{list(v.shape)}" if v.ndim else f"{v.dtype} = {v.item()}"


def _summary(console, function, backend, groups, args, out, seconds, check) -> None:
    from rich.table import Table

    note = "" if check or backend not in ("interp", "tlinterp") else " (no checks)"
    console.print(f"@{function.name}: {groups} work-group(s), backend {backend}{note}, "
                  f"{seconds * 1e3:.1f} ms", highlight=False, soft_wrap=True)
    t = Table()
    t.add_column("argument")
    t.add_column("value")
    t.add_column("elements changed", justify="right")
    for k, v in args.items():
        changed = ""
        if k in out and not (k.endswith(".strides") or k.endswith(".offset")):
            a, b = np.asarray(v), np.asarray(out[k])
            same = (a == b) | ((a != a) & (b != b)) if a.dtype.kind == "f" else a == b
            changed = f"{int(a.size - np.count_nonzero(same))} / {a.size}"
        t.add_row(k, _describe(np.asarray(v)), changed)
    console.print(t)


def _run(ns) -> int:
    from rich.console import Console

    from . import check, parse

    err = Console(stderr=True)
    if ns.list_impls:
        return _list_impls()
    if ns.kernel is None:
        raise ArgumentError("give a kernel file (tlrun KERNEL.tl ...), or --list-impls")
    text = _read(ns.kernel)
    warnings: list[Diagnostic] = []
    program = check(parse(text, filename=ns.kernel), warnings)
    if warnings and ns.werror:
        raise SourceError([Diagnostic(d.message, d.span, d.filename, ERROR) for d in warnings],
                          text)
    for d in warnings:
        print(d.format(text), file=sys.stderr)
    if ns.check:
        return 0
    func_name = ns.func
    if ns.emit == "ir":
        from .printer import format_program

        sys.stdout.write(format_program(program))
        return 0
    if ns.emit == "opencl":
        code = _implementation(ns, "opencl").emit(program, func_name)
        if code is None:
            raise BackendError("the 'opencl' implementation emits no code")
        sys.stdout.write(code)
        return 0
    from .interp import select_function

    impl = _implementation(ns, ns.backend)  # a bad name is reported before the arguments
    function = select_function(program, func_name)
    if ns.args_file is None:
        if function.args:
            need = ", ".join(f"'{a.value.name}' ({a.type})" for a in function.args)
            raise ArgumentError(f"@{function.name} takes arguments {need}: give them with "
                                "--args ARGS.npz")
        args: dict[str, np.ndarray] = {}
    else:
        args = load_npz(ns.args_file)
    if ns.max_steps is not None and ns.max_steps < 0:
        raise ArgumentError("--max-steps must be >= 0")
    start = time.perf_counter()
    if impl.spec != "interp":  # the reference runs here, with its own options
        out = _run_impl(impl, program, text, ns, function.name, args)
    else:
        from .args import bind, unbind
        from .interp import run_bound

        bound = bind(function, args)
        groups = bound.num_groups(ns.groups)
        run_bound(program, function, bound, groups, check=not ns.no_check,
                  max_steps=ns.max_steps or None)
        out = unbind(bound)
    seconds = time.perf_counter() - start
    if ns.out:
        save_npz(ns.out, out)
    if impl.spec != "interp":  # the reference runs here, with its own options
        groups = count_groups(function, args, ns.groups)
    _summary(err, function, impl.name, groups, args, out, seconds, not ns.no_check)
    return 0


def _run_impl(impl, program, text: str, ns, func: str, args) -> dict[str, np.ndarray]:
    """Outputs of a registry implementation; its failures as TLErrors with its exit status."""
    from .impl import Job, SpecError

    job = Job(text, args, func=func, groups=ns.groups, filename=ns.kernel, program=program)
    try:
        outcome = impl.run(job)
    except SpecError as e:  # e.g. a template placeholder this run has no value for
        raise BackendError(f"--backend: {e}") from None
    if outcome.status == "ok":
        return outcome.outputs or {}
    said = outcome.message.strip() or "(no message)"
    if outcome.status == "rejected":
        raise BackendError(f"{impl.name} rejected it:\n{said}")
    verb = {"failed": "failed", "timeout": "timed out"}.get(outcome.status, "crashed")
    raise ExecutionError(f"{impl.name} {verb}:\n{said}")


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of `tlrun`; returns (and, as a script, exits with) the exit status."""
    ns = _parser().parse_args(argv)
    try:
        return _run(ns)
    except TLError as e:
        print(e.format(), file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("tlrun: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError:
        print("tlrun: out of memory (try fewer work-groups)", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - last resort: no traceback for users
        print(f"tlrun: internal error: {type(e).__name__}: {e}\n"
              "This is a bug in the reference implementation; please report it with the "
              "kernel and arguments.", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
