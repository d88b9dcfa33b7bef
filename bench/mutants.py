"""Mutation bench: how many realistic implementation bugs does a short fuzzing campaign find?

    python bench/mutants.py [--lang v0.3|v0.4] [--target opencl|plugin] [--time 60] [--seed 0]
                            [--device pocl]
                            [--jobs 1] [--only NAME ...] [--shrink-time 10] [--list]
                            [--min-kill-rate R]

--lang v0.3 (the default): for every mutant of fuzz/mutants/lowering_v03.py (one planted
single-change bug each in our OpenCL lowering), run a fixed-seed campaign of at most --time
seconds against the mutated OpenCL side, exactly as `tlfuzz --mutation NAME --seed S --jobs 1`
would search, and stop at the first finding.

--lang v0.4 --target opencl: for every mutant of fuzz/mutants/lowering_v04.py (one planted
bug each in our v0.4 OpenCL lowering), the same fixed-seed campaign as
`tlfuzz --lang v0.4 --mutation NAME --seed S --jobs 1` on --device (pocl by default: its
sub-groups are the lowering's local-memory emulation; `--device intel` runs the kernels that
emulation refuses too).

--lang v0.4 (--target plugin, the default for v0.4): for every mutant of
fuzz/mutants/interp_v04.py (the reference interpreter as a
`python:` plug-in with one rule changed), the same fixed-seed campaign as
`tlfuzz --lang v0.4 --impl python:fuzz.mutants.interp_v04:NAME --seed S --jobs 1`
(--device is not used: the plug-in runs on the CPU).

A mutant is killed when the campaign reports a finding AND the mutant actually changed
something (rewrote the generated code, took its wrong branch); a mutant that never applied is
"not applicable" and counts as not killed. A finding counts only when the unmutated side (our
OpenCL lowering; the unmutated plug-in `python:fuzz.mutants.interp_v04:reference`) passes
the same batch: a device bug that the campaign happens to meet is no kill (the table's "false"
column counts those, the search goes on). Prints a table (mutant, category, verdict,
time-to-kill, shrunk size), the kill rate and the median time-to-kill. Exit status 0; 1 when
--min-kill-rate is given and not reached; 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Optional

ROUNDS = 50  # batches per seeded search, as tlfuzz --rounds (its default)
LANGS = ("v0.3", "v0.4")
# what a mutant plants its bug in: our OpenCL lowering, or the interpreter as a python: plug-in
TARGETS = ("opencl", "plugin")


@dataclass
class Result:
    name: str
    category: str
    verdict: str  # killed | survived | not applicable
    seconds: Optional[float]  # time to the first finding
    size: Optional[int]  # instructions of the shrunk function
    kind: str = ""
    cases: int = 0  # kernels run before the first finding (or the time limit)
    false: int = 0  # batches whose findings the unmutated side shows too (device bugs)


def default_target(lang: str) -> str:
    return "plugin" if lang == "v0.4" else "opencl"


def mutants(lang: str, target: Optional[str] = None) -> dict:
    """The mutants of one language version and target: name -> their Mutation."""
    target = target or default_target(lang)
    if lang == "v0.4" and target == "plugin":
        from fuzz.mutants.interp_v04 import MUTATIONS
    elif lang == "v0.4":
        from fuzz.mutants.lowering_v04 import MUTATIONS
    else:
        from fuzz.mutants.lowering_v03 import MUTATIONS
    return MUTATIONS


def run_one(name: str, seconds: float, seed: int, device: str, shrink: float,
            lang: str = "v0.3", target: Optional[str] = None) -> Result:
    """One fixed-seed campaign against the mutant `name` of `lang`'s set for `target`."""
    warnings.filterwarnings("ignore")
    from fuzz.campaign.cli import round_seed
    from fuzz.campaign.hunt import HuntOptions, hunt
    from fuzz.campaign.sandbox import Sandbox
    from tlinterp.lang import ir

    target = target or default_target(lang)
    m = mutants(lang, target)[name]
    kinds = frozenset({"mismatch", "backend-error", "backend-crash", "red-zone"})
    if target == "plugin":
        from fuzz.mutants.interp_v04 import REFERENCE, plugin_spec
        from tlinterp.impl.base import DEFAULT_OPTIONS

        # the mutant is a plug-in: no device, no lowering mutation; the clean side is the
        # same plug-in without a mutant
        opts = HuntOptions(device=None, shrink_time=shrink, kinds=kinds,
                           impl=(plugin_spec(name), DEFAULT_OPTIONS), params={"lang": lang})
        clean_impl = (plugin_spec(REFERENCE), DEFAULT_OPTIONS)
        device = None
    else:  # a bug planted in our lowering; the clean side is the unmutated lowering
        opts = HuntOptions(device=device, shrink_time=shrink, mutation=name, kinds=kinds,
                           params={"lang": lang} if lang != "v0.3" else {})
        clean_impl = None
    first: list[float] = []
    cases = [0]
    false = [0]

    def progress(n: int, cov: set) -> None:
        if not first:
            cases[0] += n

    class Timed(Sandbox):
        def run(self, cases, config=None):
            found = super().run(cases, config)
            seen = time.time()  # the campaign's moment; the clean rerun below is the bench's
            if opts.kinds is not None:
                found = [f for f in found if f.kind in opts.kinds]
            if found and any(f.kind in opts.kinds for f in clean.run(cases, config)):
                false[0] += 1  # not the mutant's doing
                return []
            if found and not first:
                first.append(seen)
            return found

    start = time.time()
    deadline = start + seconds
    findings: list = []
    with Timed(device, opts.timeout, opts.mutation, opts.impl) as box, \
            Sandbox(device, opts.timeout, impl=clean_impl) as clean:
        k = 0
        while not findings and time.time() < deadline:
            findings = hunt(opts, round_seed(seed, 0, k), ROUNDS, progress, stop_at=deadline,
                            sandbox=box)
            k += 1
        hits = box.mutation_hits
    # a finding the unmutated side does not share (`first`) is the mutant's doing even when
    # it crashed the child, whose count of applications died with it
    if not hits and not first:
        return Result(name, m.category, "not applicable", None, None, cases=cases[0],
                      false=false[0])
    if not findings or not first or first[0] - start > seconds:  # a batch may end late
        return Result(name, m.category, "survived", None, None, cases=cases[0],
                      false=false[0])
    f = findings[0]
    size = len(list(ir.walk(f.case.program.functions[0].body))) \
        if f.case.program.functions else None
    return Result(name, m.category, "killed", first[0] - start, size, f.kind, cases[0],
                  false[0])


