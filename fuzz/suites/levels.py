"""`tlfuzz --compare-levels 'spirv:tinytc {flags} {tl}' --variants -O0 -O2 ...`: one
compiler at several optimisation levels or flag sets, each a separate implementation.

Each generated kernel runs once per variant (`{flags}` replaced by the variant's flags).
The first variant is the baseline; every other one is compared with it:

- both run: their outputs are compared by the oracle's rules (integers exactly, floats
  within the oracle's bounds; a variant with `unsafe` in its flags, such as
  `-f unsafe-fp-math` (not `-f no-unsafe-fp-math`), also within a relative
  --level-tolerance): a difference is a
  `levels-differ` finding;
- one runs and the other does not (rejects, crashes, fails, hangs): `levels-status`.

Neither needs the interpreter, so a difference is a finding also for a kernel the
interpreter cannot run; where it can, the message says which variant agrees with it, and
a variant that differs from it while all variants agree with each other is a
`levels-mismatch` (the compiler's bug at every level). Findings are keyed by the variants
and the kind; a valid program a variant rejects is a `rejected-construct` finding.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from fuzz.campaign.findings import Finding
from fuzz.strategies import FuzzCase
from fuzz.suites.suite import Suite, SuiteFinding, job_of
from tlinterp.impl.base import ImplOptions

__all__ = ["LevelSuite", "tolerated", "unsafe"]


def unsafe(variant: str) -> bool:
    """Whether a variant's flags ask for unsafe floating-point math (`-f unsafe-fp-math`,
    not `-f no-unsafe-fp-math`)."""
    return re.search(r"(?<!no-)unsafe", variant) is not None


def tolerated(mismatch, tolerance: float) -> bool:
    """Whether a float element's difference lies within the relative `tolerance`."""
    e, a = mismatch.expected, mismatch.actual
    if not all(isinstance(x, (float, complex, np.floating, np.complexfloating)) for x in (e, a)):
        return False  # integers, shapes, whole arrays: exact
    if not (np.isfinite(e) and np.isfinite(a)):
        return bool(np.isnan(e) and np.isnan(a)) or e == a
    return abs(e - a) <= tolerance * max(1.0, abs(e), abs(a))


