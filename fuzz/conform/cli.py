"""`tlconform`: run an implementation of the tensor language over the conformance corpus.

    tlconform --impl tlinterp
    tlconform --impl 'mytool run {kernel} --args {args} --out {out} [--func {func}]
                      [--groups {groups}]' -j 4 --junit-xml report.xml --log conform.log

Exit status: 0 iff every valid and invalid case passes (and, for the reference, every
undefined-behaviour case reports its kind); 1 otherwise; 2 for a usage error (bad --impl,
missing corpus). See docs/conformance.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tlinterp import TLError
from tlinterp.impl import Implementation, Outcome, SpecError, resolve
from tlinterp.impl.flags import add_impl_flags, impl_options, lowering_needs_opencl, whole_number
from tlinterp.outfile import check_target

from ..campaign.options import positive_seconds
from .corpus import Case, CorpusError, apply_profile, default_corpus, load_corpus
from .impl import outcome_of, reproduce
from .interrupt import kill_children_settled
from .jsonreport import write_json
from .judge import FAIL, SKIP, Verdict, judge
from .report import print_summary, write_junit, write_log


def run_case(impl: Implementation, case: Case, timeout: Optional[float]) -> Verdict:
    start = time.perf_counter()
    try:
        outcome = outcome_of(impl, case, timeout)
    except TLError as e:  # the case's own arguments file is damaged
        outcome = Outcome("crashed", message=f"cannot read the case: {e}")
    verdict = judge(case, outcome, impl)
    verdict.reproduce = reproduce(impl, case)
    verdict.seconds = time.perf_counter() - start
    return verdict


def run_all(impl: Implementation, cases: Sequence[Case], jobs: int = 1,
            timeout: Optional[float] = None, progress: Optional[Progress] = None
            ) -> list[Verdict]:
    """Verdicts in corpus order; cases run on `jobs` threads (one for serial backends)."""
    task = progress.add_task("cases", total=len(cases)) if progress else None

    def one(case: Case) -> Verdict:
        v = run_case(impl, case, timeout)
        if progress is not None:
            progress.advance(task)
        return v

    # even one case at a time runs in a worker thread, so that the main thread stays free to
    # take Ctrl-C and kill the implementation's processes (fuzz.conform.interrupt)
    pool = ThreadPoolExecutor(max(1, jobs if impl.parallel else 1))
    try:
        futures = [pool.submit(one, c) for c in cases]
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _profile(name: Optional[str]):
    """The profile of --profile; an unknown name is a usage error naming the known ones."""
    from fuzz.profiles import DEFAULT, ProfileError, load

    try:
        return load(name or DEFAULT)
    except ProfileError as e:
        raise SpecError(f"--profile: {e}") from None


def _with_skipped(order: list[Case], verdicts: list[Verdict],
                  skipped: list[tuple[Case, str]]) -> list[Verdict]:
    """The verdicts with the cases --profile skipped, in corpus order."""
    if not skipped:
        return verdicts
    by_id = {v.case.id: v for v in verdicts}
    by_id.update((case.id, Verdict(case, SKIP, why, Outcome("skipped"),
                                   reproduce=case.reproduce())) for case, why in skipped)
    return [by_id[c.id] for c in order]


def exit_status(verdicts: Sequence[Verdict]) -> int:
    return 1 if any(v.status == FAIL for v in verdicts) else 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tlconform", description="Run a tensor-language implementation over the "
        "conformance corpus and compare it with the expected results.")
    ap.add_argument("--impl", metavar="NAME",
                    help="interp | opencl | opencl-c:'COMMAND {tl} [{out}]' | "
                         "python:MODULE:FUNCTION | a command template with {kernel} {args} "
                         "{out} and optional [--func {func}] [--groups {groups}] | any "
                         "registered name (--list-impls)")
    ap.add_argument("--list-impls", action="store_true",
                    help="list the registered implementations, then exit")
    add_impl_flags(ap, help={
        "device": "OpenCL device of opencl / opencl-c: pocl, nvidia, oclgrind, ...",
        "lowering": "opencl: override a lowering decision (repeatable; `tlrun --help` lists "
                    "the keys), e.g. to check a tuned config on the whole corpus"})
    ap.add_argument("--corpus", type=Path, default=None, metavar="DIR",
                    help="corpus directory (default: the repository's corpus/)")
    ap.add_argument("--filter", default=None, metavar="PATTERN",
                    help="only cases whose id (e.g. valid/blas/gemm_f32_canonical_v0) "
                         "matches: a glob if it has * ? [, else a substring")
    ap.add_argument("-j", "--jobs", type=whole_number(1), default=1, metavar="N",
                    help="cases run at once (OpenCL back ends always run one at a time)")
    ap.add_argument("--junit-xml", type=Path, default=None, metavar="FILE")
    ap.add_argument("--log", type=Path, default=None, metavar="FILE",
                    help="per-case log with the reproducing commands")
    ap.add_argument("--timeout", type=positive_seconds, default=None, metavar="S",
                    help="seconds per case (a timed-out case fails)")
    ap.add_argument("--json", default=None, metavar="FILE",
                    help="machine-readable report: one object per case plus the summary "
                         "('-': standard output; the tables then go to standard error)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--profile", default=None, metavar="NAME",
                    help="the target's dialect (fuzz/profiles; 'list' lists them): cases "
                         "using a construct outside it are skipped, kernels go to the "
                         "implementation in its spellings (default: all)")
    return ap


PIPE_WIDTH = 4096  # lines are not wrapped at 80 columns in a pipe or a file


def _console(stderr: bool) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of `tlconform`; returns the exit status (130 after Ctrl-C)."""
    try:
        opts = _parser().parse_args(argv)
    except SystemExit as e:
        if not e.code:  # --help: argparse's own end
            raise
        return int(e.code)  # a usage error (2): argparse named the flag
    try:
        return _main(opts)
    except KeyboardInterrupt:
        kill_children_settled()
        print("tlconform: interrupted", file=sys.stderr)
        return 130