def _star(args) -> Result:
    return run_one(*args)


def table(results: list[Result], title: str):
    from rich.table import Table

    t = Table(title=title)
    for c in ("mutant", "category", "killed?", "time-to-kill", "cases", "shrunk size",
              "finding", "false"):
        t.add_column(c)
    for r in results:
        t.add_row(r.name, r.category,
                  {"killed": "yes", "survived": "NO", "not applicable": "n/a"}[r.verdict],
                  f"{r.seconds:.1f} s" if r.seconds is not None else "-", str(r.cases),
                  str(r.size) if r.size is not None else "-", r.kind, str(r.false))
    return t


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lang", choices=LANGS, default=None,
                   help="v0.3: bugs planted in our OpenCL lowering (default); v0.4: in the "
                        "interpreter as a python: plug-in, or in our v0.4 lowering with "
                        "--target opencl")
    p.add_argument("--target", choices=TARGETS, default=None,
                   help="what the v0.4 mutants change: our OpenCL lowering (opencl) or the "
                        "interpreter as a python: plug-in (plugin, the default for v0.4); "
                        "v0.3 has opencl only")
    p.add_argument("--time", type=float, default=60.0, help="seconds per mutant (default 60)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="pocl")
    p.add_argument("--jobs", type=int, default=1, help="mutants run in parallel")
    p.add_argument("--shrink-time", type=float, default=10.0)
    p.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants only")
    p.add_argument("--list", action="store_true",
                   help="list the mutants of every set (or of --lang/--target when given) "
                        "and exit")
    p.add_argument("--min-kill-rate", type=float, default=None,
                   help="exit 1 when the kill rate (0..1) is below this")
    ns = p.parse_args(argv)
    if ns.target == "plugin" and ns.lang != "v0.4":
        print("mutants.py: --target plugin needs --lang v0.4 (the v0.3 mutants are planted in "
              "our OpenCL lowering)", file=sys.stderr)
        return 2
    if ns.list:
        sets = [(lang, t) for lang in LANGS for t in TARGETS
                if (lang, t) != ("v0.3", "plugin")]
        for lang, t in sets:
            if (ns.lang or lang) != lang or (ns.target or t) != t:
                continue
            for m in mutants(lang, t).values():
                print(f"{lang:5} {t:6} {m.name:27} {m.category:11} {m.doc}")
        return 0
    ns.lang = ns.lang or "v0.3"
    ns.target = ns.target or default_target(ns.lang)
    known = mutants(ns.lang, ns.target)
    names = ns.only or list(known)
    unknown = [n for n in names if n not in known]
    if unknown or ns.jobs < 1 or ns.time <= 0:
        print(f"mutants.py: unknown {ns.lang} mutants {unknown} (see --list)" if unknown
              else "mutants.py: --jobs and --time must be positive", file=sys.stderr)
        return 2
    from rich.console import Console

    console = Console()
    work = [(n, ns.time, ns.seed, ns.device, ns.shrink_time, ns.lang, ns.target)
            for n in names]
    start = time.time()
    results: list[Result] = []
    try:
        if ns.jobs == 1:
            for w in work:
                results.append(run_one(*w))
                r = results[-1]
                console.print(f"{r.name}: {r.verdict}"
                              + (f" in {r.seconds:.1f} s" if r.seconds is not None else ""))
        else:
            # not multiprocessing.Pool: its daemonic workers cannot start the sandboxes
            with ProcessPoolExecutor(ns.jobs, mp_context=mp.get_context("spawn")) as pool:
                for r in pool.map(_star, work):
                    results.append(r)
                    console.print(f"{r.name}: {r.verdict}")
    except KeyboardInterrupt:
        console.print("interrupted: partial results")
    killed = [r for r in results if r.verdict == "killed"]
    side = ns.device if ns.target == "opencl" else "v0.4 interpreter plug-in"
    console.print(table(results, f"mutation bench ({ns.lang}): {side}, seed {ns.seed}, "
                                 f"{ns.time:.0f} s per mutant, {ns.jobs} job(s)"))
    rate = len(killed) / max(len(results), 1)
    med = statistics.median(r.seconds for r in killed) if killed else float("nan")
    console.print(f"killed {len(killed)}/{len(results)} = {100 * rate:.1f} %, median "
                  f"time-to-kill {med:.1f} s, wall {time.time() - start:.0f} s")
    if ns.min_kill_rate is not None and rate < ns.min_kill_rate:
        return 1
    return 0


if __name__ == "__main__":
    # as a script, bench/ comes first on the path and its fuzz.py would shadow the package
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