class LevelSuite(Suite):
    """One compiler command at several flag sets (see the module docstring)."""

    def __init__(self, specs: list[str], variants: list[str], options: ImplOptions,
                 timeout: float, tolerance: float):
        self.specs, self.variants, self.options = specs, variants, options
        self.timeout, self.tolerance = timeout, tolerance
        self.name = " / ".join(variants) + f" of {specs[0]}"
        self.on_a_device = specs[0]
        self._impls: Optional[list] = None

    @classmethod
    def make(cls, template: str, variants: list[str], options: ImplOptions, timeout: float,
             tolerance: float) -> LevelSuite:
        """ValueError for a template without {flags}, fewer than two variants, or a spec
        the registry does not resolve."""
        from tlinterp.impl import SpecError, resolve

        if "{flags}" not in template:
            raise ValueError("--compare-levels: the implementation needs {flags}, where each "
                             "variant's flags go (e.g. 'spirv:tinytc {flags} {tl}')")
        if len(variants) < 2:
            raise ValueError("--variants: name at least two flag sets to compare")
        if len(set(variants)) < len(variants):
            raise ValueError("--variants: a flag set is named twice")
        specs = [template.replace("{flags}", v) for v in variants]
        try:
            for s in specs:  # a usage error now, not in every job
                close = getattr(resolve(s, options), "close", None)
                if close is not None:
                    close()
        except SpecError as e:
            raise ValueError(f"--compare-levels: {e}") from None
        return cls(specs, variants, options, timeout, tolerance)

    def runs_per_case(self) -> int:
        return len(self.specs)

    def impls(self) -> list:
        if self._impls is None:
            from tlinterp.impl import resolve

            self._impls = [resolve(s, self.options) for s in self.specs]
        return self._impls

    def check_case(self, case: FuzzCase, expected, problem, limit) -> Optional[list[Finding]]:
        from fuzz.campaign.rejections import rejected
        from fuzz.oracle.compare import compare_outputs
        from tlinterp.io.foreigntext import shown

        job = job_of(case)
        runs = [impl.run(job, limit) for impl in self.impls()]
        if limit < self.timeout and any(o.status == "timeout" for o in runs):
            return None  # the campaign's end cut a run short
        # the interpreter's own trouble with the kernel is a finding as in every campaign
        found: list[Finding] = [problem] if problem is not None else []

        def differ(a: int, b: int) -> list:
            mism = compare_outputs(case.program, case.func, case.args, runs[a].outputs or {},
                                   runs[b].outputs or {}, groups=case.groups)
            if any(unsafe(self.variants[i]) for i in (a, b)):
                mism = [m for m in mism if not tolerated(m, self.tolerance)]
            return mism

        agrees: list[Optional[bool]] = []
        for o in runs:
            if expected is None or o.status != "ok":
                agrees.append(None)
            else:
                agrees.append(not compare_outputs(case.program, case.func, case.args,
                                                  expected, o.outputs or {},
                                                  groups=case.groups))
        reference = self._reference(problem, agrees)
        for i in range(1, len(runs)):
            a, b = runs[0], runs[i]
            pair = f"{self.variants[0]} vs {self.variants[i]}"
            if a.status == "ok" and b.status == "ok":
                mism = differ(0, i)
                if not mism:
                    continue
                kind, text = "differ", "\n".join(str(m) for m in mism[:20])
                what = (f"{pair}: the outputs differ ({self.variants[0]}'s as expected, "
                        f"{self.variants[i]}'s as got):\n{text}")
            elif a.status != b.status:
                kind = "status"
                what = (f"{pair}: {self.variants[0]} {a.status}, {self.variants[i]} "
                        f"{b.status}:\n" + "\n".join(
                            f"--- {v}: {shown(o.message.strip())[-2000:] or '(no message)'}"
                            for v, o in ((self.variants[0], a), (self.variants[i], b))))
            else:
                continue
            odd = i if agrees[i] is not True else 0  # the variant to rerun: not the good one
            found.append(SuiteFinding(case, f"levels-{kind}", f"{what}\n{reference}",
                                      impl=(self.specs[odd], self.options),
                                      construct=f"{pair}: {kind}"))
        for i, o in enumerate(runs):
            if o.status == "rejected" and not any(f.kind == "rejected-construct"
                                                  for f in found):
                found.append(rejected(case, self.impls()[i], shown(o.message.strip())))
        if len(found) == (problem is not None) and agrees and all(x is False for x in agrees):
            mism = compare_outputs(case.program, case.func, case.args, expected,
                                   runs[0].outputs or {}, groups=case.groups)
            text = "\n".join(str(m) for m in mism[:20])
            found.append(SuiteFinding(case, "levels-mismatch", f"every variant "
                                      f"({', '.join(self.variants)}) agrees with the others "
                                      f"and differs from the interpreter:\n{text}",
                                      impl=(self.specs[0], self.options),
                                      construct="every variant: differs from the interpreter"))
        return found

    def _reference(self, problem, agrees: list) -> str:
        """A line on what the interpreter says about the variants."""
        if problem is not None:
            first = str(problem.message).splitlines()[0] if problem.message else problem.kind
            return f"the interpreter cannot run this kernel ({first}): no reference"
        good = [v for v, x in zip(self.variants, agrees) if x is True]
        bad = [v for v, x in zip(self.variants, agrees) if x is False]
        if not good and not bad:
            return "no variant ran to compare with the interpreter"
        return (f"the interpreter agrees with {', '.join(good) or 'no variant'}"
                + (f", not with {', '.join(bad)}" if bad else ""))
