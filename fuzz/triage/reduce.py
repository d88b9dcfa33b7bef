"""Reduce a device-compiler suspect at the OpenCL C level with Lithium (`lithium-reducer`,
Mozilla's line/brace/token delta reducer, used as a library; `pip install tlinterp[triage]`).

Only the kernel's body is reduced (the signature stays, so the finding's arguments still
fit). A candidate is kept while all of these hold:
- the suspect device still disagrees with pocl;
- on some element where they disagree, pocl still gives the interpreter's original result
  (so the finding's difference survives, not only new ones of the reduced code; asking this
  of every such element keeps every store that an original difference was overwritten by);
- Oclgrind (when installed) runs it to the end and reports nothing.
Candidates that cannot compile (unbalanced brackets, a variable used but no longer declared)
are rejected before any compiler sees them: most of a delta reducer's tries are such.
A candidate must also stay standard OpenCL C 1.2 (`strict_problem`: clang-15's OpenCL mode with
-pedantic-errors) when the original was: token deletion easily makes GNU C such as `a ?: b`,
which a lenient device compiler takes and a vendor's may not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from fuzz.triage.clexec import Outcome, Prepared, Target, differing, run_source

MISSING = ("OpenCL C reduction needs the lithium reducer: pip install 'tlinterp[triage]' "
           "(or pip install lithium-reducer)")


class ReducerMissing(RuntimeError):
    pass


@dataclass
class Reduction:
    source: str
    body_lines: int  # non-blank lines of the kernel body
    original_lines: int
    tests: int
    seconds: float
    timed_out: bool


def _lithium():
    try:
        from lithium import strategies, testcases
    except ImportError:
        raise ReducerMissing(MISSING) from None
    return strategies, testcases


def split_kernel(source: str, kernel: str) -> tuple[str, list[str], str]:
    """(text up to the kernel's opening brace, body lines, closing brace and the rest)."""
    lines = source.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if re.match(rf"void {re.escape(kernel)}\(", ln))
    open_at = next(i for i in range(start, len(lines)) if lines[i].rstrip() == "{")
    close_at = next(i for i in range(open_at + 1, len(lines)) if lines[i].rstrip() == "}")
    return ("".join(lines[:open_at + 1]), lines[open_at + 1:close_at],
            "".join(lines[close_at:]))


def body_size(body: list[str]) -> int:
    return sum(1 for ln in body if ln.strip())


_TYPE = (r"(?:const\s+)?(?:(?:global|local|private)\s+)?"
         r"(?:u?char|u?short|u?int|u?long|float|double|bool|half|size_t)\s*\*?\s*")
_DECL = re.compile(rf"(?:{_TYPE}|,\s*)\b((?:v|tl)_\w+)\b")
_USE = re.compile(r"\b((?:v|tl)_\w+)\b")


# `const long v_x = EXPR;` (one name, no comma at the top level is checked by the caller's
# test: a multi-name declaration fails to compile once its first name is inlined)
_ONE_DECL = re.compile(rf"^\s*{_TYPE}((?:v|tl)_\w+)\s*=\s*([^;,]+);\s*$")


def plausible(head: str, body: str) -> bool:
    """False for a body that cannot compile: unbalanced brackets or an undeclared name."""
    for o, c in ("()", "[]", "{}"):
        depth = 0
        for ch in body:
            depth += (ch == o) - (ch == c)
            if depth < 0:
                return False
        if depth:
            return False
    # in order: a name is usable only after the statement declaring it (a reducer easily
    # makes `long x = 1 | x;`, an uninitialised read no checker sees in private memory)
    declared = set(_DECL.findall(head))
    for statement in re.split(r"[;{}]", body):
        own = set(_DECL.findall(statement))
        if not set(_USE.findall(statement)) - own <= declared:
            return False
        for name in own:
            if len(re.findall(rf"\b{name}\b", statement)) > 1:
                return False
        declared |= own
    return True


STRICT = ("-x", "cl", "-cl-std=CL1.2", "-pedantic-errors", "-fsyntax-only", "-target",
          "spir64", "-Xclang", "-finclude-default-header")