def _main(opts: argparse.Namespace) -> int:
    err = _console(stderr=True)
    console = err if opts.json == "-" else _console(stderr=False)
    try:
        if opts.profile == "list":
            from fuzz.profiles import describe

            console.print(describe(), highlight=False, markup=False)
            return 0
        profile = _profile(opts.profile)
        if opts.list_impls:
            from tlinterp.impl import available

            for name, doc in available():
                console.print(f"{name:12} {doc}", highlight=False, markup=False)
            return 0
        if not opts.impl:
            raise SpecError("--impl NAME is required (see --list-impls)")
        lowering_needs_opencl(opts.impl, opts.lowering, "--impl")
        impl = resolve(opts.impl, impl_options(opts))
        builds = opts.impl.partition(":")[0] in ("opencl", "opencl-c", "spirv")
        if opts.device is not None or builds:
            from fuzz.campaign.options import check_device

            # up front: a wrong name would otherwise fail every case as a rejection (exit 1)
            problem = check_device(opts.device)
            if problem:
                raise SpecError(f"--device: {problem}")
            from fuzz.campaign.options import chosen_device

            # which of several matching devices --device picked (docs/devices.md)
            err.print(f"tlconform: device {chosen_device(opts.device)}", highlight=False,
                      markup=False)
        cases = load_corpus(opts.corpus or default_corpus(), opts.filter)
        corpus_order = cases
        cases, skipped = apply_profile(cases, profile)
        for option, report in (("--json", opts.json), ("--log", opts.log),
                               ("--junit-xml", opts.junit_xml)):
            if report is not None and str(report) != "-":  # before the run, not after it
                try:
                    check_target(str(report), option)
                except TLError as e:
                    raise SpecError(e.diagnostics[0].message) from None
    except (SpecError, CorpusError) as e:
        err.print(f"tlconform: {e}", highlight=False, markup=False)
        return 2
    if not cases and not skipped:
        err.print(f"tlconform: no case matches --filter {opts.filter!r}", highlight=False,
                  markup=False)
        return 2
    try:
        if opts.quiet or not console.is_terminal:
            verdicts = run_all(impl, cases, opts.jobs, opts.timeout)
        else:
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=console, transient=True) as progress:
                verdicts = run_all(impl, cases, opts.jobs, opts.timeout, progress)
    except SpecError as e:
        err.print(f"tlconform: {e}", highlight=False, markup=False)
        return 2
    verdicts = _with_skipped(corpus_order, verdicts, skipped)
    print_summary(console, verdicts, impl.name)
    status = exit_status(verdicts)
    try:
        if opts.json:
            write_json(opts.json, verdicts, impl.name, status)
        if opts.log:
            write_log(opts.log, verdicts, impl.name)
        if opts.junit_xml:
            write_junit(opts.junit_xml, verdicts, impl.name)
    except OSError as e:
        err.print(f"tlconform: cannot write a report: {e}", highlight=False, markup=False)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
