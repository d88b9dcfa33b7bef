"""Differential runs: the reference interpreter against the OpenCL backend on the same cases.

A batch of N generated functions goes into ONE program, so the OpenCL side builds once
(tlgpu caches builds by source and device) and runs every function from that build.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from fuzz.campaign.findings import (
    Finding,
    config_overrides,
    finding_impl,
    reproduce_command,
    save_finding,
    tlrun_line,  # noqa: F401 - re-exported: the harness's findings API
)
from fuzz.campaign.redzones import describe
from fuzz.oracle.compare import compare_outputs
from fuzz.strategies import FuzzCase
from tlgpu.runtime.oclgrind import OclgrindReport
from tlinterp.io.args import red_zones
from tlinterp.io.foreigntext import shown
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError, TLError, UndefinedBehaviour

__all__ = ["Finding", "combine", "differential", "save_finding", "reproduce_command",
           "config_overrides", "finding_impl", "tlrun_line", "DEVICE_LIMITS", "device_limit"]

# BackendErrors that are legitimate refusals of a configuration, not lowering bugs: also the
# v0.4 lowering's documented ones (a construct it does not lower yet; sub-group code that a
# device without sub-groups cannot run exactly, subgroups.NoSubgroups; a drawn work-group size
# that the function's subgroup_size does not divide, program.py)
_LIMITS = ("bytes of local memory", "exceeds the maximum", "exceeds the ", "not yet lowered",
           "needs sub-groups, which the device", "the first mode must be a multiple of the "
           "subgroup size")

# What the device cannot run in an external implementation's code, read from its build log:
# the case is counted, saved as no finding and never shrunk (docs/testing-a-compiler.md, "What
# the CPU runtime cannot run"). (substring of the message, why)
DEVICE_LIMITS = (
    ("intel_sub_group_block_read_us16", "16-element ushort sub-group block reads are "
     "cl_intel_subgroups_short 1.1; Intel's CPU runtime offers 1.0.0"),
    ("intel_sub_group_block_write_us16", "16-element ushort sub-group block writes are "
     "cl_intel_subgroups_short 1.1; Intel's CPU runtime offers 1.0.0"),
)


def device_limit(message: str) -> Optional[str]:
    """Why the device cannot run the code a failed run's `message` names (DEVICE_LIMITS), or
    None: a failure the implementation answers for."""
    return next((why for key, why in DEVICE_LIMITS if key in message), None)


def combine(cases: list[FuzzCase]) -> ir.Program:
    """One program holding every case's function (names are already distinct)."""
    funcs = tuple(c.program.functions[0] for c in cases)
    names = [f.name for f in funcs]
    if len(set(names)) != len(names):
        funcs = tuple(dataclasses.replace(f, name=f"{f.name}_{i}") for i, f in enumerate(funcs))
    langs = {c.program.lang for c in cases}  # a batch is of one version (the campaign's)
    return ir.Program(funcs, "<fuzz-batch>", "\n".join(c.source for c in cases),
                      lang=langs.pop() if len(langs) == 1 else None)


def lowerable_cases(cases: list[FuzzCase], grids: bool = False) -> list[FuzzCase]:
    """The cases our lowering takes: a v0.4 kernel with a construct it does not lower yet
    (tlinterp.front.pipeline.lowerable: "not yet lowered") is left out, not a finding; an
    (X, 1, 1) grid is X work-groups. A grid with Y or Z above 1 needs the v0.4 calling
    convention: `grids` False leaves such cases out, True keeps only them."""
    from tlinterp.front.pipeline import lowerable
    from tlinterp.lang.diagnostics import NotExecutable

    out = []
    for c in cases:
        if isinstance(c.groups, tuple) and any(g != 1 for g in c.groups[1:]):
            if not grids:
                continue
        elif grids:
            continue
        elif isinstance(c.groups, tuple):
            c = dataclasses.replace(c, groups=c.groups[0])
        try:
            lowerable(c.program)
        except NotExecutable:
            continue
        out.append(c)
    return out


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
                 backend: str = "opencl", impl=None, timeout: Optional[float] = None,
                 deadline: Optional[float] = None, done: Optional[list] = None
                 ) -> list[Finding]:
    """Run every case on both sides; the findings (empty when all agree). `impl`: an
    implementation from the registry to test instead of this package's OpenCL lowering,
    each case's run bounded by `timeout` and by the campaign's end `deadline` (time.time());
    `done[0]` is set to the number of cases that ran to their end."""
    if hasattr(impl, "differential"):  # a suite of runs per kernel (campaign/suites.py)
        return impl.differential(cases, deadline, done)
    if impl is not None:
        return differential_impl(cases, impl, timeout, deadline, done)
    found = _batch(lowerable_cases(cases), config, device)
    grids = lowerable_cases(cases, grids=True)
    if grids:  # launched as the grid itself: a build of their own in the v0.4 convention
        from tlgpu import LoweringConfig

        v04 = dataclasses.replace(config or LoweringConfig(), convention="v0.4")
        found += _batch(grids, v04, device)
    return found


