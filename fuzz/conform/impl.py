"""Implementations under test, behind one interface: run a case, describe what happened.

An `--impl SPEC` is a command template (`'tool {kernel} --args {args} --out {out}
[--func {func}] [--groups {groups}]'`), `python:module:function`, or a built-in: `tlinterp`,
`tlgpu` (pocl), `tlgpu:oclgrind`, `tlgpu:DEVICE`.
"""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import tempfile
import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from tlinterp import TLError, UndefinedBehaviour
from tlinterp.args import load_npz, save_npz

from .corpus import Case

UB_KINDS = ("out-of-bounds", "data-race", "uninitialised-read", "use-after-lifetime",
            "division-by-zero", "division-overflow", "signed-overflow", "shift-out-of-range",
            "invalid-cast", "overlapping-operands", "order-dependent-atomic", "invalid-view")


class SpecError(Exception):
    """A bad --impl SPEC (usage error, exit 2)."""


@dataclass
class Outcome:
    """What an implementation did with one case.

    status: "ok" (outputs), "rejected" (exit 2), "failed" (exit 1: undefined behaviour or a
    run-time failure), "crashed" (anything else: other exit status, a Python exception that is
    not a TLError, a missing output file), "timeout"."""

    status: str
    outputs: Optional[dict[str, np.ndarray]] = None
    message: str = ""  # diagnostics / stderr, as the implementation reported them
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (range, message)
    ub_kinds: list[str] = field(default_factory=list)
    command: Optional[str] = None  # the command that ran, for templates
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (range, message)


class Implementation(ABC):
    name: str
    reference = False  # the reference must also report every undefined behaviour's kind
    parallel = True  # may run several cases at once

    @abstractmethod
    def run(self, case: Case, timeout: Optional[float]) -> Outcome:
        """Run one corpus case and describe what happened."""


# --- in-process implementations (python: plugins and the built-ins) ------------------------

PluginFn = Callable[..., dict]


