"""Implementations of the tensor language behind one interface, found by name.

    impl = resolve("interp")                          # or "opencl", "python:mod:fn", a template,
    outcome = impl.run(Job(source, args, func, groups), timeout=10)   # "opencl-c:cmd {tl}", ...

`tlrun --backend`, `tlconform --impl` and `tlfuzz --impl` resolve names here. Packages add
implementations through the `tensor_language.implementations` entry-point group (see
docs/conformance.md); this package knows no backend itself.
"""

from tlinterp.impl.base import (
    UB_KINDS,
    Implementation,
    ImplOptions,
    Job,
    Outcome,
    SpecError,
    mentioned_kinds,
    mentioned_warnings,
    outcome_of_error,
)
from tlinterp.impl.registry import GROUP, available, resolve

__all__ = ["GROUP", "UB_KINDS", "ImplOptions", "Implementation", "Job", "Outcome", "SpecError",
           "available", "mentioned_kinds", "mentioned_warnings", "outcome_of_error",
           "resolve"]
