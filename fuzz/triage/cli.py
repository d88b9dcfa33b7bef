"""`tlfuzz triage FINDING`: triage a saved finding against the implementation it was found
with and, for a device-compiler suspect of our lowering, reduce its OpenCL C and write a
stand-alone reproducer next to it.

    tlfuzz triage corpus/findings/mismatch-0123abcd4567 [--device nvidia] [--impl SPEC]
                  [--reduce-time 120]

FINDING is NAME, NAME.tl or NAME.txt of a finding saved by tlfuzz (NAME.tl, NAME.npz, and
NAME.txt whose first line is the `tlfuzz reproduce` command, or the `tlrun` command of older
campaigns): the implementation and its flags come from there (--impl, --device override them).
Writes NAME.triage.txt, and NAME.repro/ for a device-compiler suspect of our lowering. Exit
statuses: EXIT_STATUSES below (`tlfuzz triage --help` lists them).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Optional

from fuzz.campaign.options import positive_seconds

PURPOSE = "Triage a saved finding: rerun it, classify it, reduce a device-compiler suspect."
EXAMPLES = (
    ("tlfuzz triage f/mismatch-0123abcd4567", "against the implementation in NAME.txt"),
    ("tlfuzz triage f/mismatch-0123abcd4567 --device nvidia", "on another device"),
)
EXIT_STATUSES = (
    (0, "flaky: the finding did not reproduce"),
    (1, "the finding is confirmed (any other class)"),
    (2, "an unreadable finding, a device that does not exist, or a bad command line"),
    (3, "an internal error (please report it)"),
    (130, "interrupted (Ctrl-C)"),
)
NOTES = """\
FINDING is NAME, NAME.tl or NAME.txt of a finding saved by tlfuzz: the implementation and its
flags come from the first line of NAME.txt (--impl and --device override them). Writes
NAME.triage.txt, and NAME.repro/ for a device-compiler suspect. See docs/triage.md."""


def build_parser() -> argparse.ArgumentParser:
    from tlinterp.cli.conventions import add_impl_choice, tool_parser
    from tlinterp.impl.flags import add_impl_flags

    p, g = tool_parser("tlfuzz triage", PURPOSE, EXAMPLES, EXIT_STATUSES, notes=NOTES)
    add_impl_choice(g.implementation, default=None,
                    first="the one in NAME.txt (default), opencl (our lowering)",
                    list_impls=False)
    add_impl_flags(g.implementation, names=("device",),
                   help={"device": "OpenCL device of the finding (default: the one in "
                                   "NAME.txt)"})
    g.run.add_argument("finding", help="NAME, NAME.tl or NAME.txt of a saved finding")
    g.run.add_argument("--reduce-time", type=positive_seconds, default=120.0, metavar="S",
                       help="seconds for the OpenCL C reduction (default 120)")
    g.run.add_argument("--mutation", default=None, metavar="NAME",
                       help="self-test: plant a known lowering bug first (see tlfuzz "
                            "--mutation)")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    from tlinterp.lang.diagnostics import TLError

    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    warnings.filterwarnings("ignore")
    from fuzz.triage.clexec import Target
    from fuzz.triage.triage import FLAKY, investigate

    if ns.mutation is not None:
        from fuzz.mutants.lowering_v03 import MUTATIONS
        from fuzz.mutants.registry import apply

        if ns.mutation not in MUTATIONS:
            print(f"tlfuzz triage: unknown mutation '{ns.mutation}' (known: "
                  f"{', '.join(MUTATIONS)})", file=sys.stderr)
            return 2
        apply(ns.mutation)
    from fuzz.triage.reproduce import DeviceError, UsageError, finding_base, load_case, request

    overrides = [w for flag, v in (("--device", ns.device), ("--impl", ns.impl)) if v
                 for w in (flag, v)]
    try:
        req = request([ns.finding, *overrides])
        case = load_case(req.tl, req.npz, req.func, req.groups, req.lang)
    except DeviceError as e:  # the finding is fine; the device runs nothing
        print(f"tlfuzz triage: {e}", file=sys.stderr)
        return 2
    except (UsageError, OSError, ValueError, KeyError, IndexError) as e:
        print(f"tlfuzz triage: cannot read the finding {ns.finding}: {e}", file=sys.stderr)
        return 2
    except TLError as e:
        print(f"tlfuzz triage: the finding {ns.finding} does not load:\n{e}", file=sys.stderr)
        return 2
    from fuzz.campaign.options import check_device
    from tlinterp.impl import SpecError, resolve

    try:
        impl = resolve(req.spec, req.options)  # opencl:DEVICE names the device
    except SpecError as e:
        print(f"tlfuzz triage: --impl: {e}", file=sys.stderr)
        return 2
    ours = impl.spec == "opencl"
    device = impl.options.device or "pocl"
    problem = check_device(device)  # else every rerun fails and it looks flaky
    if problem:
        print(f"tlfuzz triage: {problem}", file=sys.stderr)
        return 2
    from fuzz.campaign.options import chosen_device

    print(f"tlfuzz triage: device {chosen_device(device)}", file=sys.stderr)
    base = finding_base(ns.finding)
    t0 = time.time()

    def progress(what: str) -> None:
        print(f"[{time.time() - t0:6.1f} s] {what}", file=sys.stderr, flush=True)

    try:
        if ours:
            from tlgpu.lowering.config import LoweringConfig

            config = LoweringConfig.from_overrides(list(req.options.lowering))
            result = investigate(case, config, Target(device), base, ns.reduce_time, progress)
        else:
            from fuzz.triage.impl import investigate_impl

            result = investigate_impl(case, req.spec, req.options, base, ns.reduce_time,
                                      progress)
            if req.spec.startswith(("opencl-c:", "spirv:")) and result.verdict != FLAKY:
                _vendor_report(base, progress)
    except KeyboardInterrupt:
        return 130
    except TLError as e:
        print(f"tlfuzz triage: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a bug of ours: exit 3 as documented, no traceback
        print(f"tlfuzz triage: internal error (please report): {type(e).__name__}: {e}",
              file=sys.stderr)
        return 3
    print(open(base + ".triage.txt").read(), end="")
    return 0 if result.verdict == FLAKY else 1


def _vendor_report(base: str, progress) -> None:
    """A new finding of an external compiler gets its stand-alone report (tlfuzz report)
    in BASE.report/; a finding that cannot have one says why and the triage goes on."""
    from tlinterp.lang.diagnostics import TLError

    from .vendor_report import ReportError, report_finding

    try:
        progress(f"vendor report: {report_finding(base, base + '.report')}")
    except (ReportError, OSError, TLError, KeyError, ValueError) as e:
        progress(f"no vendor report: {e}")


if __name__ == "__main__":
    sys.exit(main())
