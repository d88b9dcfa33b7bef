"""`tlfuzz`: a differential fuzzing campaign, interpreter against the OpenCL backend.

    tlfuzz [--time 10m] [--impl NAME] [--device pocl] [-j CORES] [--seed S]
           [--out DIR] [--batch 8] [--shrink-time 60] [--frontend [--against 'CMD {tl}']]
           [-v] [-q]
           [--mutation NAME] [--work-group-size W0xW1] [--triage-time 120]
           [--profile all|tinytc-0.3.1|FILE.json|list] [--lang v0.3|v0.4]
           [--lowering KEY=VALUE ...] [--build-options 'OPTIONS'] [--reject-status N[,N...]]
    tlfuzz triage FINDING [--device D] [--reduce-time 120]
    tlfuzz report FINDING --out DIR
    tlfuzz reproduce FINDING | KERNEL.tl --args ARGS.npz --impl SPEC [flags]

--impl takes any name of the implementation registry (`tlrun --list-impls`): opencl (this
package's lowering, the default), 'opencl-c:COMMAND {tl}', python:MODULE:FUNCTION, a command
template, ...; other implementations than ours run one case per job.
--lang v0.4 generates tensor language v0.4 kernels and hands them to the implementation as v0.4
text (our opencl lowering takes them through the registry, one case per job, in their v0.3
form: what it does not lower yet is a rejected construct); findings carry `--lang v0.4` in
their saved lines.

Each job runs seeded Hypothesis searches (job j, round k uses a seed derived from S, j, k, so
a campaign replays deterministically from its seed); every failing batch is shrunk and
saved as NAME.tl + NAME.npz + NAME.txt (the `tlfuzz reproduce` command, which exits 1 while
the implementation differs from the reference, the `tlrun` command and the message);
every mismatch is then triaged (NAME.triage.txt; the live view and summary show its class) and
a device-compiler suspect gets a reduced stand-alone reproducer in NAME.repro/.
At start, the saved findings in --out are re-run first (one still failing makes the exit
status 1), then the Hypothesis example database (--out/hypothesis-db, given to every search)
is replayed. A live view shows cases/s, instruction
coverage and findings; Ctrl-C or the time limit ends the campaign with a summary table.
--out defaults to the per-user cache directory (tlinterp.cli.conventions.default_findings_dir); the
campaign ends with the line `tlfuzz: wrote DIR (N new findings)`. Exit statuses: EXIT_STATUSES
below (`tlfuzz --help` lists them).
--time is the whole campaign: searching, shrinking (at most --shrink-time per finding),
triage (at most --triage-time, else what is left) and every implementation run (its timeout
capped by what is left) end by then; a run the end cuts short is neither a case nor a finding.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import multiprocessing as mp
import os
import queue as queue_mod
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

from fuzz.campaign import sharedb
from fuzz.campaign.hunt import HuntOptions, hunt
from fuzz.campaign.options import (
    check_device,
    check_known_good,
    check_out_dir,
    chosen_device,
    keep_hypothesis_under,
    positive_seconds,
    runs_on_a_device,
)
from fuzz.strategies import generated_kinds
from tlinterp.cli.conventions import (
    add_impl_choice,
    add_jobs,
    add_lang,
    add_verbosity,
    default_findings_dir,
    grid_arg,
    print_impls,
    tool_parser,
    wrote,
)
from tlinterp.impl.flags import add_impl_flags, whole_number
from tlinterp.io.foreigntext import for_rich

# the kinds of v0.3 programs (the default --lang); generated_kinds("v0.4") for v0.4
ALL_KINDS = generated_kinds("v0.3")


def parse_time(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration like 90, 30s, 10m, 1h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def round_seed(seed: int, job: int, k: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{job}/{k}".encode()).digest()[:8], "big")


# --- jobs (child processes) -------------------------------------------------------------------


def _job(job: int, seed: int, opts: HuntOptions, deadline: float, out: str, rounds_batches: int,
         replay: bool, q) -> None:
    from fuzz.campaign.harness import save_finding
    from fuzz.campaign.rejections import Keyed, save_rejection
    from fuzz.campaign.sandbox import Sandbox, quiet_child
    from fuzz.shutdown import stop_on_sigterm
    from tlinterp.lang.diagnostics import TLError

    # SIGINT is the parent's to handle; compiler chatter from triage's reruns would cross the
    # live view (a job's errors reach the parent through q, not stderr); SIGTERM from the
    # parent ends the job in order (a finding being saved is saved whole or not at all)
    quiet_child()
    stop_on_sigterm()

    sandbox = None if opts.frontend else Sandbox(opts.device, opts.timeout, opts.mutation,
                                                 opts.impl)
    if sandbox is not None:
        sandbox.deadline = deadline  # no run lasts past the campaign's end

    def progress(n: int, cov: set) -> None:
        q.put(("progress", job, n, sorted(cov)))

    def report(findings) -> None:
        for f in findings:
            first_line = f.message.splitlines()[0][:120] if f.message else ""
            try:
                if isinstance(f, Keyed):  # saved once per key; later cases only counted
                    base, first = save_rejection(f, out)
                    if not first:
                        continue
                else:
                    base = save_finding(f, out)
            except (TLError, OSError) as e:  # a full disk: said, never a silent 0 findings
                why = e.diagnostics[0].message if isinstance(e, TLError) else str(e)
                q.put(("unsaved", job, f.kind, first_line, why))
                continue
            q.put(("finding", job, f.kind, base, first_line))
            if opts.triage_time > 0 and f.kind == "mismatch":
                from fuzz.triage.saved import triage_saved

                # triage counts inside --time: what is left of it, at most --triage-time
                budget = min(opts.triage_time, deadline - time.time())
                if budget < 1:
                    # `tlfuzz triage NAME.tl` does it later (docs/fuzzing.md)
                    q.put(("triage", base, "not triaged: --time was up"))
                    continue
                q.put(("triage", base, triage_saved(f, base, budget, opts.mutation)))

    stopped = False
    try:
        _search(job, seed, opts, deadline, out, rounds_batches, replay, q, sandbox, progress,
                report)
    except KeyboardInterrupt:  # fuzz.shutdown.Stopped: the parent ends the campaign
        stopped = True
    except Exception as e:  # noqa: BLE001 - reported as an internal error of the campaign
        import traceback

        q.put(("error", job, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        if sandbox is not None:
            sandbox.close(0.0 if stopped else 5.0)
        q.put(("done", job))


def _search(job, seed, opts, deadline, out, rounds_batches, replay, q, sandbox, progress,
            report) -> None:
    from fuzz.campaign import sharedb

    told = False

    def tell_if_lost() -> None:  # the parent says it once for the campaign
        nonlocal told
        if not told and sharedb.lost():
            q.put(("database-lost", job, sharedb.lost()))
            told = True

    if replay:
        report(_replay_saved(out, sandbox, opts, q))
        if opts.database and (os.path.isdir(opts.database) or "://" in opts.database):
            report(hunt(opts, seed, 1, progress, replay_only=True, sandbox=sandbox))
            tell_if_lost()
    k = 0
    while time.time() < deadline:
        report(hunt(opts, round_seed(seed, job, k), rounds_batches, progress,
                    stop_at=deadline, sandbox=sandbox))
        tell_if_lost()
        k += 1


def _replay_saved(out: str, sandbox, opts: HuntOptions, q) -> list:
    """Re-run saved differential findings first; report which still fail."""
    import tlinterp
    from fuzz.strategies import FuzzCase
    from fuzz.triage.reproduce import read_finding_line, read_finding_source
    from tlinterp.io.args import load_npz
    from tlinterp.lang.diagnostics import decode_source

    still = []
    for tl in sorted(glob.glob(os.path.join(out, "*.tl"))):
        name = os.path.basename(tl)
        if opts.frontend or not name.startswith(("mismatch", "backend", "oclgrind", "red-zone")):
            continue
        try:
            cmd = read_finding_line(tl[:-3] + ".txt")
            lang = re.search(r"--lang (v0\.[34])", cmd)
            lang = lang.group(1) if lang else None
            text = decode_source(read_finding_source(tl), tl)
            program = tlinterp.check(tlinterp.parse(text, tl, lang=lang))
            args = load_npz(tl[:-3] + ".npz")
            groups = grid_arg(re.search(r"--groups (\S+)", cmd).group(1))
            func = re.search(r"--func (\S+)", cmd).group(1)
            # the lowering config it was found with travels in the reproducing command
            overrides = re.findall(r"--lowering (\S+)", cmd)
            config = None
            if overrides:
                from tlgpu import LoweringConfig

                config = LoweringConfig.from_overrides([o.strip("'") for o in overrides])
        except Exception as e:  # noqa: BLE001 - a damaged file is reported, not fatal
            q.put(("replay", tl, f"unreadable ({type(e).__name__})"))
            continue
        case = FuzzCase(program, func, args, groups, program.lang or "v0.3")
        found = sandbox.run([case], config)
        q.put(("replay", tl, "still failing" if found else "no longer fails"))
        still += found
    return []  # already saved under the same names


# --- the live view ------------------------------------------------------------------------------


@dataclass
class Tally:
    start: float = field(default_factory=time.time)
    cases: int = 0
    coverage: set = field(default_factory=set)
    findings: list = field(default_factory=list)  # (kind, path, first line)
    replays: list = field(default_factory=list)
    done: set = field(default_factory=set)
    errors: list = field(default_factory=list)  # internal errors of jobs
    unsaved: list = field(default_factory=list)  # (kind, first line, why) not written
    triage: dict = field(default_factory=dict)  # finding path -> triage class
    again: int = 0  # findings found a second time (same saved files)
    jobs: int = 1
    kinds: list = field(default_factory=list)  # the instruction kinds coverage counts
    database_lost: Optional[str] = None  # why the shared example database stopped answering
    database_lost_at: float = 0.0

    def rate(self) -> float:
        return self.cases / max(time.time() - self.start, 1e-9)

    def table(self, title: str):
        from rich.table import Table

        t = Table(title=for_rich(title))  # the implementation's and device's names in it
        t.add_column("measure")
        t.add_column("value", overflow="fold")
        el = time.time() - self.start
        t.add_row("elapsed", f"{el:.0f} s")
        t.add_row("cases", str(self.cases))
        t.add_row("cases/s", f"{self.rate():.2f}"
                  + (f" ({self.rate() / self.jobs:.2f} per job)" if self.jobs > 1 else ""))
        every = self.kinds or ALL_KINDS
        missing = [k for k in every if k not in self.coverage]
        t.add_row("instruction coverage", f"{len(set(every) & self.coverage)}/"
                  f"{len(every)}" + (f" (missing: {', '.join(missing)})" if missing else ""))
        kinds: dict[str, int] = {}
        for k, _, _ in self.findings:
            kinds[k] = kinds.get(k, 0) + 1
        t.add_row("findings", (", ".join(f"{k}: {n}" for k, n in sorted(kinds.items()))
                               or ("0 saved" if self.unsaved else "0"))
                  + (f" ({self.again} found again, saved once)" if self.again else ""))
        if self.unsaved:
            t.add_row("NOT SAVED", f"{len(self.unsaved)} finding(s) could not be written: "
                      f"{self.unsaved[-1][2]}")
        if self.triage:
            classes: dict[str, int] = {}
            for c in self.triage.values():
                classes[c] = classes.get(c, 0) + 1
            t.add_row("triage", ", ".join(f"{c}: {n}" for c, n in sorted(classes.items())))
        for k, path, line in self.findings[-5:]:
            cls = f" ({self.triage[path]})" if path in self.triage else ""
            # a finding's first line is the implementation's message: foreign text
            t.add_row(for_rich(f"  {k}{cls}"), for_rich(f"{path}.tl — {line}"))
        for path, status in self.replays:
            t.add_row("  replayed", for_rich(f"{path}: {status}"))
        if self.database_lost:
            t.add_row("example database", f"shared one lost after "
                      f"{self.database_lost_at - self.start:.0f} s, local since")
        return t


def _drain(q, tally: Tally, timeout: float) -> None:
    try:
        msg = q.get(timeout=timeout)
    except queue_mod.Empty:
        return
    while True:
        kind = msg[0]
        if kind == "progress":
            tally.cases += msg[2]
            tally.coverage |= set(msg[3])
        elif kind == "finding":
            if any(path == msg[3] for _, path, _ in tally.findings):
                # the same program and arguments again (another job or search shrank to it):
                # saved once under its hash, so counted once
                tally.again += 1
            else:
                tally.findings.append((msg[2], msg[3], msg[4]))
        elif kind == "triage":
            tally.triage[msg[1]] = msg[2]
        elif kind == "replay":
            tally.replays.append((msg[1], msg[2]))
        elif kind == "done":
            tally.done.add(msg[1])
        elif kind == "error":
            tally.errors.append(msg[2])
        elif kind == "database-lost" and tally.database_lost is None:
            tally.database_lost, tally.database_lost_at = msg[2], time.time()
        elif kind == "unsaved":
            tally.unsaved.append((msg[2], msg[3], msg[4]))
        try:
            msg = q.get_nowait()
        except queue_mod.Empty:
            return


def _params(ns: argparse.Namespace) -> dict:
    """The generator's parameters of a campaign: the profile and the language."""
    return {"profile": getattr(ns, "profile_ref", None), "lang": ns.lang}


