"""`tlfuzz`: a differential fuzzing campaign, interpreter against the OpenCL backend.

    tlfuzz [--time 10m] [--impl NAME] [--device pocl] [--jobs CORES] [--seed S]
           [--out corpus/findings] [--batch 8] [--shrink-time 60] [--frontend]
           [--mutation NAME] [--work-group-size W0xW1] [--triage-time 120]
           [--profile all|tinytc-0.3.1|FILE.json|list]
           [--lowering KEY=VALUE ...] [--build-options 'OPTIONS'] [--reject-status N[,N...]]
    tlfuzz triage FINDING [--device D] [--reduce-time 120]
    tlfuzz reproduce FINDING | KERNEL.tl --args ARGS.npz --impl SPEC [flags]

--impl takes any name of the implementation registry (`tlrun --list-impls`): opencl (this
package's lowering, the default), opencl-c:'COMMAND {tl}', python:MODULE:FUNCTION, a command
template, ...; other implementations than ours run one case per job.

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
Exit status: 0 no findings, 1 findings, 2 bad command line, 3 internal error of the fuzzer,
130 interrupted by Ctrl-C with no findings.
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

from tlinterp import ir
from tlinterp.impl.flags import add_impl_flags

from .hunt import HuntOptions, hunt
from .options import check_device, check_out_dir, keep_hypothesis_under, positive_seconds

# the generator writes v0.3 programs: the v0.4-only instructions are not among its kinds
ALL_KINDS = sorted({t.__name__ for t in ir.Instruction.__args__
                    if t not in ir.V04_INSTRUCTIONS}
                   | {t.__name__ + ".atomic" for t in ir.BLAS})


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
    from .harness import save_finding
    from .rejections import REJECTED, save_rejection
    from .sandbox import Sandbox, quiet_child

    # SIGINT is the parent's to handle; compiler chatter from triage's reruns would cross the
    # live view (a job's errors reach the parent through q, not stderr)
    quiet_child()

    sandbox = None if opts.frontend else Sandbox(opts.device, opts.timeout, opts.mutation,
                                                 opts.impl)

    def progress(n: int, cov: set) -> None:
        q.put(("progress", job, n, sorted(cov)))

    def report(findings) -> None:
        for f in findings:
            if f.kind == REJECTED:  # saved once per construct; later cases only counted
                base, first = save_rejection(f, out)
                if not first:
                    continue
            else:
                base = save_finding(f, out)
            q.put(("finding", job, f.kind, base, f.message.splitlines()[0][:120]))
            if opts.triage_time > 0 and f.kind == "mismatch":
                from .triage_saved import triage_saved

                q.put(("triage", base, triage_saved(f, base, opts.triage_time, opts.mutation)))

    try:
        _search(job, seed, opts, deadline, out, rounds_batches, replay, q, sandbox, progress,
                report)
    except Exception as e:  # noqa: BLE001 - reported as an internal error of the campaign
        import traceback

        q.put(("error", job, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        if sandbox is not None:
            sandbox.close()
        q.put(("done", job))


def _search(job, seed, opts, deadline, out, rounds_batches, replay, q, sandbox, progress,
            report) -> None:
    if replay:
        report(_replay_saved(out, sandbox, opts, q))
        if opts.database and (os.path.isdir(opts.database) or "://" in opts.database):
            report(hunt(opts, seed, 1, progress, replay_only=True, sandbox=sandbox))
    k = 0
    while time.time() < deadline:
        report(hunt(opts, round_seed(seed, job, k), rounds_batches, progress,
                    stop_at=deadline, sandbox=sandbox))
        k += 1


def _replay_saved(out: str, sandbox, opts: HuntOptions, q) -> list:
    """Re-run saved differential findings first; report which still fail."""
    import tlinterp
    from tlinterp.args import load_npz

    from ..strategies import FuzzCase

    still = []
    for tl in sorted(glob.glob(os.path.join(out, "*.tl"))):
        name = os.path.basename(tl)
        if opts.frontend or not name.startswith(("mismatch", "backend", "oclgrind", "red-zone")):
            continue
        try:
            program = tlinterp.check(tlinterp.parse(open(tl).read(), tl))
            args = load_npz(tl[:-3] + ".npz")
            cmd = open(tl[:-3] + ".txt").readline()
            groups = int(re.search(r"--groups (\d+)", cmd).group(1))
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
        case = FuzzCase(program, func, args, groups)
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
    triage: dict = field(default_factory=dict)  # finding path -> triage class
    jobs: int = 1

    def rate(self) -> float:
        return self.cases / max(time.time() - self.start, 1e-9)

    def table(self, title: str):
        from rich.table import Table

        t = Table(title=title)
        t.add_column("measure")
        t.add_column("value", overflow="fold")
        el = time.time() - self.start
        t.add_row("elapsed", f"{el:.0f} s")
        t.add_row("cases", str(self.cases))
        t.add_row("cases/s", f"{self.rate():.2f}"
                  + (f" ({self.rate() / self.jobs:.2f} per job)" if self.jobs > 1 else ""))
        missing = [k for k in ALL_KINDS if k not in self.coverage]
        t.add_row("instruction coverage", f"{len(set(ALL_KINDS) & self.coverage)}/"
                  f"{len(ALL_KINDS)}" + (f" (missing: {', '.join(missing)})" if missing else ""))
        kinds: dict[str, int] = {}
        for k, _, _ in self.findings:
            kinds[k] = kinds.get(k, 0) + 1
        t.add_row("findings", ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())) or "0")
        if self.triage:
            classes: dict[str, int] = {}
            for c in self.triage.values():
                classes[c] = classes.get(c, 0) + 1
            t.add_row("triage", ", ".join(f"{c}: {n}" for c, n in sorted(classes.items())))
        for k, path, line in self.findings[-5:]:
            cls = f" ({self.triage[path]})" if path in self.triage else ""
            t.add_row(f"  {k}{cls}", f"{path}.tl — {line}")
        for path, status in self.replays:
            t.add_row("  replayed", f"{path}: {status}")
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
            tally.findings.append((msg[2], msg[3], msg[4]))
        elif kind == "triage":
            tally.triage[msg[1]] = msg[2]
        elif kind == "replay":
            tally.replays.append((msg[1], msg[2]))
        elif kind == "done":
            tally.done.add(msg[1])
        elif kind == "error":
            tally.errors.append(msg[2])
        try:
            msg = q.get_nowait()
        except queue_mod.Empty:
            return


def run_campaign(ns: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    os.makedirs(ns.out, exist_ok=True)
    opts = HuntOptions(device=ns.device, batch=ns.batch, shrink_time=ns.shrink_time,
                       frontend=ns.frontend,
                       database=ns.database or os.path.join(ns.out, "hypothesis-db"),
                       mutation=ns.mutation, impl=ns.impl_ref, triage_time=ns.triage_time,
                       params={"profile": getattr(ns, "profile_ref", None)}, out=ns.out)
    deadline = time.time() + ns.time
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_job, args=(j, ns.seed, opts, deadline, ns.out, ns.rounds,
                                            j == 0, q))
             for j in range(ns.jobs)]
    for p in procs:
        p.start()
    tally = Tally(jobs=ns.jobs)
    interrupted = False
    target = ns.impl_ref[0] if ns.impl_ref else ns.backend
    title = (f"tlfuzz {'front-end' if ns.frontend else target + ' on ' + ns.device}, "
             f"seed {ns.seed}, {ns.jobs} job(s)")
    try:
        with Live(tally.table(title), console=console, refresh_per_second=2,
                  transient=False) as live:
            while len(tally.done) < len(procs):
                _drain(q, tally, 0.5)
                live.update(tally.table(title))
                if time.time() > deadline + ns.shrink_time + 120:
                    break  # a job is stuck past every allowance: stop waiting
                if all(not p.is_alive() for p in procs):
                    _drain(q, tally, 0.1)
                    break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join(5)
    _drain(q, tally, 0.1)
    console.print(tally.table(title + (" — interrupted" if interrupted else " — summary")))
    for e in tally.errors:
        console.print(f"[red]internal error in a job (please report):[/red] {e}")
    if tally.errors:
        return 3
    if tally.findings or any(s == "still failing" for _, s in tally.replays):
        return 1
    return 130 if interrupted else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tlfuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--time", type=parse_time, default=parse_time("10m"),
                   help="campaign length: 90, 30s, 10m, 1h (default 10m)")
    p.add_argument("--backend", choices=["opencl"], default="opencl",
                   help="this package's OpenCL lowering (the default of --impl)")
    p.add_argument("--impl", default=None, metavar="NAME",
                   help="implementation under test: opencl (default), opencl-c:'COMMAND {tl}', "
                        "python:MODULE:FUNCTION, a command template, ... (tlrun --list-impls)")
    add_impl_flags(p, device_default="pocl", help={
        "lowering": "opencl: fuzz one fixed lowering config (repeatable KEY=VALUE; `tlrun "
                    "--help` lists the keys) instead of random ones; runs one kernel per job"})
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="parallel searches (processes), each with its own seed stream; "
                        "default: the number of cores")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (deterministic replay)")
    p.add_argument("--out", default="corpus/findings", help="findings directory")
    p.add_argument("--database", default=None,
                   help="Hypothesis example database: a directory or redis://HOST:PORT "
                        "(default OUT/hypothesis-db); share it between machines")
    p.add_argument("--batch", type=int, default=8, help="kernels per OpenCL build")
    # long searches: Hypothesis starts every search with its simplest (near-empty) examples
    p.add_argument("--rounds", type=int, default=50, help="batches per seeded search")
    p.add_argument("--shrink-time", type=positive_seconds, default=60.0,
                   help="seconds per shrink")
    p.add_argument("--frontend", action="store_true",
                   help="front-end mode: mutated programs must only produce diagnostics")
    p.add_argument("--mutation", default=None,
                   help="self-test: plant a known bug in the OpenCL lowering "
                        "(see fuzz/campaign/mutations.py or bench/mutants.py --list)")
    p.add_argument("--profile", default="all", metavar="NAME",
                   help="the target's dialect (fuzz/profiles; 'list' lists them): only its "
                        "constructs are generated, written in its spellings (default: all)")
    p.add_argument("--triage-time", type=float, default=120.0,
                   help="triage every mismatch; seconds to reduce a device-compiler suspect "
                        "(0: no triage)")
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
        if ns.impl is None and not options.lowering:
            return None
        impl = resolve(ns.impl or "opencl", options)  # usage errors now, not in every job
    except SpecError as e:
        raise ValueError(str(e)) from None
    if impl.spec == "opencl" and not options.lowering:
        ns.device = impl.options.device or ns.device
        return None
    # a fixed lowering config: our lowering through the registry, like any implementation
    return (impl.spec, impl.options)


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["triage"]:
        from .triage_cli import main as triage_main

        return triage_main(argv[1:])
    if argv[:1] == ["reproduce"]:
        from .reproduce import main as reproduce_main

        return reproduce_main(argv[1:])
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if ns.jobs < 1 or ns.batch < 1 or ns.rounds < 1 or ns.seed < 0 \
            or not (0 <= ns.triage_time < float("inf")):  # also rejects nan
        print("tlfuzz: --jobs, --batch and --rounds must be positive, --seed >= 0, "
              "--triage-time not negative",
              file=sys.stderr)
        return 2
    if ns.profile == "list":
        from ..profiles import describe

        print(describe())
        return 0
    try:  # before --out is created: a usage error leaves nothing behind
        from ..profiles import ProfileError
        from ..profiles import load as load_profile

        ns.profile_ref = load_profile(ns.profile)
    except ProfileError as e:
        print(f"tlfuzz: --profile: {e}", file=sys.stderr)
        return 2
    try:
        ns.impl_ref = _impl_ref(ns)
    except ValueError as e:
        print(f"tlfuzz: {e}", file=sys.stderr)
        return 2
    problem = (None if ns.frontend else check_device(ns.device)) or check_out_dir(ns.out)
    if problem:
        print(f"tlfuzz: {problem}", file=sys.stderr)
        return 2
    keep_hypothesis_under(ns.out)
    if ns.database and ns.database.startswith(("redis://", "rediss://")):
        try:
            import redis  # noqa: F401 - only checked for, hunt.example_database uses it
        except ImportError:
            print("tlfuzz: --database redis://... needs the 'redis' package "
                  "(pip install redis)", file=sys.stderr)
            return 2
    if ns.mutation is not None:
        from .mutations import known

        if ns.mutation not in known():
            print(f"tlfuzz: unknown mutation '{ns.mutation}' (known: "
                  f"{', '.join(known())})", file=sys.stderr)
            return 2
    try:
        return run_campaign(ns)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
