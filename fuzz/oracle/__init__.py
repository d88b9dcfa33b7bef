"""The oracle: when do two implementations' outputs agree (exactly, or within an error bound)."""

from fuzz.oracle.compare import Mismatch, compare_outputs, explain

__all__ = ["Mismatch", "compare_outputs", "explain"]
