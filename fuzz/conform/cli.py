"""`tlconform`: run an implementation of the tensor language over the conformance corpus.

    tlconform --impl tlinterp
    tlconform --impl 'mytool run {kernel} --args {args} --out {out} [--func {func}]
                      [--groups {groups}]' -j 4 --junit-xml report.xml --log conform.log

Exit statuses: EXIT_STATUSES below (`tlconform --help` lists them). See docs/conformance.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fuzz.campaign.options import positive_seconds
from fuzz.conform.corpus import Case, CorpusError, apply_profile, default_corpus, load_corpus
from fuzz.conform.impl import outcome_of, reproduce
from fuzz.conform.jsonreport import write_json
from fuzz.conform.judge import FAIL, SKIP, Verdict, judge
from fuzz.conform.report import print_summary, write_junit, write_log
from fuzz.shutdown import exit_status_of, kill_children_settled, scratch_dir, stop_on_signals
from tlinterp import TLError
from tlinterp.cli.conventions import (
    add_impl_choice,
    add_jobs,
    add_lang,
    add_verbosity,
    positive_int,
    print_impls,
    tool_parser,
    wrote,
)
from tlinterp.impl import Implementation, Outcome, SpecError, resolve
from tlinterp.impl.flags import add_impl_flags, impl_options, lowering_needs_opencl
from tlinterp.io.outfile import check_target


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
            timeout: Optional[float] = None, progress: Optional[Progress] = None,
            max_failures: Optional[int] = None) -> list[Verdict]:
    """Verdicts in corpus order; cases run on `jobs` threads (one for serial backends). With
    `max_failures`, no case starts once that many have failed: the verdicts are those of the
    cases that ran (the ones already running finish, so none leaves a process behind)."""
    task = progress.add_task("cases", total=len(cases)) if progress else None
    stop = threading.Event()
    failed = []  # one entry per failed case (list.append is atomic)

    def one(case: Case) -> Optional[Verdict]:
        if stop.is_set():
            return None  # -x: a case that had not started when the limit was reached
        v = run_case(impl, case, timeout)
        if v.status == FAIL:
            failed.append(case.id)
            if max_failures is not None and len(failed) >= max_failures:
                stop.set()
        if progress is not None:
            progress.advance(task)
        return v

    # even one case at a time runs in a worker thread, so that the main thread stays free to
    # take Ctrl-C and kill the implementation's processes (fuzz.shutdown)
    pool = ThreadPoolExecutor(max(1, jobs if impl.parallel else 1))
    try:
        futures = [pool.submit(one, c) for c in cases]
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
        return [v for v in (f.result() for f in futures) if v is not None]
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
    return [by_id[c.id] for c in order if c.id in by_id]  # -x: the cases not run are left out


def exit_status(verdicts: Sequence[Verdict]) -> int:
    return 1 if any(v.status == FAIL for v in verdicts) else 0


PURPOSE = ("Run a tensor-language implementation over the conformance corpus and compare it "
           "with the expected results.")
EXAMPLES = (
    ("tlconform --impl interp", "the reference over the whole corpus"),
    ("tlconform --impl opencl --device pocl -j 2", "our OpenCL lowering on PoCL"),
    ("tlconform --impl 'mytool {kernel} --args {args} --out {out}' -x -v",
     "stop at the first failure, show it"),
    ("tlconform --impl interp --filter invalid/ --json report.json", "a JSON report"),
)
EXIT_STATUSES = (
    (0, "every valid and invalid case passes (the reference: every undefined-behaviour "
        "case reports its kind)"),
    (1, "a case failed (also when -x/--max-failures stopped the run early)"),
    (2, "a usage error: unknown --impl, a bad flag value, a missing corpus, nothing matches "
        "--filter, a report that cannot be written"),
    (130, "interrupted (Ctrl-C): the implementation's processes are killed"),
)
NOTES = """\
An implementation is a registered name or a command template: placeholders {kernel} {args}
{out}, optional parts [--func {func}] [--groups {groups}]. See docs/conformance.md."""


def _parser() -> argparse.ArgumentParser:
    ap, g = tool_parser("tlconform", PURPOSE, EXAMPLES, EXIT_STATUSES, notes=NOTES)
    add_impl_choice(g.implementation, default=None, first="interp, opencl", old=())
    add_impl_flags(g.implementation, help={
        "lowering": "opencl: override a lowering decision (repeatable; `tlrun --help` lists "
                    "the keys), e.g. to check a tuned config on the whole corpus"})
    ap._option_string_actions["--impl"].help = (
        "implementation (required): interp, opencl, 'opencl-c:COMMAND {tl} [{out}]', "
        "python:MODULE:FUNCTION, a command template with {kernel} {args} {out} and optional "
        "[--func {func}] [--groups {groups}], ... (see --list-impls)")
    g.run.add_argument("--corpus", type=Path, default=None, metavar="DIR",
                       help="corpus directory (default: the repository's corpus/)")
    g.run.add_argument("--filter", default=None, metavar="PATTERN",
                       help="only cases whose id (e.g. valid/blas/gemm_f32_canonical_v0) "
                            "matches: a glob if it has * ? [, else a substring")
    add_lang(g.run, default=None,
             help="only the cases of this tensor-language version (each case's "
                  "metadata says; v0.4 adds the v0.3 cases in their v0.4 form, "
                  "marked as migrated; default: every case as written, or the "
                  "profile's version)")
    g.run.add_argument("--profile", default=None, metavar="NAME",
                       help="the target's dialect (fuzz/profiles; 'list' lists them): cases "
                            "using a construct outside it are skipped, kernels go to the "
                            "implementation in its spellings (default: all)")
    add_jobs(g.run, default=1, help="cases run at once (OpenCL implementations always run "
                                    "one at a time)")
    g.run.add_argument("--timeout", type=positive_seconds, default=None, metavar="S",
                       help="seconds per case (a timed-out case fails)")
    g.run.add_argument("-x", "--max-failures", type=positive_int, default=None, metavar="N",
                       nargs="?", const=1,
                       help="stop after N failed cases (-x alone: the first); the cases not "
                            "run are counted in the report, the exit status is 1")
    g.output.add_argument("--json", default=None, metavar="FILE",
                          help="machine-readable report: one object per case plus the "
                               "summary ('-': standard output; the tables then go to "
                               "standard error)")
    g.output.add_argument("--junit-xml", type=Path, default=None, metavar="FILE",
                          help="JUnit XML report, one test case per corpus case")
    g.output.add_argument("--log", type=Path, default=None, metavar="FILE",
                          help="per-case log with the reproducing commands")
    add_verbosity(g.output,
                  verbose="show each failure's output inline: the first mismatching elements "
                          "or the diagnostic, and the end of the implementation's output",
                  quiet="no progress bar")
    return ap


PIPE_WIDTH = 4096  # lines are not wrapped at 80 columns in a pipe or a file


# err.print(..., soft_wrap=True): one-line messages are never broken at the terminal's width
# (a test or a script reading them must not depend on COLUMNS); tables still fit it
def _console(stderr: bool) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of `tlconform`; returns the exit status (EXIT_STATUSES)."""
    try:
        opts = _parser().parse_args(argv)
    except SystemExit as e:
        if not e.code:  # --help: argparse's own end
            raise
        return int(e.code)  # a usage error (2): argparse named the flag
    # a plug-in running in this process may change the working directory: every path the
    # user gave means what it meant when the command was typed
    for name in ("log", "junit_xml", "json", "corpus"):
        value = getattr(opts, name)
        if value is not None and str(value) not in ("-", ""):
            setattr(opts, name, type(value)(os.path.abspath(value)))
    # SIGTERM ends the run as Ctrl-C does: the implementation's processes are killed, the
    # scratch directory (every temporary file, the implementations' too) removed
    with stop_on_signals(), scratch_dir("tlconform-"):
        try:
            return _main(opts)
        except KeyboardInterrupt as e:
            kill_children_settled()
            name = "interrupted" if getattr(e, "signum", 2) == 2 else f"stopped by {e}"
            print(f"tlconform: {name}", file=sys.stderr)
            return exit_status_of(e)
        finally:  # kept OpenCL workers live in the scratch directory: they end with it
            foreign = sys.modules.get("tlgpu.runtime.foreign")
            if foreign is not None:
                foreign.close_workers()


