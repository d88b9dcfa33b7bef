"""The implementation interface: a job in, an outcome out."""

from __future__ import annotations

import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tlinterp.interp.ub import KINDS
from tlinterp.io.args import Groups, groups_text
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import TLError, UndefinedBehaviour

# the interpreter's kinds, named once there: a report from any implementation is matched
# against them
UB_KINDS = KINDS

STATUSES = ("ok", "rejected", "failed", "crashed", "timeout")


class SpecError(Exception):
    """A bad implementation name or option (a usage error, exit 2)."""


@dataclass(frozen=True)
class ImplOptions:
    """Options a tool passes to every implementation; each uses those it understands."""

    device: Optional[str] = None  # OpenCL device string (pocl, nvidia, oclgrind, ...)
    lowering: tuple[str, ...] = ()  # KEY=VALUE overrides of the reference lowering
    work_group_size: Optional[str] = None  # "W0xW1" for foreign code without
    # reqd_work_group_size whose function has no work_group_size attribute
    tune: bool = False  # opencl: time lowering configs with the job's arguments first, use the
    # fastest (cached per kernel and device) and report the search on stderr
    build_options: str = ""  # opencl-c:/spirv: extra OpenCL build options (tinytc wants
    # "-cl-std=CL2.0 -cl-mad-enable"), added to the ones every build gets
    reject_status: tuple[int, ...] = (2,)  # external compilers: the exit statuses that mean
    # "this program is invalid" (tinytc exits 1 with FILE:LINE.COL-COL: message)
    roundtrip_check: Optional[str] = None  # ir: a checker command 'TOOL {tl}' that must accept
    # what the pass wrote (exit 0), beside our own front end (tlinterp/impl/irpass.py)

    def __post_init__(self):
        parse_work_group_size(self.work_group_size)  # a bad value is a usage error up front


_SIZE = re.compile(r"\s*(\d+)\s*(?:[x,]\s*(\d+)\s*)?")


def parse_work_group_size(text: Optional[str]) -> Optional[tuple[int, int]]:
    """`W0xW1` (or `W0`) as a pair of positive ints; SpecError otherwise."""
    if text is None:
        return None
    m = _SIZE.fullmatch(text)
    if not m or int(m.group(1)) < 1 or int(m.group(2) or 1) < 1:
        raise SpecError(f"--work-group-size expects W0xW1 (e.g. 64x1), got '{text}'")
    return int(m.group(1)), int(m.group(2) or 1)


DEFAULT_OPTIONS = ImplOptions()


@dataclass
class Job:
    """One run: the program (text, and the checked IR when the caller has it), the function,
    the arguments (the .npz convention) and the work-group count or v0.4 grid (None: the
    default rule)."""

    source: str
    args: Mapping[str, np.ndarray]
    func: Optional[str] = None
    groups: Optional[Groups] = None  # a count, or a v0.4 grid (x, y, z)
    filename: str = "kernel.tl"
    program: Optional[ir.Program] = None
    lang: Optional[str] = None  # "v0.3"/"v0.4"; None: detected (tlinterp.front.pipeline)


@dataclass
class Outcome:
    """What an implementation did with one job.

    status: "ok" (outputs), "rejected" (the program or arguments refused, exit 2), "failed"
    (undefined behaviour or a run-time failure, exit 1), "crashed" (anything else: another
    exit status, an exception that is no TLError, no or unreadable output, code that does not
    build), "timeout"."""

    status: str
    outputs: Optional[dict[str, np.ndarray]] = None
    message: str = ""  # diagnostics / the implementation's own output
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (range, message)
    ub_kinds: list[str] = field(default_factory=list)
    command: Optional[str] = None  # the command that ran, for external implementations
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (range, message)
    # the finding kind, where the implementation knows it better than its status says
    # (ir:'s "roundtrip": what the pass wrote does not read back); "" otherwise
    finding: str = ""

    @property
    def exit_status(self) -> int:
        """The status `tlrun` exits with for this outcome."""
        return {"ok": 0, "rejected": 2}.get(self.status, 1)


def outcome_of_error(e: TLError) -> Outcome:
    """A TLError as an outcome: exit status 2 is a rejection, 1 a run-time failure."""
    diags = [(str(d.span), d.message) for d in e.diagnostics if d.span is not None]
    kinds = [r.kind for r in getattr(e, "reports", [])] if isinstance(e, UndefinedBehaviour) \
        else []
    status = "rejected" if e.exit_status == 2 else "failed"
    return Outcome(status, message=e.format(), diagnostics=diags, ub_kinds=kinds)


