"""Kernels several test modules share (one copy each)."""

from corpus.cases.views import SAMPLE_KERNEL as SAMPLE

__all__ = ["SAMPLE"]