def run_campaign(ns: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    os.makedirs(ns.out, exist_ok=True)
    opts = HuntOptions(device=ns.device, batch=ns.batch, shrink_time=ns.shrink_time,
                       frontend=ns.frontend, against=ns.against,
                       database=ns.database or os.path.join(ns.out, "hypothesis-db"),
                       mutation=ns.mutation, impl=ns.impl_ref, triage_time=ns.triage_time,
                       params=_params(ns), out=ns.out)
    # one budget: the search, shrinking, triage and the replays all end by `deadline`; the
    # jobs are stopped STOP_GRACE seconds after it whatever they are doing
    deadline = time.time() + ns.time
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_job, args=(j, ns.seed, opts, deadline, ns.out, ns.rounds,
                                            j == 0, q))
             for j in range(ns.jobs)]
    for p in procs:
        p.start()
    tally = Tally(jobs=ns.jobs, kinds=generated_kinds(ns.lang))
    interrupted: Optional[BaseException] = None
    target = getattr(ns.impl_ref, "name", None) or (ns.impl_ref[0] if ns.impl_ref
                                                     else "opencl")
    # the device as given: the line above the table names the one it picked (device_label)
    front = "front-end" + (f" against {ns.against}" if ns.against else "")
    # a suite on no device (--passes) names none
    where = "" if getattr(ns.impl_ref, "on_a_device", "") is None else " on " + ns.device
    title = (f"tlfuzz {front if ns.frontend else target + where}, "
             f"seed {ns.seed}, {ns.jobs} job(s)")
    shown = 0  # findings already printed (-v)
    announced = False

    def news(say) -> None:
        """What the campaign says as it goes: each finding with -v, and once, that the
        shared example database stopped answering."""
        nonlocal shown, announced
        if ns.verbose:
            for kind, path, line in tally.findings[shown:]:
                say(f"{kind}: {path}.tl — {line}")
            shown = len(tally.findings)
        if tally.database_lost and not announced:
            announced = True
            say(f"tlfuzz: the shared example database {ns.database} stopped answering "
                f"({tally.database_lost}); the campaign goes on with the local one, "
                f"{os.path.join(ns.out, 'hypothesis-db')}")

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    try:
        with (_NoLive() if ns.quiet else
              Live(tally.table(title), console=console, refresh_per_second=2,
                   transient=False)) as live:
            while len(tally.done) < len(procs):
                _drain(q, tally, 0.5)
                news(say)
                live.update(tally.table(title))
                if time.time() > deadline + STOP_GRACE:
                    break  # a job is past the budget: stopped below
                if all(not p.is_alive() for p in procs):
                    _drain(q, tally, 0.1)
                    break
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (fuzz.shutdown.Stopped)
        interrupted = e
    finally:
        _stop_jobs(procs)
    _drain(q, tally, 0.1)
    news(say)
    state = (f" — {interrupted}" if interrupted and str(interrupted) else
             " — interrupted" if interrupted else " — summary")
    console.print(tally.table(title + state))
    for e in tally.errors:
        console.print(f"[red]internal error in a job (please report):[/red] {for_rich(e)}",
                      soft_wrap=True)  # whole lines: nothing reading them depends on COLUMNS
    for kind, line, why in tally.unsaved:
        console.print(f"tlfuzz: a {kind} finding could not be saved: {why}\n  ({line})",
                      highlight=False, markup=False, soft_wrap=True)
    n = len(tally.findings)
    wrote("tlfuzz", ns.out, f"{n} new finding{'s' if n != 1 else ''}")
    if tally.errors:
        return 3
    if tally.unsaved:
        return EXIT_UNSAVED
    if tally.findings or any(s == "still failing" for _, s in tally.replays):
        return 1
    if interrupted is not None:
        from fuzz.shutdown import exit_status_of

        return exit_status_of(interrupted)
    if tally.cases == 0:
        console.print(f"tlfuzz: no case ran to its end within --time {ns.time:g} s: nothing "
                      "was tested (does the implementation answer at all? `tlrun --impl "
                      "SPEC KERNEL.tl --args ARGS.npz` runs one case)", highlight=False,
                      markup=False, soft_wrap=True)
        return EXIT_NOTHING_RAN
    return 0