def mentioned_kinds(text: str) -> list[str]:
    """Report kinds a tool's output names, spelled with hyphens or spaces ("data race")."""
    low = text.lower()
    return [k for k in UB_KINDS if k in low or k.replace("-", " ") in low]


class Implementation(ABC):
    """An implementation of the tensor language.

    `spec` is the name it was resolved from (`resolve(impl.spec)` gives it back), `options`
    the tool options it was made with; `reference` implementations must report every undefined
    behaviour's kind; `parallel` ones may run several jobs at once (on threads)."""

    spec: str = ""
    options: ImplOptions = DEFAULT_OPTIONS
    reference = False
    parallel = True
    front_end = False  # runs tlinterp's checker in this process: its warnings are ours

    @property
    def name(self) -> str:
        return self.spec

    @abstractmethod
    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        """Run one job; every failure is an Outcome, never an exception."""

    def emit(self, program: ir.Program, func: Optional[str],
             lang: Optional[str] = None) -> Optional[str]:
        """Generated code (`tlrun --emit`), for implementations that have any; `lang`: the
        language the program was written in (its calling convention)."""
        return None

    def device(self) -> Optional[str]:
        """The device this implementation runs on, as every tool names it in one line
        ('PLATFORM VERSION: DEVICE'); None when it runs on no device of its own choice."""
        return None

    def devices(self) -> Optional[list]:
        """Every device it could run on (`tlrun --list-devices`): objects with the fields of
        tlgpu.runtime.devices.Listed; None when it chooses none."""
        return None

    def reproduce(self, kernel: str, args: Optional[str], func: Optional[str],
                  groups: Optional[Groups]) -> str:
        """A shell command that reruns THIS implementation on these files."""
        return tlrun_command(self.spec, self.options, kernel, args, func, groups)


def tlrun_command(spec: str, options: ImplOptions, kernel: str, args: Optional[str],
                  func: Optional[str], groups: Optional[Groups],
                  lang: Optional[str] = None) -> str:
    """`tlrun ... --impl SPEC ...`: reruns the implementation `spec` names (`lang`: the
    kernel's version, when it must be said)."""
    cmd = ["tlrun", kernel]
    if args is not None:
        cmd += ["--args", args]
    if func:
        cmd += ["--func", func]
    if groups is not None:
        cmd += ["--groups", groups_text(groups)]
    if lang is not None:
        cmd += ["--lang", lang]
    if spec not in ("interp", "tlinterp"):
        cmd += ["--impl", spec]
        cmd += option_words(options)
    return shlex.join(cmd)


def option_words(options: ImplOptions) -> list[str]:
    """The tool flags that recreate `options`."""
    out: list[str] = []
    if options.device:
        out += ["--device", options.device]
    for o in options.lowering:
        out += ["--lowering", o]
    if options.work_group_size:
        out += ["--work-group-size", options.work_group_size]
    if options.build_options:  # one word: argparse takes a separate "-cl-..." for a flag
        out += [f"--build-options={options.build_options}"]
    if options.reject_status != DEFAULT_OPTIONS.reject_status:
        out += ["--reject-status", ",".join(map(str, options.reject_status))]
    if options.roundtrip_check:
        out += ["--roundtrip-check", options.roundtrip_check]
    return out


_WARNING = re.compile(r":(\d+\.\d+-[\d.]+): warning: (.*)")


def mentioned_warnings(text: str) -> list[tuple[str, str]]:
    """`FILE:RANGE: warning: MESSAGE` lines of a tool's output as (range, message)."""
    return [(m.group(1), m.group(2).strip()) for m in _WARNING.finditer(text)]


_DIAGNOSTIC = re.compile(r":(\d+\.\d+(?:-[\d.]+)?): (?:error: )?(?!warning: )(.*)")


def mentioned_diagnostics(text: str) -> list[tuple[str, str]]:
    """`FILE:LINE.COL-COL: [error: ]MESSAGE` lines of a compiler's output as (range, message):
    how tlrun, gcc, clang and tinytc point at the place a program is rejected (warnings are
    `mentioned_warnings`)."""
    return [(m.group(1), m.group(2).strip()) for m in _DIAGNOSTIC.finditer(text)]
