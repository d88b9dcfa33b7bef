"""Triage of a finding against an implementation other than our own lowering: another compiler
(`opencl-c:COMMAND`), a command template, a `python:` function, whatever the registry names.

The implementation itself is rerun, with the options it was found with, several times. When it
hands us code to build (an `opencl-c:` compiler's OpenCL C), that very code is also rebuilt and
rerun below the implementation: on the finding's device as built, with `-cl-opt-disable` added
to its build options, on Oclgrind (with its checks on) and on pocl. The classes:

- "your compiler": every rerun differs from the reference, and so does the emitted code
  without optimisation (and on Oclgrind, when it can run it): the implementation computes the
  wrong thing;
- "device compiler suspect": the emitted code differs only with optimisation on the finding's
  device: it agrees with `-cl-opt-disable`, or Oclgrind runs it cleanly and agrees;
- "UB in the emitted code": Oclgrind reports an error while running the emitted code;
- "flaky": a rerun agrees with the reference, or the reruns end differently.
Oclgrind has no sub-groups and fails on some LLVM constructs; a run it cannot do is said as
"Oclgrind cannot run this code (reason)", never taken for a verdict.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Optional

from fuzz.triage.clexec import OPT_DISABLE, Isolated, Prepared, Size, Target, count, differing
from fuzz.triage.clexec import Outcome as RunOutcome
from fuzz.triage.triage import (
    DEVICE,
    EMITTED_UB,
    FLAKY,
    YOURS,
    Run,
    Triage,
    _judge,
    available_others,
    expected_outputs,
    reduce_and_write,
)
from tlinterp.io.foreigntext import shown
from tlinterp.io.outfile import write_text

CLASSES = (YOURS, DEVICE, EMITTED_UB, FLAKY)
RERUNS = 3  # enough to tell a deterministic difference from one that comes and goes
FATAL = "fatal error of the simulator"  # how clexec words an Oclgrind crash (oclgrind.parse)


def build_options(options) -> tuple[str, ...]:
    """The options another compiler's OpenCL C is built with (tlgpu.runtime.kernel)."""
    from tlgpu.runtime.kernel import build_options_of

    return tuple(build_options_of(options.build_options or ""))


def emitted_code(case, spec: str, options, timeout: float) -> tuple[Optional[str], str]:
    """(the OpenCL C the implementation hands over for this case, or None; why not). Only
    implementations with a `compile_code` (opencl-c:, spirv:) have code to rebuild, and only
    OpenCL C can be rebuilt with other options or on Oclgrind."""
    from tlinterp.impl import Job, resolve

    impl = resolve(spec, options)
    try:
        compile_code = getattr(impl, "compile_code", None)
        if compile_code is None:
            return None, "it runs its own code (nothing below it to rerun)"
        job = Job(case.source, case.args, func=case.func, groups=case.groups,
                  filename=f"{case.func}.tl", program=case.program)
        code, said = compile_code(job, timeout)
    finally:
        close = getattr(impl, "close", None)
        if close is not None:
            close()
    if code is None:
        return None, f"the compiler gave no code this time: {said.status}"
    if getattr(impl, "kind", None) != "opencl-c":  # SPIR-V: nothing to rebuild it from
        return None, "its code is no OpenCL C"
    return code.decode("utf-8", errors="replace"), ""


def _as_run_outcome(o) -> RunOutcome:
    """An implementation's Outcome in the shape triage judges (clexec.Outcome)."""
    if o.status == "ok":
        return RunOutcome(o.outputs)
    first = shown((o.message or "").strip()).splitlines()[:1]
    return RunOutcome(None, f"{o.status}: {first[0] if first else '(no message)'}")


