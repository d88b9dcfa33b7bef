"""Deliberate lowering bugs for testing the fuzzer itself (`tlfuzz --mutation NAME`).

Each mutation monkeypatches one rule of tlgpu's lowering into a wrong one, in the process
that runs the OpenCL side. A campaign against a mutated backend must find the bug and shrink
it to a small program; tests/test_fuzz_mutations.py checks that.
"""

from __future__ import annotations

import dataclasses


def _wrong_transpose() -> None:
    """op(X) reads X untransposed (keeps the transposed shape)."""
    import tlgpu.lower_collectives as lc

    op = lc._op
    lc._op = lambda v, trans: (op(v, False)[0], op(v, trans)[1])


def _off_by_one_k() -> None:
    """Reductions stop one step early."""
    import tlgpu.lower_collectives as lc

    problem = lc.problem

    def wrong(lw, inst):
        p = problem(lw, inst)
        return dataclasses.replace(p, K=f"(({p.K}) - 1)") if p.K is not None else p

    lc.problem = wrong


def _missing_barrier() -> None:
    """The barriers the lowering inserts between dependent work-group steps are left out."""
    import tlgpu.lower_function as lf

    def access(self, w, reads, writes):
        self.pending.add(reads, writes)

    lf.FunctionLowerer.access = access


def _crash() -> None:
    """The lowering kills its process (as a crashing OpenCL compiler would)."""
    import os

    import tlgpu.lower_function as lf

    lf.FunctionLowerer.lower = lambda self: os._exit(139)


MUTATIONS = {
    "wrong-transpose": _wrong_transpose,
    "off-by-one-k": _off_by_one_k,
    "missing-barrier": _missing_barrier,
    "crash": _crash,
}


def apply(name: str) -> None:
    """Patch tlgpu with the named mutation (KeyError for unknown names)."""
    MUTATIONS[name]()