def _main(opts: argparse.Namespace) -> int:
    err = _console(stderr=True)
    console = err if opts.json == "-" else _console(stderr=False)
    try:
        if opts.profile == "list":
            from fuzz.profiles import describe

            console.print(describe(), highlight=False, markup=False)
            return 0
        profile = _profile(opts.profile)
        if profile.lang is not None:  # a v0.4 target reads v0.4: its cases by default
            if opts.lang not in (None, profile.lang):
                raise SpecError(f"--profile {opts.profile} is a {profile.lang} profile, not "
                                f"{opts.lang}: leave --lang out or make them agree")
            opts.lang = profile.lang
        if opts.list_impls:
            return print_impls(sys.stderr if opts.json == "-" else sys.stdout)
        if not opts.impl:
            raise SpecError("--impl NAME is required (see --list-impls)")
        lowering_needs_opencl(opts.impl, opts.lowering, "--impl")
        impl = resolve(opts.impl, impl_options(opts))
        from fuzz.campaign.options import check_device, runs_on_a_device

        if opts.device is not None or runs_on_a_device(opts.impl):

            # up front: a wrong name would otherwise fail every case as a rejection (exit 1)
            problem = check_device(opts.device) or (  # opencl-c:, spirv: run a known-good
                impl.self_test() if hasattr(impl, "self_test") else None)  # kernel first
            if problem:
                raise SpecError(f"--device: {problem}")
            from fuzz.campaign.options import chosen_device

            # which of several matching devices --device picked (docs/devices.md)
            err.print(f"tlconform: device {chosen_device(opts.device)}", highlight=False,
                      markup=False, soft_wrap=True)
        cases = load_corpus(opts.corpus or default_corpus(), opts.filter)
        not_migrated: list = []
        if opts.lang == "v0.4":  # the v0.3 cases too, in their v0.4 form where they have one
            from fuzz.conform.migrated import migrate_cases

            migrated, not_migrated = migrate_cases(cases)
            v03 = {c.id: c for c in migrated}
            cases = [v03.get(c.id, c) for c in cases
                     if c.lang == "v0.4" or c.id in v03]
        elif opts.lang is not None:
            cases = [c for c in cases if c.lang == opts.lang]
        corpus_order = cases + [c for c, _ in not_migrated]
        cases, skipped = apply_profile(cases, profile)
        skipped += not_migrated
        for report, option in _reports(opts):  # before the run, not after it
            try:
                check_target(report, option)
            except TLError as e:
                raise SpecError(e.diagnostics[0].message) from None
    except (SpecError, CorpusError) as e:
        err.print(f"tlconform: {e}", highlight=False, markup=False, soft_wrap=True)
        return 2
    if not cases and not skipped:
        err.print(f"tlconform: no case matches --filter {opts.filter!r}"
                  + (f" and --lang {opts.lang}" if opts.lang else ""), highlight=False,
                  markup=False, soft_wrap=True)
        return 2
    try:
        if opts.quiet or not console.is_terminal:
            verdicts = run_all(impl, cases, opts.jobs, opts.timeout,
                               max_failures=opts.max_failures)
        else:
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=console, transient=True) as progress:
                verdicts = run_all(impl, cases, opts.jobs, opts.timeout, progress,
                                   max_failures=opts.max_failures)
    except SpecError as e:
        err.print(f"tlconform: {e}", highlight=False, markup=False, soft_wrap=True)
        return 2
    not_run = len(cases) - len(verdicts)
    verdicts = _with_skipped(corpus_order, verdicts, skipped)
    print_summary(console, verdicts, impl.name, verbose=opts.verbose, not_run=not_run,
                  stop_after=opts.max_failures)
    status = exit_status(verdicts)
    try:
        if opts.json:
            write_json(opts.json, verdicts, impl.name, status)
        if opts.log:
            write_log(opts.log, verdicts, impl.name)
        if opts.junit_xml:
            write_junit(opts.junit_xml, verdicts, impl.name)
    except OSError as e:  # standard output (--json -) closed or full
        err.print(f"tlconform: cannot write the --json report to standard output "
                  f"({e.strerror or e})", highlight=False, markup=False, soft_wrap=True)
        return 2
    except TLError as e:  # a report file that cannot be written; none is left half-written
        err.print(f"tlconform: {e.diagnostics[0].message}", highlight=False, markup=False,
                  soft_wrap=True)
        return 2
    for path, _ in _reports(opts):
        wrote("tlconform", path, f"{len(verdicts)} cases")
    return status


def _reports(opts: argparse.Namespace) -> list[tuple[str, str]]:
    """(path, option) of the report files asked for (standard output is no file)."""
    return [(str(p), o) for o, p in (("--json", opts.json), ("--log", opts.log),
                                     ("--junit-xml", opts.junit_xml))
            if p is not None and str(p) != "-"]


if __name__ == "__main__":
    sys.exit(main())