def _batch(cases: list[FuzzCase], config, device: Optional[str]) -> list[Finding]:
    """The cases (lowerable by `config`) in one build, else one by one."""
    import tlgpu

    if not cases:
        return []
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


# seconds the compiler may take over a whole batch (tlgpu.implementations' batch_code): past
# them it gives up on it and compiles the cases one by one, each with the case's own bound
BATCH_COMPILE_S = 10.0


def differential_impl(cases: list[FuzzCase], impl, timeout: Optional[float] = None,
                      deadline: Optional[float] = None, done: Optional[list] = None
                      ) -> list[Finding]:
    """The reference against any implementation, one case at a time (each is its own job).
    A case's run is bounded by `timeout` and by what is left until `deadline`; a case the
    deadline cuts short ends the batch without a finding (`done[0]`: the cases run).

    An implementation with `batch_code` (opencl-c:, spirv:) compiles the batch as one
    program first, so the device builds it once; each case is still its own job (its own
    launch, time bound and worker death). A batched case that does not agree with the
    reference (any failure, a mismatch) is run again alone and judged on that run, as are
    the cases after a failure: a verdict that is no agreement, and the finding's command,
    are always the case's own."""

    from fuzz.campaign.rejections import rejected
    from tlinterp.impl import Job

    findings: list[Finding] = []
    if done is not None:
        done[:] = [0]

    def limit_now() -> tuple[Optional[float], bool]:
        return run_limit(timeout, deadline)

    jobs = [Job(case.source, case.args, func=case.func, groups=case.groups,
                filename=f"{case.func}.tl", program=case.program, lang=case.lang)
            for case in cases]
    batch = None
    if getattr(impl, "batch_code", None) is not None and len(cases) > 1:
        limit, _ = limit_now()
        if limit is None or limit > 0:
            batch = impl.batch_code(jobs, BATCH_COMPILE_S if limit is None
                                    else min(limit, BATCH_COMPILE_S))
    # an implementation that works in other processes runs while the interpreter computes
    # the expected outputs here (its thread only waits for the compiler and the worker)
    overlap = getattr(impl, "runs_elsewhere", False)
    for case, job in zip(cases, jobs):
        limit, cut = limit_now()
        if limit is not None and limit <= 0:
            break
        kw = {} if batch is None else {"code": batch}
        running = _overlap_thread().submit(impl.run, job, limit, **kw) if overlap else None
        expected, problem = _interp(case)
        if problem is not None:
            if running is not None:
                running.result()  # one job at a time: let it end before the next
            findings.append(problem)
            if done is not None:
                done[0] += 1
            continue
        o = running.result() if running is not None else impl.run(job, limit, **kw)
        mism = _mismatches(case, expected, o)
        if kw and (o.status != "ok" or mism):
            # settled alone; after a failure (a crash, a hang, a refusal: the batch's code
            # may be what broke) so is the rest of the batch, while a mismatch leaves the
            # batch to the others (each one that disagrees is run alone too): a build alone
            # costs what the batch's build of that kernel did
            if o.status != "ok":
                batch = None
            limit, cut = limit_now()
            if limit is not None and limit <= 0:
                break
            o = impl.run(job, limit)
            mism = _mismatches(case, expected, o)
        if o.status == "timeout" and cut:
            break  # the campaign's end, not the implementation's fault
        if done is not None:
            done[0] += 1
        said = shown(o.message.strip()) or "(no message)"  # into finding files: no escapes
        if o.status == "ok":
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
        elif device_limit(o.message):  # no bug of the implementation: nothing to save
            continue
        else:  # the implementation may know the kind better (ir:'s "roundtrip")
            findings.append(Finding(case, o.finding or "backend-crash",
                                    f"{impl.name}: {o.status}:\n{said}",
                                    impl=(impl.spec, impl.options)))
    return findings


def run_limit(timeout: Optional[float], deadline: Optional[float]
              ) -> tuple[Optional[float], bool]:
    """The bound of a run starting now: `timeout`, or what is left until `deadline`
    (time.time(); <= 0 when it has passed) if that is less; and whether the deadline made it."""
    import time

    if deadline is None:
        return timeout, False
    left = deadline - time.time()
    return (left, True) if timeout is None or left < timeout else (timeout, False)


def _mismatches(case: FuzzCase, expected, o) -> list:
    """Where an implementation's outputs differ from the reference's (none unless it ran)."""
    if o.status != "ok":
        return []
    return compare_outputs(case.program, case.func, case.args, expected, o.outputs or {},
                           groups=case.groups)
