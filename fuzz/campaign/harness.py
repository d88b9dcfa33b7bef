"""Differential runs: the reference interpreter against the OpenCL backend on the same cases.

A batch of N generated functions goes into ONE program, so the OpenCL side builds once
(tlgpu caches builds by source and device) and runs every function from that build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import numpy as np

from tlgpu.runtime.oclgrind import OclgrindReport
from tlinterp import ir
from tlinterp.args import red_zones, save_npz
from tlinterp.diagnostics import BackendError, TLError, UndefinedBehaviour

from ..oracle.compare import compare_outputs
from ..strategies import FuzzCase
from .redzones import describe

__all__ = ["Finding", "combine", "differential", "save_finding", "reproduce_command",
           "config_overrides", "finding_impl", "tlrun_line"]

# BackendErrors that are legitimate refusals of a configuration, not lowering bugs.
_LIMITS = ("bytes of local memory", "exceeds the maximum", "exceeds the ")


@dataclass
class Finding:
    case: FuzzCase
    kind: str  # "mismatch" | "red-zone" | "backend-error" | "backend-crash" |
    # "oclgrind-report" | "generator" | "interp-error"
    message: str
    config: object = None  # tlgpu.LoweringConfig used
    device: Optional[str] = None
    impl: Optional[tuple] = None  # (spec, ImplOptions) of the implementation under test

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def combine(cases: list[FuzzCase]) -> ir.Program:
    """One program holding every case's function (names are already distinct)."""
    funcs = tuple(c.program.functions[0] for c in cases)
    names = [f.name for f in funcs]
    if len(set(names)) != len(names):
        funcs = tuple(dataclasses.replace(f, name=f"{f.name}_{i}") for i, f in enumerate(funcs))
    return ir.Program(funcs, "<fuzz-batch>", "\n".join(c.source for c in cases))


def _interp(case: FuzzCase):
    from tlinterp.interp import run

    try:
        with red_zones() as zones:
            out = run(case.program, case.args, func=case.func, groups=case.groups)
        damage = describe(zones, case.program.functions[0], "the interpreter",
                          case.program.filename)
        if damage is not None:
            return None, Finding(case, "red-zone", damage)
        return out, None
    except UndefinedBehaviour as e:
        return None, Finding(case, "generator", "the interpreter reports undefined behaviour "
                             f"in a generated program (a generator bug):\n{e}")
    except TLError as e:
        return None, Finding(case, "interp-error", f"{type(e).__name__}: {e}")


def differential(cases: list[FuzzCase], config=None, device: Optional[str] = None,
                 backend: str = "opencl", impl=None, timeout: Optional[float] = None
                 ) -> list[Finding]:
    """Run every case on both sides; the findings (empty when all agree). `impl`: an
    implementation from the registry to test instead of this package's OpenCL lowering."""
    if impl is not None:
        return differential_impl(cases, impl, timeout)
    import tlgpu

    program = combine(cases)
    findings: list[Finding] = []
    batch_ok = True
    for case, func in zip(cases, program.functions):
        expected, problem = _interp(case)
        if problem is not None:
            problem.config, problem.device = config, device
            findings.append(problem)
            continue
        target = program if batch_ok else case.program
        name = func.name if batch_ok else case.func
        try:
            with red_zones() as zones:
                try:
                    actual = tlgpu.run(target, case.args, func=name, groups=case.groups,
                                       device=device, config=config)
                except BackendError:
                    if not batch_ok:
                        raise
                    batch_ok = False  # one function spoils the batch build: go one by one
                    zones.buffers.clear()
                    actual = tlgpu.run(case.program, case.args, func=case.func,
                                       groups=case.groups, device=device, config=config)
        except BackendError as e:
            if not any(s in str(e) for s in _LIMITS):
                findings.append(Finding(case, "backend-error", str(e), config, device))
            continue
        except OclgrindReport as e:  # undefined behaviour in the generated C
            findings.append(Finding(case, "oclgrind-report", str(e), config, device))
            continue
        except TLError as e:
            findings.append(Finding(case, "backend-error", f"{type(e).__name__}: {e}",
                                    config, device))
            continue
        except Exception as e:  # a crash inside the backend is a finding, never fatal
            findings.append(Finding(case, "backend-crash", f"{type(e).__name__}: {e}",
                                    config, device))
            continue
        damage = describe(zones, case.program.functions[0], "the OpenCL side",
                          case.program.filename)
        if damage is not None:
            findings.append(Finding(case, "red-zone", damage, config, device))
            continue
        mism = compare_outputs(case.program, case.func, case.args, expected, actual,
                               groups=case.groups)
        if mism:
            text = "\n".join(str(m) for m in mism)
            findings.append(Finding(case, "mismatch", f"interpreter vs OpenCL:\n{text}",
                                    config, device))
    return findings


_OVERLAP: Optional[ThreadPoolExecutor] = None


def _overlap_thread() -> ThreadPoolExecutor:
    """One long-lived thread for implementation runs (a campaign process is single-threaded
    otherwise)."""
    global _OVERLAP
    if _OVERLAP is None:
        _OVERLAP = ThreadPoolExecutor(1, thread_name_prefix="tl-impl")
    return _OVERLAP


