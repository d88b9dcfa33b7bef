"""Campaign modes that run several implementations on each generated kernel: a suite.

`tlfuzz --passes` (fuzz/campaign/passes.py) runs every pass of an IR optimiser and the
pipelines its compiler uses; `tlfuzz --compare-levels` (fuzz/campaign/levels.py) runs one
compiler at several optimisation levels or flag sets. A suite takes the place of the
implementation under test in the campaign's sandbox (`harness.differential` hands it the
batch); its findings are `SuiteFinding`s, saved once per key (what ran and what kind of
failure: `pass-mismatch-constant-propagation-...`), later cases with the same key only
counted (fuzz/campaign/rejections.py), so one fact does not drown the campaign.
"""

from __future__ import annotations

import argparse
import shlex
import time
from dataclasses import dataclass
from typing import Optional

from fuzz.campaign.findings import Finding, reproduce_command
from fuzz.campaign.rejections import Keyed
from fuzz.strategies import FuzzCase
from tlinterp.impl import Job

__all__ = ["Suite", "SuiteFinding", "add_suite_options", "suite_of", "job_of",
           "variant_words"]


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


class Suite:
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
            limit, cut = self.timeout, False
            if deadline is not None:
                left = deadline - time.time()
                if left <= 0:
                    break
                if left < limit:
                    limit, cut = left, True
            expected, problem = _interp(case)
            found = self.check_case(case, expected, problem, limit)
            if found is None or (cut and time.time() >= deadline):
                break  # the campaign's end, not the tool's fault
            if done is not None:
                done[0] += 1
            findings += found
        return findings

    def check_case(self, case: FuzzCase, expected: Optional[dict],
                   problem: Optional[Finding], limit: float) -> Optional[list[Finding]]:
        """The findings of one case (`expected`: the interpreter's outputs, or None with
        the `problem` why it has none); None when a run was cut short."""
        raise NotImplementedError


def add_suite_options(group) -> None:
    """The options of both suite modes (a group of tlfuzz's parser)."""
    from tlinterp.impl.flags import positive_seconds

    group.add_argument("--passes", default=None, metavar="all|P1,P2,...",
                       help="pass-validation mode (with --pass-tool): every pass alone "
                            "and the pipelines the compiler runs, each output read back, "
                            "checked and run on the interpreter (docs/fuzzing.md)")
    group.add_argument("--pass-tool", default=None, metavar="PATH",
                       help="--passes: the IR optimiser, invoked as 'PATH [--pass-flags] "
                            "-p PASS ... FILE' (tinytc-opt)")
    group.add_argument("--pass-flags", default="", metavar="'FLAGS'",
                       help="--passes: flags before the passes, e.g. '-d pvc'")
    group.add_argument("--compare-levels", default=None, metavar="'SPEC {flags}'",
                       help="level-comparison mode: the implementation SPEC (with {flags}) "
                            "once per --variants entry; a difference between variants is a "
                            "finding, also where the interpreter cannot run the kernel")
    group.add_argument("--variants", "--variant", dest="variants", action="append",
                       default=None, metavar="'FLAGS'",
                       help="--compare-levels: the flag sets, `--variants -O0 -O2 '-O2 -f "
                            "unsafe-fp-math'` (the words up to the next --option; also "
                            "repeatable as --variant=FLAGS); default -O0 -O2; a variant with "
                            "'unsafe' in it is compared within --level-tolerance")
    group.add_argument("--level-tolerance", type=positive_seconds, default=1e-3,
                       metavar="R", help="--compare-levels: relative tolerance of float "
                       "outputs for unsafe-math variants (default 1e-3)")
    group.add_argument("--run-timeout", type=positive_seconds, default=Suite.timeout,
                       metavar="S", help="--passes/--compare-levels: seconds per run of "
                       f"one tool on one kernel (default {Suite.timeout:g}); longer is a hang")


def variant_words(argv: list[str]) -> list[str]:
    """argv with `--variants A B ...` as `--variant=A --variant=B ...`: flag sets start
    with '-', which argparse would take for options of tlfuzz."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--variants":
            i += 1
            while i < len(argv) and not argv[i].startswith("--"):
                out.append(f"--variant={argv[i]}")
                i += 1
            continue
        out.append(argv[i])
        i += 1
    return out


def suite_of(ns: argparse.Namespace, options) -> Optional[Suite]:
    """The suite the command line asks for (None: neither mode); ValueError with the
    message of a usage error."""
    if ns.passes is None and ns.pass_tool is not None:
        raise ValueError("--pass-tool needs --passes")
    if ns.compare_levels is None and ns.variants is not None:
        raise ValueError("--variants needs --compare-levels")
    if ns.passes is not None and ns.compare_levels is not None:
        raise ValueError("--passes and --compare-levels are two modes: choose one")
    if (ns.passes is not None or ns.compare_levels is not None) and ns.impl is not None:
        raise ValueError("--impl has no part in --passes or --compare-levels (they name "
                         "what runs)")
    if ns.passes is not None:
        from fuzz.campaign.passes import PassSuite

        if not ns.pass_tool:
            raise ValueError("--passes needs --pass-tool PATH (the optimiser, e.g. "
                             "tinytc-opt)")
        return PassSuite.from_tool(ns.pass_tool, ns.passes, ns.pass_flags, options,
                                   ns.run_timeout)
    if ns.compare_levels is not None:
        from fuzz.campaign.levels import LevelSuite

        return LevelSuite.make(ns.compare_levels, ns.variants or ["-O0", "-O2"], options,
                               ns.run_timeout, ns.level_tolerance)
    return None