STOP_GRACE = 5.0  # seconds past --time before the jobs are stopped
EXIT_NOTHING_RAN = 4
EXIT_UNSAVED = 5


def _stop_jobs(procs) -> None:
    """Stop the jobs in order (SIGTERM: a finding being written is written whole or not at
    all), then kill whatever is left below us: jobs, their sandboxes, the implementations'
    processes (orphans come back to us, fuzz.shutdown.adopt_orphans)."""
    import signal

    from fuzz.shutdown import kill_children, kill_tree

    for p in procs:
        if p.is_alive():
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    end = time.time() + 2.0
    for p in procs:
        p.join(max(end - time.time(), 0.0))
    for p in procs:
        kill_tree(p.pid, root_too=p.is_alive())
        p.join(1)
    # multiprocessing's resource tracker is ours to keep: it cleans up after the queue
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
    kill_children(frozenset({tracker}) if tracker else frozenset())


class _NoLive:
    """-q: no live view (the summary table still prints)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, _renderable) -> None:
        pass


PURPOSE = ("A differential fuzzing campaign: generated kernels on the reference interpreter "
           "against an implementation.")
EXAMPLES = (
    ("tlfuzz --time 10m", "our OpenCL lowering on PoCL, one job per core"),
    ("tlfuzz --impl 'mytool {kernel} --args {args} --out {out}' --time 1h -j 4 --out f/",
     "another compiler"),
    ("tlfuzz --seed 1000 --database redis://db:6379 --out /shared/findings",
     "one machine of several (docs/fuzzing.md)"),
    ("tlfuzz --lang v0.4 --impl 'spirv:tinytc {tl}' --device intel --reject-status 1",
     "v0.4 kernels against another compiler"),
    ("tlfuzz reproduce f/mismatch-0123abcd4567", "rerun a finding (exit 1 while it differs)"),
    ("tlfuzz triage f/mismatch-0123abcd4567", "classify a finding, reduce its code"),
    ("tlfuzz report f/mismatch-0123abcd4567 --out r/",
     "a stand-alone report (repro.sh, host.py) of an external compiler's finding"),
)
EXIT_STATUSES = (
    (0, "no findings"),
    (1, "findings (or a saved finding in --out still fails)"),
    (2, "a bad command line (a usage error)"),
    (3, "an internal error of the fuzzer (please report it)"),
    (4, "no case ran to its end within --time: nothing was tested"),
    (5, "a finding could not be saved (--out full or failing)"),
    (130, "interrupted (Ctrl-C) with no findings"),
    (143, "stopped by SIGTERM with no findings"),
)
NOTES = """\
subcommands (each has its own --help):
  tlfuzz reproduce FINDING | KERNEL.tl --args ARGS.npz --impl NAME   rerun one case
  tlfuzz triage FINDING                                              classify a finding
  tlfuzz report FINDING --out DIR              a stand-alone report for the compiler's vendor

