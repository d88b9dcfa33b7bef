"""Triage of an OpenCL finding: rerun it, with optimisation off, on the other devices (Oclgrind
with its checks on) and under alternative lowering configs, and name its class:

- "our lowering": every device agrees with the others and not with the interpreter;
- "undefined behaviour in the generated C": Oclgrind reports something, or the devices
  disagree with each other in a way that no single faulty compiler explains;
- "device compiler suspect": only the finding's device disagrees (with optimisation on), and
  the C is clean on Oclgrind;
- "flaky": the finding's device does not reproduce it on rerun.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from fuzz.triage.clexec import OPT_DISABLE, Outcome, Prepared, Target, count, differing, run_source
from tlinterp.io.outfile import write_text

LOWERING = "our lowering"
UB = "undefined behaviour in the generated C"
DEVICE = "device compiler suspect"
FLAKY = "flaky"
# a finding against another implementation (fuzz.triage.impl) has these two too
YOURS = "your compiler"
EMITTED_UB = "UB in the emitted code"
CLASSES = (LOWERING, UB, DEVICE, FLAKY, YOURS, EMITTED_UB)
SHORT = {LOWERING: "lowering", UB: "ub-in-c", DEVICE: "device", FLAKY: "flaky",
         YOURS: "yours", EMITTED_UB: "ub-in-emitted"}

# alternative lowerings: results never depend on these, so any change is evidence
ALTERNATIVES = {
    "defaults": {},
    "barrier-after-every-step": {"minimise_barriers": False},
    "no-tiles-no-staging": {"register_tiles": False, "local_staging": False},
    "one-work-item": {"work_group_size": (1, 1)},
}


@dataclass
class Run:
    what: str  # e.g. "nvidia, -cl-opt-disable"
    verdict: str  # "agrees", "differs in N elements", "failed: ...", "Oclgrind: ..."
    agrees: Optional[bool]  # None when it did not run to the end
    reports: tuple[str, ...] = ()


@dataclass
class Triage:
    verdict: str
    reason: str
    runs: list[Run] = field(default_factory=list)
    device: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. a device workaround tlgpu applied
    code: Optional[Prepared] = None  # another compiler's code the reruns rebuilt

    @property
    def short(self) -> str:
        return SHORT.get(self.verdict, self.verdict)

    def text(self) -> str:
        lines = [f"triage: {self.verdict}", f"  because {self.reason}"]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  {r.what:<48} {r.verdict}" for r in self.runs]
        for r in self.runs:
            lines += [f"    {r.what}: {rep}" for rep in r.reports[:5]]
        return "\n".join(lines)


def prepare(case, target: Target, config) -> Prepared:
    """Lower the case as tlgpu would for `target`'s device and config."""
    from tlgpu.lowering.program import lower_program
    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.launch import device_config
    from tlinterp.front.pipeline import lowerable

    cfg = device_config(handle(target.device), config)
    # a v0.4 finding is lowered in its v0.3 form, as tlgpu.run lowers it
    lowered = lower_program(lowerable(case.program), case.func, cfg)
    kname, geo = lowered.kernels[case.func]
    return Prepared(lowered.source, kname, geo, lowered.local_args.get(case.func, 0),
                    case.program.function(case.func))


def workarounds_for(target: Target, prepared: Prepared) -> tuple:
    """The known device bugs tlgpu builds this kernel around on `target`'s device (a
    simulated bug's target gets none: its bug must stay visible)."""
    from tlgpu.runtime import workarounds
    from tlgpu.runtime.devices import handle

    if type(target) is not Target:
        return ()
    text = workarounds.kernel_text(prepared.source, prepared.kernel)
    return workarounds.applicable(text, handle(target.device).device)


def expected_outputs(case) -> dict:
    from tlinterp.interp import run

    return run(case.program, case.args, func=case.func, groups=case.groups)


def failure(error: str) -> str:
    """One line for a failed run: a build log's first `error:` line (pyopencl's first line
    only repeats BUILD_PROGRAM_FAILURE), else the first line."""
    lines = [ln.strip() for ln in error.splitlines() if ln.strip()] or ["(no message)"]
    found = next((ln for ln in lines[1:] if "error:" in ln), None)
    if found is not None:
        return f"{lines[0].split(':')[0]}: {found}"[:200]
    return lines[0][:200]


