"""Shared test configuration: Hypothesis profiles ("ci" when $CI is set, "dev" otherwise)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session", autouse=True)
def _checkout_untouched():
    """The suite writes nothing into the checkout's top directory (pocl's k.dot, a CLI run
    with the checkout as its working directory): what a test leaves there fails the run."""
    root = Path(__file__).resolve().parents[1]
    before = set(os.listdir(root))
    yield
    # the tools' own caches (.hypothesis, .pytest_cache, ...) are the ones .gitignore names
    tools = {".hypothesis", ".pytest_cache", ".ruff_cache", ".benchmarks", "__pycache__"}
    new = sorted(set(os.listdir(root)) - before - tools)
    assert not new, f"the test suite wrote into the checkout: {new}"