def triage_impl(case, spec: str, options, reruns: int = RERUNS, timeout: float = 300.0,
                progress: Callable[[str], None] = lambda s: None) -> Triage:
    """Rerun and classify a finding against the implementation `spec` with `options` (an
    ImplOptions; see the module doc)."""
    from fuzz.triage.reproduce import run_impl
    from tlinterp.impl.base import option_words

    expected = expected_outputs(case)
    runs: list[Run] = []
    notes = [f"implementation: {shlex.join([spec, *option_words(options)])}"]
    outputs = []
    for i in range(reruns):
        what = f"the implementation (rerun {i + 1})"
        progress(what)
        o = run_impl(case, spec, options, timeout)
        verdict, agrees = _judge(case, expected, _as_run_outcome(o))
        runs.append(Run(what, verdict, agrees))
        outputs.append(o.outputs)
    impl_runs = list(runs)

    code = None

    def result(verdict: str, reason: str) -> Triage:
        return Triage(verdict, reason, runs, spec, notes, code)

    if any(r.agrees for r in impl_runs):
        n = sum(1 for r in impl_runs if r.agrees)
        return result(FLAKY, f"{n} of {reruns} reruns of the implementation agree with the "
                      "reference")
    if len({r.verdict for r in impl_runs}) > 1:
        return result(FLAKY, f"the {reruns} reruns of the implementation end differently")
    if impl_runs[0].agrees is None:
        return result(YOURS, f"every rerun of the implementation ends the same way: "
                      f"{impl_runs[0].verdict}")
    if not _same(outputs):
        notes.append("the reruns differ from the reference, but not all with the same "
                     "values")

    progress("the emitted code")
    source, why = emitted_code(case, spec, options, timeout)
    if source is None:
        return result(YOURS, f"every rerun differs from the reference the same way; {why}")
    emitted, size = _emitted_runs(case, expected, source, options, progress)
    runs.extend(emitted)
    if size is not None:
        from tlgpu.lowering.function import kernel_name

        function = case.program.function(case.func)
        code = Prepared(source, kernel_name(function), size, 0, function)
    asbuilt, noopt, others = runs[reruns], runs[reruns + 1], runs[reruns + 2:]
    grind = next((r for r in others if r.what.startswith("oclgrind")), None)
    if grind is not None and (grind.agrees is None or any(FATAL in r for r in grind.reports)):
        reason = grind.reports[0] if grind.reports else grind.verdict
        notes.append(f"Oclgrind cannot run this code ({reason})")
        grind = None
    # on --device oclgrind the finding's own runs are Oclgrind's: their reports count too
    reported = [r for r in runs[reruns:] if r.reports and not any(FATAL in x for x in r.reports)]
    if reported:
        return result(EMITTED_UB, f"Oclgrind reports {reported[0].reports[0]} while running the "
                      "emitted code")
    if asbuilt.agrees:
        return result(FLAKY, "the code the compiler emits now agrees on the finding's device: "
                      "the compiler's output is not deterministic")
    device = asbuilt.what.split(",")[0]
    if noopt.agrees and grind is not None and grind.agrees is False:
        return result(EMITTED_UB, f"{device} with {OPT_DISABLE} agrees and Oclgrind differs: "
                      "the devices disagree in a way no single faulty compiler explains, so "
                      "the emitted code's result is not defined by OpenCL C")
    if noopt.agrees:
        also = ", and on Oclgrind" if grind is not None else ""
        return result(DEVICE, f"the emitted code differs on {device} with optimisation, and "
                      f"agrees with {OPT_DISABLE}{also}: suspect the device's compiler")
    if grind is not None and grind.agrees:
        how = "even with" if noopt.agrees is False else "and could not run with"
        return result(DEVICE, f"the emitted code agrees on Oclgrind but differs on {device} "
                      f"{how} {OPT_DISABLE}: suspect the device's compiler")
    checked = [r.what for r in (noopt, grind) if r is not None and r.agrees is False]
    if not checked:
        notes.append("nothing below the compiler could check its code: "
                     f"{noopt.what}: {noopt.verdict}")
    return result(YOURS, "every rerun differs from the reference the same way, and so does "
                  f"the emitted code{' (' + '; '.join(checked) + ')' if checked else ''}: "
                  "the compiler emits code that computes the wrong thing")


def _same(outputs: list) -> bool:
    """Whether every rerun left the same bytes (NaN equals NaN)."""
    first = outputs[0] or {}
    return all(count(differing(first, o or {})) == 0 for o in outputs[1:])


def _emitted_runs(case, expected: dict, source: str, options,
                  progress: Callable[[str], None]) -> tuple[list[Run], Optional[Size]]:
    """The emitted code on the finding's device as built and with -cl-opt-disable, then on the
    other installed devices (Oclgrind, pocl), each in a child process with a time limit; and
    the work-group size the code ran with on the finding's device."""
    from tlgpu.lowering.function import kernel_name
    from tlinterp.impl.base import parse_work_group_size

    function = case.program.function(case.func)
    size = parse_work_group_size(options.work_group_size)
    geometry = Size(*size) if size else None  # None: the kernel's reqd_work_group_size
    opts = build_options(options)
    target = Target(options.device or "pocl")
    plan = [(f"{target.label}, same code as built", target, opts),
            (f"{target.label}, {OPT_DISABLE}", target, opts + (OPT_DISABLE,))]
    plan += [(o.label, o, opts) for o in available_others(target)]
    runner = Isolated(timeout=120.0)
    out, sizes = [], []
    try:
        for what, tgt, o in plan:
            progress(what)
            res = runner(tgt, source, kernel_name(function), function, case.args, case.groups,
                         geometry, 0, o)
            verdict, agrees = _judge(case, expected, res)
            out.append(Run(what, verdict, agrees, res.reports))
            sizes.append(res.size)
    finally:
        runner.close()
    return out, geometry or sizes[0]


def investigate_impl(case, spec: str, options, base: str, reduce_seconds: float = 120.0,
                     progress: Callable[[str], None] = lambda s: None) -> Triage:
    """Triage against the implementation and write BASE.triage.txt; for a device-compiler
    suspect also reduce the emitted code and write the reproducer BASE.repro/."""
    result = triage_impl(case, spec, options, progress=progress)
    notes = [result.text()]
    if result.verdict == DEVICE and result.code is not None:
        notes.append(reduce_and_write(case, result.code, Target(options.device or "pocl"),
                                      base, reduce_seconds, result, build_options(options),
                                      progress))
    write_text(base + ".triage.txt", "\n".join(notes) + "\n")  # whole or not at all
    return result