def _judge(case, expected: dict, out: Outcome) -> tuple[str, Optional[bool]]:
    from fuzz.oracle.compare import compare_outputs

    if out.outputs is None:
        return f"failed: {failure(out.error or '')}", None
    mism = compare_outputs(case.program, case.func, case.args, expected, out.outputs,
                           groups=case.groups)
    note = f"; Oclgrind: {len(out.reports)} report(s)" if out.reports else ""
    if not mism:
        return "agrees" + note, True
    return f"differs in {count(differing(expected, out.outputs))} element(s){note}", False


def available_others(target: Target) -> list[Target]:
    """pocl and Oclgrind when installed, except the finding's own device."""
    from tlgpu.runtime.devices import find_device
    from tlinterp.lang.diagnostics import TLError

    out = []
    for name in ("pocl", "oclgrind"):
        try:
            d = find_device(name)
        except TLError:
            continue
        try:
            own = find_device(target.device)
        except TLError:
            own = None
        if own is None or d.int_ptr != own.int_ptr or type(target) is not Target:
            out.append(Target(name))
    return out


def triage(case, config, target: Target, others: Optional[list[Target]] = None,
           alternatives: Optional[dict] = None,
           progress: Callable[[str], None] = lambda s: None) -> Triage:
    """Rerun and classify one finding (see the module doc)."""
    from tlgpu.runtime.launch import BUILD_OPTIONS

    others = available_others(target) if others is None else others
    alternatives = ALTERNATIVES if alternatives is None else alternatives
    expected = expected_outputs(case)
    opts = tuple(BUILD_OPTIONS)
    runs: list[Run] = []
    notes: dict[str, None] = {}  # ordered set

    def do(what: str, tgt: Target, cfg, options) -> Run:
        progress(what)
        try:
            p = prepare(case, tgt, cfg)
        except Exception as e:  # noqa: BLE001 - a refused config is evidence, not a crash
            run = Run(what, f"failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}",
                      None)
            runs.append(run)
            return run
        found = workarounds_for(tgt, p)
        if found:  # run it as tlgpu builds it (tlgpu.runtime.workarounds), and say so
            for w in found:
                notes[f"tlgpu builds this kernel on {tgt.label} with {' '.join(w.options)} "
                      f"(known device bug {w.name})"] = None
            from tlgpu.runtime.workarounds import options as extra

            options = tuple(dict.fromkeys(options + extra(found)))
        out = run_source(tgt, p.source, p.kernel, p.function, case.args, case.groups,
                         p.geometry, p.local_bytes, options)
        verdict, agrees = _judge(case, expected, out)
        run = Run(what, verdict, agrees, out.reports)
        runs.append(run)
        return run

    first = do(f"{target.label} (rerun)", target, config, opts)
    second = do(f"{target.label} (rerun)", target, config, opts)
    noopt = do(f"{target.label}, {OPT_DISABLE}", target, config, opts + (OPT_DISABLE,))
    other_runs = [do(o.label, o, config, opts) for o in others]
    alt_runs = []
    for name, changes in alternatives.items():
        cfg = dataclasses.replace(config, **changes) if config is not None else None
        if cfg is None:
            from tlgpu.lowering.config import LoweringConfig

            cfg = dataclasses.replace(LoweringConfig(), **changes)
        alt_runs.append(do(f"{target.label}, config {name}", target, cfg, opts))
        alt_runs += [do(f"{o.label}, config {name}", o, cfg, opts)
                     for o in others if o.device == "oclgrind"]

    def result(verdict: str, reason: str) -> Triage:
        return Triage(verdict, reason, runs, target.label, list(notes))

    if first.agrees is not False or second.agrees is not False:
        return result(FLAKY, "the finding's device does not reproduce it on rerun")
    reported = [r for r in runs if r.reports]
    if reported:
        return result(UB, f"Oclgrind reports {reported[0].reports[0]}")
    same = [r for r in [noopt] + other_runs if r.agrees is not None]
    if same and all(r.agrees is False for r in same):
        return result(LOWERING, "every device disagrees with the interpreter (optimisation "
                      "on and off), so the generated C computes the wrong thing")
    if same and all(r.agrees for r in same):
        return result(DEVICE, "only the finding's device with optimisation on disagrees; "
                      f"{OPT_DISABLE}, {', '.join(o.label for o in others) or 'no other'} "
                      "agree with the interpreter and Oclgrind reports nothing")
    return result(UB, "the devices disagree with each other, and not as one faulty compiler "
                  "would: the generated C's result is not defined by the language")