class InProcess(Implementation):
    """`fn(source_text, args_dict, func=..., groups=...) -> dict`; TLError subclasses signal
    rejection (exit_status 2) and undefined behaviour / run-time failure (exit_status 1)."""

    def __init__(self, name: str, fn: PluginFn, reference: bool = False, parallel: bool = True,
                 front_end: bool = False):
        self.name, self.fn, self.reference, self.parallel = name, fn, reference, parallel
        self.front_end = front_end  # runs tlinterp's checker: its warnings are the impl's

    def run(self, case: Case, timeout: Optional[float]) -> Outcome:
        result: list[Outcome] = []
        worker = threading.Thread(target=lambda: result.append(self._call(case)), daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():  # a thread cannot be stopped: it finishes in the background
            return Outcome("timeout", message=f"no answer within {timeout} s")
        return result[0]

    def _call(self, case: Case) -> Outcome:
        try:
            out = self.fn(case.source(), case.args(), func=case.func, groups=case.groups)
        except TLError as e:
            diags = [(str(d.span), d.message) for d in e.diagnostics if d.span is not None]
            kinds = [r.kind for r in getattr(e, "reports", [])] \
                if isinstance(e, UndefinedBehaviour) else []
            status = "rejected" if e.exit_status == 2 else "failed"
            return Outcome(status, message=e.format(), diagnostics=diags, ub_kinds=kinds)
        except Exception as e:  # noqa: BLE001 - a crashing implementation is a result
            tb = traceback.format_exception_only(type(e), e)[-1].strip()
            return Outcome("crashed", message=f"raised {tb}")
        if not isinstance(out, dict):
            return Outcome("crashed", message=f"returned {type(out).__name__}, not a dict")
        return Outcome("ok", outputs={k: np.asarray(v) for k, v in out.items()},
                       warnings=front_end_warnings(case) if self.front_end else [])


def front_end_warnings(case: Case) -> list[tuple[str, str]]:
    """(range, message) of the warnings tlinterp's checker gives for an accepted kernel."""
    import tlinterp

    found: list = []
    tlinterp.check(tlinterp.parse(case.source(), filename=str(case.kernel)), found)
    return [(str(d.span), d.message) for d in found]


_WARNING = re.compile(r":(\d+\.\d+-[\d.]+): warning: (.*)")


def mentioned_warnings(text: str) -> list[tuple[str, str]]:
    """`FILE:RANGE: warning: MESSAGE` lines of a tool's output as (range, message)."""
    return [(m.group(1), m.group(2).strip()) for m in _WARNING.finditer(text)]


def _tlinterp(source, args, func=None, groups=None):
    from tlinterp.interp import run

    return run(source, args, func=func, groups=groups)


def _tlgpu(device: Optional[str]) -> PluginFn:
    def run(source, args, func=None, groups=None):
        import tlgpu

        return tlgpu.run(source, args, func=func, groups=groups, device=device)

    return run


_GPU_LOCK = threading.Lock()  # one OpenCL queue at a time: the device parallelises itself


def _serial(fn: PluginFn) -> PluginFn:
    def run(*a, **k):
        with _GPU_LOCK:
            return fn(*a, **k)

    return run


# --- command templates ---------------------------------------------------------------------

_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
FIELDS = ("kernel", "args", "out", "func", "groups")


def expand_template(template: str, values: dict[str, Optional[str]]) -> list[str]:
    """The argv for one case: `[...]` parts vanish when a placeholder in them has no value;
    placeholders are substituted per word, so paths need no quoting."""

    def optional(m: re.Match) -> str:
        inner = m.group(1)
        names = _PLACEHOLDER.findall(inner)
        return inner if all(values.get(n) is not None for n in names) else ""

    text = _OPTIONAL.sub(optional, template)
    words = shlex.split(text)

    def fill(m: re.Match) -> str:
        v = values.get(m.group(1))
        if v is None:
            raise SpecError(f"the template uses {{{m.group(1)}}} outside [...] but this case "
                            "has no value for it")
        return v

    return [_PLACEHOLDER.sub(fill, w) for w in words]


class Template(Implementation):
    def __init__(self, template: str):
        for name in _PLACEHOLDER.findall(template):
            if name not in FIELDS:
                raise SpecError(f"unknown placeholder {{{name}}} in the template (known: "
                                f"{', '.join('{' + f + '}' for f in FIELDS)})")
        if "{kernel}" not in template:
            raise SpecError("the template needs {kernel}")
        self.name = template
        self.template = template

    def run(self, case: Case, timeout: Optional[float]) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="tlconform-") as tmp:
            args = case.args_path
            if args is None:  # invalid programs: an empty arguments file
                args = Path(tmp) / "none.args.npz"
                save_npz(str(args), {})
            out = Path(tmp) / "out.npz"
            values = {"kernel": str(case.kernel), "args": str(args), "out": str(out),
                      "func": case.func, "groups": None if case.groups is None
                      else str(case.groups)}
            argv = expand_template(self.template, values)
            command = shlex.join(argv)
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return Outcome("timeout", message=f"no answer within {timeout} s",
                               command=command)
            except OSError as e:
                return Outcome("crashed", message=f"cannot run {argv[0]}: {e.strerror or e}",
                               command=command)
            text = (proc.stderr or "") + (proc.stdout or "")
            if proc.returncode == 0:
                if not out.exists():
                    return Outcome("crashed", message="exit 0 but no output file",
                                   command=command)
                try:
                    outputs = load_npz(str(out))
                except TLError as e:
                    return Outcome("crashed", message=e.format(), command=command)
                return Outcome("ok", outputs=outputs, message=text, command=command,
                               warnings=mentioned_warnings(text))
            if proc.returncode == 2:
                return Outcome("rejected", message=text, command=command)
            if proc.returncode == 1:
                kinds = mentioned_kinds(text)
                return Outcome("failed", message=text, ub_kinds=kinds, command=command)
            return Outcome("crashed", message=f"exit status {proc.returncode}\n{text}",
                           command=command)


def mentioned_kinds(text: str) -> list[str]:
    """Report kinds a tool's output names, spelled with hyphens or spaces ("data race")."""
    low = text.lower()
    return [k for k in UB_KINDS if k in low or k.replace("-", " ") in low]


# --- parsing --impl -------------------------------------------------------------------------

def from_spec(spec: str) -> Implementation:
    if spec == "tlinterp":
        return InProcess("tlinterp", _tlinterp, reference=True, front_end=True)
    if spec == "tlgpu" or spec.startswith("tlgpu:"):
        device = spec.split(":", 1)[1] if ":" in spec else "pocl"
        return InProcess(spec, _serial(_tlgpu(device)), parallel=False, front_end=True)
    if spec.startswith("python:"):
        parts = spec.split(":")
        if len(parts) != 3 or not all(parts[1:]):
            raise SpecError(f"'{spec}': expected python:MODULE:FUNCTION")
        try:
            module = importlib.import_module(parts[1])
        except ImportError as e:
            raise SpecError(f"'{spec}': cannot import {parts[1]} ({e})") from None
        fn = getattr(module, parts[2], None)
        if not callable(fn):
            raise SpecError(f"'{spec}': {parts[1]} has no function {parts[2]}")
        return InProcess(spec, fn)
    if "{" in spec:
        return Template(spec)
    raise SpecError(f"'{spec}' is not an implementation: give a command template with "
                    "{kernel} {args} {out}, python:MODULE:FUNCTION, tlinterp, tlgpu, "
                    "tlgpu:oclgrind or tlgpu:DEVICE")