def differential_impl(cases: list[FuzzCase], impl, timeout: Optional[float] = None
                      ) -> list[Finding]:
    """The reference against any implementation, one case at a time (each is its own job)."""
    from tlinterp.impl import Job

    from .rejections import rejected

    findings: list[Finding] = []
    # an implementation that works in other processes runs while the interpreter computes
    # the expected outputs here (its thread only waits for the compiler and the worker)
    overlap = getattr(impl, "runs_elsewhere", False)
    for case in cases:
        job = Job(case.source, case.args, func=case.func, groups=case.groups,
                  filename=f"{case.func}.tl", program=case.program)
        running = _overlap_thread().submit(impl.run, job, timeout) if overlap else None
        expected, problem = _interp(case)
        if problem is not None:
            if running is not None:
                running.result()  # one job at a time: let it end before the next
            findings.append(problem)
            continue
        o = running.result() if running is not None else impl.run(job, timeout)
        said = o.message.strip() or "(no message)"
        if o.status == "ok":
            mism = compare_outputs(case.program, case.func, case.args, expected,
                                   o.outputs or {}, groups=case.groups)
            if mism:
                text = "\n".join(str(m) for m in mism)
                findings.append(Finding(case, "mismatch", f"interpreter vs {impl.name}:\n"
                                        f"{text}", impl=(impl.spec, impl.options)))
        elif o.status == "rejected":  # one finding per rejected construct, not per case
            findings.append(rejected(case, impl, said))
        elif o.status == "failed":
            verb = "failed on"
            findings.append(Finding(case, "backend-error", f"{impl.name} {verb} a valid, "
                                    f"UB-free program:\n{said}", impl=(impl.spec, impl.options)))
        else:
            findings.append(Finding(case, "backend-crash", f"{impl.name}: {o.status}:\n{said}",
                                    impl=(impl.spec, impl.options)))
    return findings


def config_overrides(config) -> list[str]:
    """`--lowering KEY=VALUE` strings for the fields that differ from the defaults."""
    if config is None:
        return []
    default = type(config)()
    out = []
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        if v != getattr(default, f.name):
            if isinstance(v, tuple):
                v = ",".join(str(x) for x in v)
            out.append(f"{f.name}={v}")
    return out


def finding_impl(finding: Finding) -> tuple:
    """(spec, ImplOptions) of the implementation a finding was found against: the one under
    test, else our OpenCL lowering with the finding's device and lowering config."""
    if finding.impl is not None:
        return finding.impl
    from tlinterp.impl import ImplOptions

    return "opencl", ImplOptions(device=finding.device or "pocl",
                                 lowering=tuple(config_overrides(finding.config)))


def reproduce_command(tl: str, npz: str, finding: Finding) -> str:
    """The interestingness test of a finding: `tlfuzz reproduce ...` with the implementation's
    flags exits 1 while the implementation's result differs from the reference (a reducer
    keeps a candidate on status 1). A generator finding is the reference's own report, which
    `tlrun` shows."""
    if finding.kind == "generator":
        return tlrun_line(tl, npz, finding)
    from .reproduce import reproduce_line

    return reproduce_line(tl, npz, finding.case.func, finding.case.groups,
                          *finding_impl(finding))


def tlrun_line(tl: str, npz: str, finding: Finding) -> str:
    """`tlrun` running the finding's implementation alone (the reference for a generator
    finding), to see what it does."""
    from tlinterp.impl.base import tlrun_command

    spec, options = ("interp", None) if finding.kind == "generator" else finding_impl(finding)
    return tlrun_command(spec, options, tl, npz, finding.case.func, finding.case.groups)


def save_finding(finding: Finding, out_dir: str) -> str:
    """Write NAME.tl, NAME.npz and NAME.txt (the `tlfuzz reproduce` line, the `tlrun` line, the
    message);
    NAME is a hash of the program and arguments, so a finding is saved once. Returns the
    path without extension."""
    os.makedirs(out_dir, exist_ok=True)
    h = hashlib.sha1(finding.case.source.encode())
    for k in sorted(finding.case.args):
        h.update(k.encode())
        h.update(np.ascontiguousarray(finding.case.args[k]).tobytes())
    base = os.path.join(out_dir, f"{finding.kind}-{h.hexdigest()[:12]}")
    with open(base + ".tl", "w") as f:
        f.write(finding.case.source)
    save_npz(base + ".npz", finding.case.args)
    with open(base + ".txt", "w") as f:
        f.write(reproduce_command(base + ".tl", base + ".npz", finding) + "\n")
        if finding.kind != "generator":
            f.write(f"run it alone: {tlrun_line(base + '.tl', base + '.npz', finding)}\n")
        direct = _direct_command(finding, base)
        if direct:
            f.write(f"the command alone: {direct}\n")
        f.write("\n")
        if finding.kind == "red-zone":
            f.write("(tlrun and tlfuzz reproduce do not guard buffers: `tlfuzz --out DIR` "
                    "replays this finding with red zones)\n\n")
        f.write(finding.message + "\n")
    return base


def _direct_command(finding: Finding, base: str) -> Optional[str]:
    """A command template's own command line for the saved files (None for the others)."""
    if finding.impl is None or "{" not in finding.impl[0] or finding.impl[0].startswith(
            ("opencl-c:", "python:")):
        return None
    from tlinterp.impl.template import Template

    return Template(*finding.impl).reproduce(base + ".tl", base + ".npz", finding.case.func,
                                             finding.case.groups)
