"""`tlfuzz --passes all --pass-tool tinytc-opt`: every pass of an IR optimiser validated.

For each generated kernel, each pass runs alone (with the passes it needs before it), and so
does each pipeline the compiler itself runs; every output is checked:

- a pass that prints IR (everything but the analyses below) runs as `ir:TOOL -p PASS {tl}`
  (tlinterp/impl/irpass.py) with its round trip: what it printed must read back in our front
  end and in the tool's own checker (`TOOL -p check-ir {tl}`, or --roundtrip-check), and the
  rewritten program runs on the interpreter against the original's outputs;
- an analysis (`dump-*` but `dump-ir`: a control-flow graph, def-use chains, gcds) prints
  no IR: it must end, exit 0 and print something, and the IR it passes on must be the IR it
  was given: `TOOL -p PASS -p dump-ir {tl}` must print the analysis followed by exactly what
  `TOOL -p dump-ir {tl}` prints.

Finding kinds (`pass-KIND`, keyed by pass and kind): mismatch (the rewritten program
computes something else), roundtrip (its output does not read back), crash (another exit
status, a signal), hang (no answer within --run-timeout), signature (the function's
parameters changed), ub (the rewritten program has undefined behaviour the original has
not), failed (it fails otherwise), analysis (an analysis printed nothing or changed the
IR). A valid program the tool rejects is a `rejected-construct` finding, keyed by the
construct as in every campaign (all passes share the tool's parser).
"""

from __future__ import annotations

import re
import shlex
import tempfile
from dataclasses import replace
from typing import Optional

from fuzz.campaign.findings import Finding
from fuzz.strategies import FuzzCase
from fuzz.suites.suite import Suite, SuiteFinding, job_of
from tlinterp.impl.base import ImplOptions

__all__ = ["PIPELINES", "NEEDS", "PassSuite", "tool_passes", "is_analysis"]

# The pipelines tinytc v0.4.0 runs when it compiles (its compiler.cpp), in our words: check
# the IR; at -O1 and above fold constants and drop dead code early (so that dead allocas go
# before lifetime ends are inserted); insert lifetime ends, give allocas their stack
# offsets, insert barriers, choose the work-group and sub-group size; lower the BLAS
# instructions to loops (which may add allocas, so stack offsets again) and `foreach` to
# SPMD code; at -O1 and above fold and clean up once more; lower cooperative matrices; check
# the IR again.
_EARLY = ("constant-propagation", "dead-code-elimination")
_MIDDLE = ("insert-lifetime-stop", "set-stack-ptr", "insert-barrier", "work-group-size",
           "lower-linalg", "set-stack-ptr", "lower-foreach")
PIPELINES: dict[str, tuple[str, ...]] = {
    "-O0": ("check-ir", *_MIDDLE, "lower-coopmatrix", "check-ir"),
    "-O2": ("check-ir", *_EARLY, *_MIDDLE, *_EARLY, "lower-coopmatrix", "check-ir"),
}
# what a pass needs to have run before it: the lowerings read the sub-group size the
# work-group-size pass decides ("Internal compiler error (Subgroup size is missing)" alone)
NEEDS: dict[str, tuple[str, ...]] = {p: ("work-group-size",) for p in (
    "lower-coopmatrix", "lower-foreach", "lower-linalg")}
# the pass that prints the IR unchanged; tinytc-opt appends it unless the last pass dumps
PRINT = "dump-ir"
CHECK = "check-ir"


def is_analysis(name: str) -> bool:
    """Whether the pass prints an analysis rather than IR."""
    return name.startswith("dump-") and name != PRINT


def tool_passes(tool: str, timeout: float = 20.0) -> list[str]:
    """The passes `TOOL --help` lists under "Passes:"; ValueError when it lists none."""
    from tlinterp.impl.command import run_command

    done = run_command([tool, "--help"], timeout)
    if done.code is None:
        raise ValueError(f"--pass-tool {tool}: {done.problem}")
    m = re.search(r"^Passes:\s*\n((?:[ \t]+\S+[ \t]*\n?)+)", done.stdout, re.M)
    if not m:
        raise ValueError(f"--pass-tool {tool}: its --help lists no 'Passes:' (exit status "
                         f"{done.code}); name the passes with --passes P1,P2")
    return m.group(1).split()


