"""Campaign modes that run several implementations on each generated kernel: a suite.

`tlfuzz --passes` (fuzz/suites/passes.py) runs every pass of an IR optimiser and the
pipelines its compiler uses; `tlfuzz --compare-levels` (fuzz/suites/levels.py) runs one
compiler at several optimisation levels or flag sets. A suite takes the place of the
implementation under test in the campaign's sandbox (`harness.differential` hands it the
batch); its findings are `SuiteFinding`s, saved once per key (what ran and what kind of
failure: `pass-mismatch-constant-propagation-...`), later cases with the same key only
counted (fuzz/campaign/rejections.py), so one fact does not drown the campaign.
"""

from __future__ import annotations

import abc
import shlex
import time
from dataclasses import dataclass
from typing import Optional

from fuzz.campaign.findings import Finding, reproduce_command
from fuzz.campaign.harness import run_limit
from fuzz.campaign.rejections import Keyed
from fuzz.strategies import FuzzCase
from tlinterp.impl import Job

__all__ = ["Suite", "SuiteFinding", "job_of"]


@dataclass
class SuiteFinding(Keyed):
    """A suite's finding, keyed by `construct` ("PASS: KIND", "-O0 vs -O2: outputs differ").
    `command`: the first line of its NAME.txt when no `tlfuzz reproduce` line reruns it (an
    analysis pass's own command line, with {tl} for the saved kernel)."""

    command: str = ""

    def header(self, base: str) -> str:
        if self.command:
            return self.command.replace("{tl}", shlex.quote(base + ".tl"))
        return reproduce_command(base + ".tl", base + ".npz", self)


def job_of(case: FuzzCase) -> Job:
    """The implementation job of a generated case."""
    return Job(case.source, case.args, func=case.func, groups=case.groups,
               filename=f"{case.func}.tl", program=case.program, lang=case.lang)


class Suite(abc.ABC):
    """Several runs per kernel; subclasses say which (`check_case`). Built in the campaign's
    process, it travels (pickled) to the sandbox's child, where `differential` runs."""

    name = "suite"
    timeout = 20.0  # seconds per run of one tool on one kernel
    on_a_device: Optional[str] = None  # an implementation spec that runs on --device

    def runs_per_case(self) -> int:
        return 1

    def batch_bound(self, cases: int) -> float:
        """How long the sandbox waits for a batch of `cases` before it counts as hung."""
        return cases * self.runs_per_case() * (self.timeout + 5) + 30

    def differential(self, cases: list[FuzzCase], deadline: Optional[float] = None,
                     done: Optional[list] = None) -> list[Finding]:
        """Every case through check_case; a case the campaign's end (`deadline`,
        time.time()) cuts short ends the batch without a finding (`done[0]`: cases run)."""
        from fuzz.campaign.harness import _interp

        findings: list[Finding] = []
        if done is not None:
            done[:] = [0]
        for case in cases:
            limit, cut = run_limit(self.timeout, deadline)
            if limit <= 0:
                break
            expected, problem = _interp(case)
            found = self.check_case(case, expected, problem, limit)
            if found is None or (cut and time.time() >= deadline):
                break  # the campaign's end, not the tool's fault
            if done is not None:
                done[0] += 1
            findings += found
        return findings

    @abc.abstractmethod
    def check_case(self, case: FuzzCase, expected: Optional[dict],
                   problem: Optional[Finding], limit: float) -> Optional[list[Finding]]:
        """The findings of one case (`expected`: the interpreter's outputs, or None with
        the `problem` why it has none); None when a run was cut short."""
