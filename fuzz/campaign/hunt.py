"""Hypothesis-driven search: draw batches, run them differentially, shrink what fails.

`hunt(...)` runs one seeded Hypothesis search of `max_batches` batches and returns the findings
of the shrunk failing batch (empty when nothing failed). Shrinking re-runs both backends; it
stops after `shrink_time` seconds and keeps the smallest failing batch found so far. The
example database (a directory, or Redis shared with other machines: sharedb) makes known
failures replay first in later searches.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
import time
import unittest
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import core as hcore
from hypothesis import seed as hseed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.internal.conjecture import engine

from fuzz.campaign.frontdiff import OtherFrontEnd, disagreement, ours
from fuzz.campaign.frontend import frontend_problem, lang_of, mutants
from fuzz.campaign.harness import Finding
from fuzz.campaign.rejections import drop_known
from fuzz.campaign.sandbox import Sandbox
from fuzz.campaign.sharedb import example_database
from fuzz.strategies import FuzzCase, coverage_of, kernels, lowering_configs

__all__ = ["HuntOptions", "hunt", "batches", "example_database"]


@st.composite
def batches(draw, size: int, **params) -> list[FuzzCase]:
    """1..size cases with distinct function names; full batches half of the time (speed),
    shrinking towards a single case."""
    n = size if not draw(st.booleans()) else draw(st.integers(1, size))
    return [draw(kernels(name=f"k{i}", **params)) for i in range(n)]


@dataclass
class HuntOptions:
    device: Optional[str] = "pocl"
    batch: int = 8
    shrink_time: float = 60.0
    frontend: bool = False
    database: Optional[str] = None  # example database: directory or redis:// URL (sharedb)
    inflight: Optional[str] = None  # file holding the batch being run (crash forensics)
    params: dict = field(default_factory=dict)  # GenParams overrides
    random_configs: bool = True
    mutation: Optional[str] = None  # fuzz.mutants.lowering_v03 bug to plant in the OpenCL side
    timeout: float = 120.0  # per batch, before the OpenCL side counts as hung
    kinds: Optional[frozenset] = None  # only these finding kinds count (None: all)
    impl: Optional[tuple] = None  # (spec, ImplOptions): test this instead of our lowering
    # (or a suite of several runs per kernel: fuzz/suites/suite.py)
    triage_time: float = 120.0  # reduction budget of a device-compiler suspect (0: no triage)
    out: Optional[str] = None  # the findings directory (rejected constructs known there)
    against: Optional[str] = None  # frontend: another front end's command 'TOOL {tl}'
    # (fuzz/campaign/frontdiff.py): each text goes to both, every disagreement is a finding


class _Found(AssertionError):
    pass


class _OutOfTime(BaseException):
    """Ends a search at once: Hypothesis lets exceptions that are no Exception through
    without treating them as a failure to shrink."""


def hunt(opts: HuntOptions, seed: int, max_batches: int,
         progress: Optional[Callable[[int, set], None]] = None,
         stop_at: Optional[float] = None, replay_only: bool = False,
         sandbox: Optional[Sandbox] = None) -> list[Finding]:
    """One seeded search; the shrunk findings (see the module docstring). The OpenCL side
    runs in `sandbox` (a new one when None, closed at the end)."""
    own = sandbox is None
    if own and not opts.frontend:
        sandbox = Sandbox(opts.device, opts.timeout, opts.mutation, opts.impl)
    try:
        return _hunt(opts, seed, max_batches, progress, stop_at, replay_only, sandbox)
    finally:
        if own and sandbox is not None:
            sandbox.close()


def _hunt(opts, seed, max_batches, progress, stop_at, replay_only, sandbox) -> list[Finding]:
    state: dict = {"first": None, "failing": {}, "last": []}
    # a shared Redis database is mirrored in the findings directory, which goes on alone when
    # the server goes away (sharedb)
    db = example_database(opts.database, opts.out and os.path.join(opts.out, "hypothesis-db")) \
        if opts.database else None
    # known failures replay once (replay_only, at campaign start); exploring searches only
    # add to the database, or every round would stop at the same old failure
    phases = [Phase.reuse, Phase.shrink] if replay_only else [Phase.generate, Phase.shrink]

    def check(key, run: Callable[[], list[Finding]]) -> None:
        now = time.time()
        if stop_at is not None and now > stop_at:
            # out of time, also while shrinking (--time includes it): the search ends now,
            # with the smallest failure found so far, instead of drawing its remaining
            # examples (each costs a generated kernel)
            raise _OutOfTime
        if state["first"] is not None and now > state["first"] + opts.shrink_time:
            if key in state["failing"]:  # keep replays of known failures deterministic
                state["last"] = state["failing"][key]
                raise _Found(str(state["last"][0]))
            return
        findings = run()
        if opts.kinds is not None:
            findings = [f for f in findings if f.kind in opts.kinds]
        # a construct the target is known to reject is counted, not searched for again
        findings = drop_known(findings, opts.out, count_them=state["first"] is None)
        if findings:
            state["first"] = state["first"] or time.time()
            state["failing"][key] = findings
            state["last"] = findings
            raise _Found(str(findings[0]))

    if opts.frontend:
        # against another front end the generated programs themselves count too (0 edits)
        strategy = mutants(min_edits=0 if opts.against else 1, **opts.params)
        other = OtherFrontEnd(opts.against) if opts.against else None

        def body(item):
            text, case = item

            def run():
                lang = lang_of(case)
                mutant = dataclasses.replace(case, program=_text_program(text, lang))
                if other is not None:  # both front ends judge it; nothing runs
                    we = ours(text, lang)
                    problem = we.first if we.verdict == "crashed" else None
                    found = None if problem else disagreement(mutant, text, lang, other, we)
                else:
                    problem = frontend_problem(text, case.args, case.groups, lang=lang)
                    found = None
                if progress:
                    progress(1, coverage_of(case.program))
                if problem is not None:
                    return [Finding(mutant, "frontend", problem)]
                return [found] if found is not None else []

            check(text, run)
    else:
        # lowering configurations only mean something to our own lowering
        configs = lowering_configs() if opts.random_configs and opts.impl is None \
            else st.none()
        strategy = st.tuples(batches(opts.batch, **opts.params), configs)

        def body(item):
            cases, config = item

            def run():
                if opts.inflight:
                    with open(opts.inflight, "wb") as f:
                        pickle.dump((cases, config), f)
                found = sandbox.run(cases, config)
                # the campaign's end may cut a batch short (a stand-in may not count)
                ran = cases[:getattr(sandbox, "completed", len(cases))]
                if progress and ran:
                    cov: set = set()
                    for c in ran:
                        cov |= coverage_of(c.program)
                    progress(len(ran), cov)
                return found

            check((tuple(c.source for c in cases), repr(config)), run)

    @settings(max_examples=max_batches, deadline=None, database=db, phases=phases,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              print_blob=False, verbosity=Verbosity.quiet, derandomize=False)
    @given(strategy)
    def search(item):
        body(item)

    # Hypothesis does not write its example database for tests with an explicit @seed, so
    # determinism comes from seeding the random source it uses otherwise (internal API;
    # falls back to @seed, losing the database, if it ever changes)
    local = getattr(hcore, "threadlocal", None)
    if local is not None and hasattr(local, "_hypothesis_global_random"):
        local._hypothesis_global_random = random.Random(seed)
    else:
        search = hseed(seed)(search)
    saved = engine.MAX_SHRINKING_SECONDS
    shrink = opts.shrink_time if stop_at is None else min(opts.shrink_time,
                                                          stop_at - time.time())
    engine.MAX_SHRINKING_SECONDS = max(1, int(shrink))  # Hypothesis' own cap
    try:
        search()
    except (_Found, HypothesisException, _OutOfTime):
        pass
    except unittest.SkipTest:  # a replay of an empty database: nothing to run, no failure
        pass
    finally:
        engine.MAX_SHRINKING_SECONDS = saved
    return state["last"]


def _text_program(text: str, lang: str = "v0.3"):
    """A Program object carrying a mutant's text (it may not parse)."""
    from tlinterp.lang import ir

    return ir.Program((), "<mutant>", text, lang=lang)