def _cause(said: str) -> str:
    """What a round trip failed on, the same for every kernel: the first diagnostic's
    message without names and numbers, quoted tokens kept (a printer that drops a mnemonic
    and a pass that prints a name twice are two findings of one pass)."""
    from fuzz.campaign.rejections import _normal
    from tlinterp.impl.base import mentioned_diagnostics

    found = mentioned_diagnostics(said)
    return _normal(found[0][1]) if found else ""


class PassSuite(Suite):
    """Every pass and pipeline of `tool` on each kernel (see the module docstring)."""

    def __init__(self, tool: str, passes: list[str], flags: str, options: ImplOptions,
                 timeout: float, pipelines: Optional[dict] = None):
        self.tool, self.passes, self.flags, self.timeout = tool, passes, flags, timeout
        self.pipelines = PIPELINES if pipelines is None else pipelines
        check = options.roundtrip_check or self.command((CHECK,))
        self.options = replace(options, roundtrip_check=check)
        self.name = f"the passes of {tool}"
        self._impls: dict = {}

    @classmethod
    def from_tool(cls, tool: str, which: str, flags: str, options: ImplOptions,
                  timeout: float) -> PassSuite:
        listed = tool_passes(tool, timeout)
        if which == "all":
            return cls(tool, listed, flags, options, timeout)
        chosen = [p.strip() for p in which.split(",") if p.strip()]
        unknown = [p for p in chosen if p not in listed]
        if unknown or not chosen:
            raise ValueError(f"--passes: {', '.join(unknown) or 'none named'}: not a pass of "
                             f"{tool} (it lists {', '.join(listed)})")
        # the pipelines run every pass: with a selection, only the selection runs
        return cls(tool, chosen, flags, options, timeout, pipelines={})

    def command(self, passes: tuple[str, ...], level: str = "") -> str:
        """The tool's command line running `passes` on {tl}."""
        words = [shlex.quote(self.tool), level, self.flags]
        words += [f"-p {shlex.quote(p)}" for p in passes]
        return " ".join(w for w in words if w) + " {tl}"

    def checks(self) -> list[tuple[str, str]]:
        """(name, command) of every run on a kernel: each pass alone, then each pipeline."""
        out = [(p, self.command(NEEDS.get(p, ()) + (p,))) for p in self.passes]
        return out + [(f"pipeline {lvl}", self.command(ps, lvl))
                      for lvl, ps in self.pipelines.items()]

    def runs_per_case(self) -> int:
        return 2 * len(self.checks()) + 1

    def _impl(self, command: str):
        if command not in self._impls:
            from tlinterp.impl.irpass import IRPass

            self._impls[command] = IRPass(command, self.options)
        return self._impls[command]

    def check_case(self, case: FuzzCase, expected, problem, limit) -> Optional[list[Finding]]:
        if problem is not None:  # no reference to compare with: the problem is the finding
            return [problem]
        found: list[Finding] = []
        printed: list = []  # `TOOL -p dump-ir` of this kernel, run once for the analyses
        for name, command in self.checks():
            if is_analysis(name):
                f = self._analysis(case, name, limit, printed)
            else:
                f = self._ir_pass(case, name, command, expected, limit)
            if f is False:
                return None
            if f is not None:
                found.append(f)
        return found

    def _finding(self, case: FuzzCase, name: str, kind: str, message: str, spec=None,
                 command: str = "", cause: str = "") -> SuiteFinding:
        return SuiteFinding(case, f"pass-{kind}", f"{name}: {message}",
                            impl=(spec, self.options) if spec else None,
                            construct=f"{name}: {kind}" + (f": {cause}" if cause else ""),
                            command=command)

    def _ir_pass(self, case: FuzzCase, name: str, command: str, expected, limit):
        from fuzz.campaign.rejections import rejected
        from fuzz.oracle.compare import compare_outputs
        from tlinterp.io.foreigntext import shown

        impl = self._impl(command)
        o = impl.run(job_of(case), limit)
        said = shown(o.message.strip()) or "(no message)"
        if o.status == "ok":
            mism = compare_outputs(case.program, case.func, case.args, expected,
                                   o.outputs or {}, groups=case.groups)
            if not mism:
                return None
            text = "\n".join(str(m) for m in mism)
            return self._finding(case, name, "mismatch", f"the interpreter on the program "
                                 f"before and after the pass:\n{text}\n{said}", impl.spec)
        if o.status == "rejected":
            return rejected(case, impl, said)
        if o.status == "timeout":
            if limit < self.timeout:
                return False  # cut by the campaign's end
            kind = "hang"
        elif o.finding:
            kind = o.finding
        elif o.status == "failed":
            kind = "ub" if o.ub_kinds else "failed"
        elif "changed the signature" in said or "has no function" in said:
            kind = "signature"
        else:
            kind = "crash"
        return self._finding(case, name, kind, f"{o.status}:\n{said}", impl.spec,
                             cause=_cause(said) if kind == "roundtrip" else "")

    def _analysis(self, case: FuzzCase, name: str, limit: float, printed: list):
        """An analysis pass: it ends, exits 0, prints something, and passes the IR on."""
        from tlinterp.impl.command import TOOL_MEMORY, describe_exit, expand_template
        from tlinterp.impl.command import run_command as run
        from tlinterp.impl.template import write_kernel
        from tlinterp.io.foreigntext import shown

        both = self.command((name, PRINT))
        with tempfile.TemporaryDirectory(prefix="tl-pass-") as tmp:
            tl = write_kernel(job_of(case), tmp)
            done = run(expand_template(both, {"tl": tl}), limit, memory=TOOL_MEMORY)
            if done.code == 0 and not printed:
                printed.append(run(expand_template(self.command((PRINT,)), {"tl": tl}),
                                   limit, memory=TOOL_MEMORY))
            for d in (done, *printed):
                d.stdout, d.stderr = (x.replace(tmp + "/", "") for x in (d.stdout, d.stderr))
        said = shown(done.text.strip())[-4000:] or "(no output)"
        if done.code is None:
            if "no answer" in done.problem and limit < self.timeout:
                return False
            kind = "hang" if "no answer" in done.problem else "crash"
            return self._finding(case, name, kind, f"{done.problem}\n{said}", command=both)
        if done.code != 0:
            from fuzz.campaign.rejections import RejectedConstruct, construct_of
            from tlinterp.impl.command import rejection

            r = rejection(done, self.options.reject_status)
            if r is not None and r.status == "rejected":
                c = construct_of(case.program, said)
                return RejectedConstruct(case, "rejected-construct", f"{self.tool} rejected "
                                         f"a valid, UB-free program ({c}):\n{said}",
                                         impl=(f"ir:{self.command((CHECK,))}", self.options),
                                         construct=c)
            return self._finding(case, name, "crash", f"ended with "
                                 f"{describe_exit(done.code)}:\n{said}", command=both)
        plain = printed[0] if printed else None
        if plain is None or plain.code != 0:
            return None  # the IR printer itself fails: dump-ir's own run reports it
        if not done.stdout.endswith(plain.stdout):
            return self._finding(case, name, "analysis", "the IR after the analysis is not "
                                 f"the IR before it:\n--- `{self.command((PRINT,))}`:\n"
                                 f"{shown(plain.stdout)}\n--- after {name}:\n"
                                 f"{shown(done.stdout)[-4000:]}", command=both)
        if not done.stdout[:len(done.stdout) - len(plain.stdout)].strip():
            return self._finding(case, name, "analysis", "the analysis printed nothing",
                                 command=both)
        return None