# --- a saved finding, end to end ----------------------------------------------------------------


def investigate(case, config, target: Target, base: str, reduce_seconds: float = 120.0,
                progress: Callable[[str], None] = lambda s: None) -> Triage:
    """Triage; for a device-compiler suspect also reduce and write the reproducer. Writes
    BASE.triage.txt and, for a suspect, the directory BASE.repro/."""
    from tlgpu.runtime.launch import BUILD_OPTIONS

    result = triage(case, config, target, progress=progress)
    notes = [result.text()]
    if result.verdict == DEVICE:
        notes.append(reduce_and_write(case, prepare(case, target, config), target, base,
                                      reduce_seconds, result, tuple(BUILD_OPTIONS), progress))
    write_text(base + ".triage.txt", "\n".join(notes) + "\n")  # whole or not at all
    return result


def reduce_and_write(case, prep: Prepared, target: Target, base: str, seconds: float,
                     result: Triage, options: tuple[str, ...],
                     progress: Callable[[str], None]) -> str:
    """Reduce a device-compiler suspect's OpenCL C (`prep`, built with `options`) and write
    the reproducer BASE.repro/; a line for the triage report."""
    from fuzz.triage import reproducer
    from fuzz.triage.clexec import Isolated, device_info
    from fuzz.triage.reduce import ReducerMissing, interesting_for, reduce_kernel

    expected = expected_outputs(case)
    others = {o.device: o for o in available_others(target)}
    # the reference is pocl; without it, the suspect device with optimisation off
    reference = others.get("pocl", target)
    ref_options = options if reference is not target else options + (OPT_DISABLE,)
    source, reduction, note = prep.source, None, ""
    runner = Isolated()
    try:
        test = interesting_for(prep, case, expected, target, reference,
                               others.get("oclgrind"), options, runner, ref_options)
        reduction = reduce_kernel(prep.source, prep.kernel, test, seconds,
                                  progress=lambda n, t, s: progress(
                                      f"reducing: {n} lines, {t} tests, {s:.0f} s"))
        source = reduction.source
        limit = ", time limit reached" if reduction.timed_out else ""
        note = (f"reference: {reference.label} {' '.join(ref_options)}; "
                f"reduced the kernel body from {reduction.original_lines} to "
                f"{reduction.body_lines} lines in {reduction.seconds:.0f} s "
                f"({reduction.tests} tests{limit})")
    except ReducerMissing as e:
        note = f"not reduced: {e}"
    except StopIteration:  # reduce.split_kernel reads `void NAME(` at a line's start
        note = (f"not reduced: the definition of {prep.kernel} does not start a line with "
                f"'void {prep.kernel}('")
    finally:
        runner.close()
    ref = run_source(reference, source, prep.kernel, prep.function,
                     case.args, case.groups, prep.geometry, prep.local_bytes, ref_options)
    act = run_source(target, source, prep.kernel, prep.function, case.args, case.groups,
                     prep.geometry, prep.local_bytes, options)
    if ref.outputs is None or act.outputs is None:
        return note + f"\nno reproducer: {ref.error or act.error}"
    info = device_info(target)
    if type(target) is not Target:
        info["device"] = f"{info['device']} ({target.label})"
    path = reproducer.write(base + ".repro", source, prep, case, ref.outputs, act.outputs,
                            info, options, result.text(), reduction,
                            f"{reference.label} {' '.join(ref_options)}", _saved_line(base))
    return note + f"\nreproducer: {path}"


def _saved_line(base: str) -> str:
    """The `tlfuzz reproduce` line a campaign saved with the finding ("" when none)."""
    from fuzz.triage.reproduce import UsageError, read_finding_line

    try:
        line = read_finding_line(base + ".txt").strip()
    except UsageError:
        return ""
    return line if line.startswith("tlfuzz reproduce ") else ""
