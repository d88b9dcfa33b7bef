"""The implementation flags, declared once for `tlrun`, `tlconform` and `tlfuzz`.

    add_impl_flags(parser)                 # --device --lowering --work-group-size
                                           # --build-options --reject-status
    options = impl_options(parser.parse_args(), tune=...)

Values are checked while the command line is parsed, so a bad one is a usage error (exit
status 2, argparse's message naming the flag) in every tool alike. `option_words` in base.py
renders an `ImplOptions` back into these flags for reproduce lines."""

from __future__ import annotations

import argparse
import math
from typing import Optional

from tlinterp.impl.base import ImplOptions, SpecError, parse_work_group_size

__all__ = ["FLAGS", "add_impl_flags", "impl_options", "lowering_needs_opencl", "whole_number",
           "parse_reject_status", "positive_seconds"]

# dest names, in the order the flags are declared; a tool may take a subset (tlfuzz triage)
FLAGS = ("device", "lowering", "work_group_size", "build_options", "reject_status",
         "roundtrip_check")

_HELP = {
    "device": "OpenCL device: pocl, nvidia, oclgrind, intel (the intel extra), PLATFORM:DEVICE "
              "(a substring match), any of these @VERSION (pocl@3.1); of several matches the "
              "first that builds a one-line kernel here: the pyopencl wheel's pocl, then the "
              "newest (tlrun --list-devices, docs/devices.md)",
    "lowering": "opencl: override a lowering decision (repeatable; `tlrun --help` lists the "
                "keys)",
    "work_group_size": "opencl-c/spirv: work-group size of kernels without "
                       "reqd_work_group_size whose function has no work_group_size attribute",
    "build_options": "opencl-c/spirv: extra OpenCL build options, one quoted word, e.g. "
                     "'-cl-std=CL2.0 -cl-mad-enable' (a single option: "
                     "--build-options=-cl-mad-enable)",
    "reject_status": "external compilers: the exit statuses that mean 'invalid program' "
                     "(default 2; tinytc, gcc and clang: 1); a status other than 2 counts "
                     "only with a FILE:LINE.COL-COL: message diagnostic",
    "roundtrip_check": "ir: a checker that must accept what the pass wrote, e.g. "
                       "'tinytc-opt -p check-ir {tl}' (exit 0: accepted); a refusal, like "
                       "one by our front end, is a round-trip failure",
}


def parse_reject_status(text: str) -> tuple[int, ...]:
    """argparse type of --reject-status: `N[,N...]`, each 1-255 (0 is success, and a shell
    reports a signal as 128+N, which is still a number a compiler could exit with)."""
    words = [w.strip() for w in text.split(",")]
    statuses: list[int] = []
    for w in words:
        if not w.isdigit():
            raise argparse.ArgumentTypeError(
                f"expects exit statuses 1-255 separated by commas (e.g. 1 or 1,2), got '{text}'")
        n = int(w)
        if n == 0:
            raise argparse.ArgumentTypeError("0 means success, it cannot mean 'rejected'")
        if n > 255:
            raise argparse.ArgumentTypeError(f"{n} is no exit status (they are 1-255)")
        if n not in statuses:
            statuses.append(n)
    return tuple(statuses)


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (rejects nan, inf, 0 and negatives)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a finite number of seconds > 0")
    return value


def whole_number(minimum: int):
    """argparse type: a whole number >= `minimum`; argparse's message names the flag
    ("argument --jobs: must be a whole number >= 1, got '0'")."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got '{text}'")
        return value
    parse.__name__ = f"whole number >= {minimum}"  # what argparse calls the type
    return parse


def _work_group_size(text: str) -> str:
    """argparse type of --work-group-size: kept as written (ImplOptions holds the text)."""
    try:
        parse_work_group_size(text)
    except SpecError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--work-group-size ")) from None
    return text


def _build_options(text: str) -> str:
    # the options reach clBuildProgram as one C string: a line break would end the build
    # log's echo of them mid-way and is never meant
    if "\n" in text or "\r" in text:
        raise argparse.ArgumentTypeError("must be one line of OpenCL build options")
    return text.strip()


def _roundtrip_check(text: str) -> str:
    """argparse type of --roundtrip-check: a command template with {tl}."""
    from tlinterp.impl.command import check_template

    try:
        check_template(text, ("tl",), ("tl",))
    except SpecError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_impl_flags(parser: argparse.ArgumentParser, *, device_default: Optional[str] = None,
                   names: tuple[str, ...] = FLAGS, help: Optional[dict[str, str]] = None
                   ) -> None:
    """Declare the implementation flags `names` (a subset of FLAGS) on `parser`; `help`
    replaces a flag's help text where a tool says more."""
    texts = {**_HELP, **(help or {})}
    for name in names:
        if name == "device":
            parser.add_argument("--device", default=device_default, help=texts[name])
        elif name == "lowering":
            parser.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE",
                                help=texts[name])
        elif name == "work_group_size":
            parser.add_argument("--work-group-size", type=_work_group_size, default=None,
                                metavar="W0xW1", help=texts[name])
        elif name == "build_options":
            parser.add_argument("--build-options", type=_build_options, default="",
                                metavar="'OPTIONS'", help=texts[name])
        elif name == "reject_status":
            parser.add_argument("--reject-status", type=parse_reject_status,
                                default=ImplOptions.reject_status, metavar="N[,N...]",
                                help=texts[name])
        elif name == "roundtrip_check":
            parser.add_argument("--roundtrip-check", type=_roundtrip_check, default=None,
                                metavar="'CHECKER {tl}'", help=texts[name])
        else:
            raise ValueError(f"no implementation flag '{name}' (known: {', '.join(FLAGS)})")


def impl_options(ns: argparse.Namespace, **extra) -> ImplOptions:
    """The ImplOptions the flags in `ns` give (flags a tool does not declare keep their
    defaults); `extra` sets other fields, e.g. tlrun's tune=True."""
    given = {name: getattr(ns, name) for name in FLAGS if hasattr(ns, name)}
    if "lowering" in given:
        given["lowering"] = tuple(given["lowering"])
    return ImplOptions(**given, **extra)


def lowering_needs_opencl(spec: str, lowering, flag: str) -> None:
    """SpecError when --lowering is given for an implementation other than our lowering,
    which alone reads it (`flag`: how the tool names the implementation, --backend or
    --impl)."""
    if lowering and spec.partition(":")[0] != "opencl":
        raise SpecError(f"--lowering needs {flag} opencl (the other "
                        f"{'backends' if flag == '--backend' else 'implementations'} "
                        "ignore it)")