Findings go to --out, by default the per-user cache directory:
  DEFAULT_OUT
The campaign ends by saying where it saved them. See docs/fuzzing.md."""


def build_parser() -> argparse.ArgumentParser:
    notes = NOTES.replace("DEFAULT_OUT", default_findings_dir())
    p, g = tool_parser("tlfuzz", PURPOSE, EXAMPLES, EXIT_STATUSES, notes=notes,
                       usage="tlfuzz [options]\n       tlfuzz reproduce ...\n"
                             "       tlfuzz triage ...")
    add_impl_choice(g.implementation, default=None, first="opencl (default: our lowering)")
    add_impl_flags(g.implementation, device_default="pocl", help={
        "lowering": "opencl: fuzz one fixed lowering config (repeatable KEY=VALUE; `tlrun "
                    "--help` lists the keys) instead of random ones; runs one kernel per job"})
    g.run.add_argument("--time", type=parse_time, default=parse_time("10m"), metavar="T",
                       help="campaign length: 90, 30s, 10m, 1h (default 10m)")
    add_jobs(g.run, default=os.cpu_count() or 1,
             help="parallel searches (processes), each with its own seed stream; default: "
                  "the number of cores")
    g.run.add_argument("--seed", type=whole_number(0), default=0, metavar="S",
                       help="campaign seed (deterministic replay)")
    g.run.add_argument("--database", default=None, metavar="DIR|redis://HOST:PORT",
                       help="Hypothesis example database: a directory or redis://HOST:PORT "
                            "(default OUT/hypothesis-db); share it between machines")
    g.run.add_argument("--batch", type=whole_number(1), default=8, metavar="N",
                       help="kernels per OpenCL build")
    # long searches: Hypothesis starts every search with its simplest (near-empty) examples
    g.run.add_argument("--rounds", type=whole_number(1), default=50, metavar="N",
                       help="batches per seeded search")
    g.run.add_argument("--shrink-time", type=positive_seconds, default=60.0, metavar="S",
                       help="seconds per shrink")
    g.run.add_argument("--frontend", action="store_true",
                       help="front-end mode: mutated programs must only produce diagnostics")
    g.run.add_argument("--against", default=None, metavar="'COMMAND {tl}'",
                       help="with --frontend: another front end that exits 0 when it accepts "
                            "the file {tl} and non-zero when it rejects it; generated programs "
                            "and their mutants go to both, every disagreement is a finding")
    g.run.add_argument("--mutation", default=None, metavar="NAME",
                       help="self-test: plant a known bug in the OpenCL lowering "
                            "(see fuzz/mutants/lowering_v03.py or bench/mutants.py --list)")
    add_lang(g.run, default=None,
             help="the tensor-language version of the generated kernels, as the "
                  "implementation reads them (default: the profile's, else v0.3; with our "
                  "opencl lowering, v0.4 kernels it does not lower yet are left out)")
    g.run.add_argument("--profile", default="all", metavar="NAME",
                       help="the target's dialect (fuzz/profiles; 'list' lists them): only its "
                            "constructs are generated, written in its spellings (default: all)")
    g.run.add_argument("--triage-time", type=float, default=120.0, metavar="S",
                       help="triage every mismatch; seconds to reduce a device-compiler "
                            "suspect (0: no triage)")
    from fuzz.suites.options import add_suite_options

    add_suite_options(g.run)
    g.output.add_argument("--out", default=None, metavar="DIR",
                          help="findings directory (default: the per-user cache directory "
                               "below)")
    add_verbosity(g.output, verbose="print each finding as it is saved",
                  quiet="no live view, only the summary")
    return p


def _impl_ref(ns: argparse.Namespace) -> Optional[tuple]:
    """(spec, options) of the implementation under test; None for our own lowering, which
    keeps the batched, configuration-varying campaign."""
    from tlinterp.impl import SpecError, resolve
    from tlinterp.impl.flags import impl_options, lowering_needs_opencl

    try:
        options = impl_options(ns)
        lowering_needs_opencl(ns.impl or "opencl", options.lowering, "--impl")
        if options.lowering and ns.mutation is not None:
            # the planted bug lives in this process's lowering; a fixed config runs the
            # registry's opencl, which builds in a fresh process without it
            raise SpecError("--mutation cannot be combined with --lowering (the mutation "
                            "self-test varies the lowering config itself)")
        if ns.impl in (None, "opencl") and not options.lowering and (
                ns.lang != "v0.4" or ns.mutation is not None):
            # v0.4 with a planted bug too: the registry's opencl runs SPMD kernels in a
            # fresh process, which would not have it
            return None
        impl = resolve(ns.impl or "opencl", options)  # usage errors now, not in every job
        if ns.mutation is not None and impl.spec != "opencl":
            # it was silently ignored: the planted bug lives in our lowering only
            raise SpecError(f"--mutation plants a bug in our OpenCL lowering, which --impl "
                            f"{impl.spec} does not run (leave --impl out; for bugs planted "
                            "in the interpreter: bench/mutants.py --lang v0.4)")
    except SpecError as e:
        raise ValueError(str(e)) from None
    if impl.spec == "opencl" and not options.lowering and ns.lang != "v0.4":
        ns.device = impl.options.device or ns.device
        return None
    # a fixed lowering config: our lowering through the registry, like any implementation
    return (impl.spec, impl.options)


def _suite(ns: argparse.Namespace):
    """--passes or --compare-levels: the suite that takes the implementation's place
    (campaign/suites.py); None for an ordinary campaign."""
    from fuzz.suites.options import suite_of
    from tlinterp.impl import SpecError
    from tlinterp.impl.flags import impl_options

    try:
        return suite_of(ns, impl_options(ns))
    except SpecError as e:
        raise ValueError(str(e)) from None


def _against_problem(ns: argparse.Namespace) -> Optional[str]:
    """Why --against cannot be used as given (None: it can)."""
    from fuzz.campaign.frontdiff import check_against
    from tlinterp.impl import SpecError

    if not ns.frontend:
        return "--against needs --frontend (it compares front ends, nothing runs)"
    if ns.impl is not None:
        return "--against compares front ends: --impl has no part in it"
    try:
        check_against(ns.against)
    except SpecError as e:
        text = str(e)
        return text if text.startswith("--against") else f"--against: {text}"
    return None


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["triage"]:
        from fuzz.triage.cli import main as triage_main

        return triage_main(argv[1:])
    if argv[:1] == ["report"]:
        from fuzz.triage.vendor_report import main as report_main

        return report_main(argv[1:])
    if argv[:1] == ["reproduce"]:
        from fuzz.triage.reproduce import main as reproduce_main

        return reproduce_main(argv[1:])
    from fuzz.suites.options import variant_words

    parser = build_parser()
    try:
        ns = parser.parse_args(variant_words(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if ns.list_impls:
        return print_impls()
    if not (0 <= ns.triage_time < float("inf")):  # also rejects nan
        print(f"tlfuzz: --triage-time must be a finite number of seconds >= 0, got "
              f"{ns.triage_time}", file=sys.stderr)
        return 2
    if ns.out is None:  # never the current directory: a campaign started anywhere
        ns.out = default_findings_dir()
    if ns.profile == "list":
        from fuzz.profiles import describe

        print(describe())
        return 0
    try:  # before --out is created: a usage error leaves nothing behind
        from fuzz.profiles import ProfileError
        from fuzz.profiles import load as load_profile

        ns.profile_ref = load_profile(ns.profile)
    except ProfileError as e:
        print(f"tlfuzz: --profile: {e}", file=sys.stderr)
        return 2
    if ns.profile_ref.lang and ns.lang and ns.lang != ns.profile_ref.lang:
        print(f"tlfuzz: --profile {ns.profile} is a {ns.profile_ref.lang} profile, not "
              f"{ns.lang}: leave --lang out or make them agree", file=sys.stderr)
        return 2
    ns.lang = ns.lang or ns.profile_ref.lang or "v0.3"
    try:
        ns.impl_ref = _suite(ns) or _impl_ref(ns)
    except ValueError as e:
        print(f"tlfuzz: {e}", file=sys.stderr)
        return 2
    if ns.against is not None:
        problem = _against_problem(ns)
        if problem:
            print(f"tlfuzz: {problem}", file=sys.stderr)
            return 2
    # the jobs' working directories are scratch directories: every path the user gave is
    # made absolute now
    ns.out = os.path.abspath(ns.out)
    if ns.database and "://" not in ns.database:
        ns.database = os.path.abspath(ns.database)
    if ns.mutation is not None and ns.frontend:
        print("tlfuzz: --mutation plants a bug in our OpenCL lowering, which --frontend never "
              "runs", file=sys.stderr)
        return 2
    if ns.mutation is not None:
        from fuzz.mutants.registry import known

        if ns.mutation not in known():
            print(f"tlfuzz: unknown mutation '{ns.mutation}' (known: "
                  f"{', '.join(known())})", file=sys.stderr)
            return 2
    if ns.database and sharedb.is_url(ns.database):
        # up front: a server that does not answer now is a usage error, one that goes away
        # later leaves the campaign on its local database (sharedb)
        problem = sharedb.check_reachable(ns.database)
        if problem:
            print(f"tlfuzz: --database {ns.database}: {problem}", file=sys.stderr)
            return 2
    suite = ns.impl_ref if hasattr(ns.impl_ref, "differential") else None
    spec, options = (suite.on_a_device, suite.options) if suite else ns.impl_ref or (None, None)
    # a python: or command implementation runs on no device: none is needed, none chosen
    on_a_device = not ns.frontend and runs_on_a_device(spec) and not (suite and spec is None)
    # the device first: check_out_dir creates --out, which a device problem must not leave
    problem = (on_a_device and (check_device(ns.device) or check_known_good(spec, options))
               or check_out_dir(ns.out))
    if problem:
        print(f"tlfuzz: {problem}", file=sys.stderr)
        return 2
    if on_a_device:  # which of several matching devices --device picked (docs/devices.md)
        ns.device_label = chosen_device(ns.device)
        print(f"tlfuzz: device {ns.device_label}", file=sys.stderr)
    keep_hypothesis_under(ns.out)
    from fuzz.shutdown import adopt_orphans, exit_status_of, scratch_dir, stop_on_signals

    # SIGTERM and Ctrl-C end the campaign in order (the summary, no process and no scratch
    # directory left behind: every temporary file of the jobs lives below scratch_dir)
    adopt_orphans()
    with stop_on_signals(), scratch_dir("tlfuzz-"):
        try:
            return run_campaign(ns)
        except KeyboardInterrupt as e:  # before the jobs started or after the summary
            from fuzz.shutdown import kill_children

            kill_children()
            return exit_status_of(e)


if __name__ == "__main__":
    sys.exit(main())