def strict_problem(source: str, timeout: float = 30.0) -> Optional[str]:
    """Why `source` is not standard OpenCL C 1.2 (clang's first error), None when it is;
    "unchecked: ..." when no clang-15 (or clang) is installed or it does not answer."""
    clang = shutil.which("clang-15") or shutil.which("clang")
    if clang is None:
        return "unchecked: no clang-15 to check standard OpenCL C"
    try:
        r = subprocess.run([clang, *STRICT, "-"], input=source, capture_output=True,
                           text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unchecked: {e}"
    if r.returncode == 0:
        return None
    return next((ln for ln in r.stderr.splitlines() if "error:" in ln), r.stderr.strip()[:300])


def _agrees_somewhere(expected, reference, mask) -> bool:
    want, got = np.asarray(expected), np.asarray(reference)
    return want.shape == got.shape and bool((want[mask] == got[mask]).any())


def interesting_for(prepared: Prepared, case, expected: dict, suspect: Target,
                    reference: Target, checker: Optional[Target],
                    options: tuple[str, ...],
                    runner: Callable[..., Outcome] = run_source,
                    reference_options: Optional[tuple[str, ...]] = None
                    ) -> Callable[[str], bool]:
    """The reduction's test for one candidate source (see the module doc); `runner` is
    `clexec.run_source` or an `clexec.Isolated` one. Without pocl, the reference may be the
    suspect device itself with `reference_options` (e.g. optimisation disabled)."""
    ref_options = options if reference_options is None else reference_options

    def run(target: Target, source: str, opts: tuple[str, ...] = options) -> Outcome:
        return runner(target, source, prepared.kernel, prepared.function, case.args,
                      case.groups, prepared.geometry, prepared.local_bytes, opts)

    def test(source: str) -> bool:
        ref = run(reference, source, ref_options)
        if ref.outputs is None:
            return False
        if (reference == suspect and ref_options == options) or (
                suspect.device == reference.device and ref_options == options
                and suspect.source_for(source, options) == source):
            return False  # the same compiler on the same code cannot disagree
        sus = run(suspect, source)
        if sus.outputs is None:
            return False
        diff = differing(ref.outputs, sus.outputs)
        if not any(_agrees_somewhere(expected[key], ref.outputs[key], mask)
                   for key, mask in diff.items()):
            return False
        if checker is not None:
            chk = run(checker, source)
            if chk.outputs is None or chk.reports:
                return False
        return True

    return test


def reduce_kernel(source: str, kernel: str, test: Callable[[str], bool],
                  time_limit: float = 120.0, stop_at_lines: int = 0,
                  progress: Callable[[int, int, float], None] = lambda n, t, s: None
                  ) -> Reduction:
    """Shrink the kernel body of `source` while `test` holds, for at most `time_limit` s
    (or until it has at most `stop_at_lines` lines).
    `progress(body_lines, tests_run, seconds)` is called after every kept candidate."""
    strategies, testcases = _lithium()
    t0 = time.time()
    head, body, tail = split_kernel(source, kernel)
    original = body_size(body)
    tests = 0
    # comments (the line table) and blank lines first: they never matter to a compiler
    stripped = [ln for ln in body if ln.strip() and not ln.strip().startswith("//")]
    if test(head + "".join(stripped) + tail):
        body = stripped
    tests += 1
    timed_out = stop = False
    # keep standard C only where the original is (a kernel that needs OpenCL C 2.0 is not
    # checked against 1.2); without clang the reduction goes on unchecked
    strict = strict_problem(source) is None

    def standard(text: str) -> bool:
        return not strict or strict_problem(head + text + tail) is None

    scratch = tempfile.mkdtemp(prefix="tl-reduce-")

    def attempt(tc_type, strategy) -> bool:
        nonlocal body, tests, timed_out, stop
        tc = tc_type()
        tc.before, tc.after = b"", b""
        tc.filename = os.path.join(scratch, "body.cl")  # Lithium rewrites files in some passes
        tc.split_parts("".join(body).encode())
        # line breaks stay: the result is read (and measured) in lines
        tc.reducible = [bool(part.strip()) for part in tc.parts]
        it = strategy.reduce(tc)
        changed = False
        for cand in it:
            if time.time() - t0 > time_limit or body_size(body) <= stop_at_lines:
                stop = True
                timed_out = time.time() - t0 > time_limit
                it.feedback(False)
                break
            text = (cand.before + b"".join(cand.parts) + cand.after).decode()
            ok = plausible(head, text) and standard(text)
            if ok:
                tests += 1
                ok = test(head + text + tail)
            it.feedback(ok)
            if ok:
                changed = True
                body = text.splitlines(keepends=True)
                progress(body_size(body), tests, time.time() - t0)
        return changed

    def inline_pass() -> bool:
        """Lithium only deletes. This pass replaces, the way C-Reduce's copy propagation
        does: a one-name declaration goes and its initializer takes the place of its uses
        (a candidate like any other, so the test decides whether that kept the meaning)."""
        nonlocal body, tests, timed_out, stop
        changed = False
        k = len(body) - 1
        while k >= 0:
            if time.time() - t0 > time_limit or body_size(body) <= stop_at_lines:
                stop, timed_out = True, time.time() - t0 > time_limit
                break
            m = _ONE_DECL.match(body[k]) if k < len(body) else None
            if m:
                name, init = m.group(1), m.group(2)
                use = re.compile(rf"\b{name}\b")
                rest = [use.sub(lambda _, e=init: f"({e})", ln) for ln in body[k + 1:]]
                cand = body[:k] + rest
                text = "".join(cand)
                if plausible(head, text) and standard(text):
                    tests += 1
                    if test(head + text + tail):
                        body, changed = cand, True
                        progress(body_size(body), tests, time.time() - t0)
            k -= 1
        return changed

    plan = [(testcases.TestcaseLine, strategies.Minimize),
            (testcases.TestcaseLine, strategies.MinimizeBalancedPairs),
            (testcases.TestcaseLine, strategies.CollapseEmptyBraces),
            (testcases.TestcaseSymbol, strategies.Minimize)]
    progress_made = True
    while progress_made and not stop:
        progress_made = False
        for tc_type, strategy in plan:
            if attempt(tc_type, strategy()):
                progress_made = True
            if stop:
                break
        if not stop and inline_pass():
            progress_made = True
    shutil.rmtree(scratch, ignore_errors=True)
    return Reduction(head + "".join(body) + tail, body_size(body), original, tests,
                     time.time() - t0, timed_out)
