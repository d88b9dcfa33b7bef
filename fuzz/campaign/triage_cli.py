"""`tlfuzz triage FINDING`: triage a saved finding against the implementation it was found
with and, for a device-compiler suspect of our lowering, reduce its OpenCL C and write a
stand-alone reproducer next to it.

    tlfuzz triage corpus/findings/mismatch-0123abcd4567 [--device nvidia] [--impl SPEC]
                  [--reduce-time 120]

FINDING is NAME, NAME.tl or NAME.txt of a finding saved by tlfuzz (NAME.tl, NAME.npz, and
NAME.txt whose first line is the `tlfuzz reproduce` command, or the `tlrun` command of older
campaigns): the implementation and its flags come from there (--impl, --device override them).
Writes NAME.triage.txt, and NAME.repro/ for a device-compiler suspect of our lowering. Exit
status: 0 flaky (it did not reproduce), 1 the finding is confirmed (any other class), 2
unreadable finding or bad command line, 3 internal error, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Optional

from .options import positive_seconds


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tlfuzz triage", description=__doc__.split("\n\n")[0])
    p.add_argument("finding", help="NAME, NAME.tl or NAME.txt of a saved finding")
    p.add_argument("--device", help="device of the finding (default: the one in NAME.txt)")
    p.add_argument("--impl", metavar="SPEC",
                   help="implementation to triage against (default: the one in NAME.txt; "
                        "opencl: our lowering)")
    p.add_argument("--reduce-time", type=positive_seconds, default=120.0,
                   help="seconds for the OpenCL C reduction (default 120)")
    p.add_argument("--mutation", default=None,
                   help="self-test: plant a known lowering bug first (see tlfuzz --mutation)")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    from tlinterp.diagnostics import TLError

    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    warnings.filterwarnings("ignore")
    from .clexec import Target
    from .triage import FLAKY, investigate

    if ns.mutation is not None:
        from .mutations import MUTATIONS, apply

        if ns.mutation not in MUTATIONS:
            print(f"tlfuzz triage: unknown mutation '{ns.mutation}' (known: "
                  f"{', '.join(MUTATIONS)})", file=sys.stderr)
            return 2
        apply(ns.mutation)
    from .reproduce import UsageError, finding_base, load_case, request

    overrides = [w for flag, v in (("--device", ns.device), ("--impl", ns.impl)) if v
                 for w in (flag, v)]
    try:
        req = request([ns.finding, *overrides])
        case = load_case(req.tl, req.npz, req.func, req.groups)
    except (UsageError, OSError, ValueError, KeyError, IndexError) as e:
        print(f"tlfuzz triage: cannot read the finding {ns.finding}: {e}", file=sys.stderr)
        return 2
    except TLError as e:
        print(f"tlfuzz triage: the finding {ns.finding} does not load:\n{e}", file=sys.stderr)
        return 2
    from tlinterp.impl import SpecError, resolve

    from .options import check_device

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
    from .options import chosen_device

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
            from .triage_impl import investigate_impl

            result = investigate_impl(case, req.spec, req.options, base, ns.reduce_time,
                                      progress)
    except KeyboardInterrupt:
        return 130
    except TLError as e:
        print(f"tlfuzz triage: {e}", file=sys.stderr)
        return 2
    print(open(base + ".triage.txt").read(), end="")
    return 0 if result.verdict == FLAKY else 1


if __name__ == "__main__":
    sys.exit(main())
