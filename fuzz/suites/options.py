"""The command line of the suite modes (fuzz/suites/suite.py): `tlfuzz --passes` and
`tlfuzz --compare-levels`, their options and the suite they ask for."""

from __future__ import annotations

import argparse
from typing import Optional

from fuzz.suites.suite import Suite

__all__ = ["add_suite_options", "suite_of", "variant_words"]


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
        from fuzz.suites.passes import PassSuite

        if not ns.pass_tool:
            raise ValueError("--passes needs --pass-tool PATH (the optimiser, e.g. "
                             "tinytc-opt)")
        return PassSuite.from_tool(ns.pass_tool, ns.passes, ns.pass_flags, options,
                                   ns.run_timeout)
    if ns.compare_levels is not None:
        from fuzz.suites.levels import LevelSuite

        return LevelSuite.make(ns.compare_levels, ns.variants or ["-O0", "-O2"], options,
                               ns.run_timeout, ns.level_tolerance)
    return None
