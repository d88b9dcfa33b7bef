"""Shared test configuration: Hypothesis profiles ("ci" when $CI is set, "dev" otherwise),
and fixtures more than one test file needs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
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


@pytest.fixture
def corpus_copy(tmp_path) -> Callable[[Sequence[str]], Path]:
    """`corpus_copy(cases)`: a corpus directory under tmp_path holding only the given cases
    (ids such as "valid/blas/axpby_f32_canonical_v0", each with all its files)."""
    def copy(cases: Sequence[str]) -> Path:
        root = tmp_path / "corpus"
        for kind in ("valid", "invalid", "undefined"):
            (root / kind).mkdir(parents=True)
        for case in cases:
            src = Path(__file__).resolve().parents[1] / "corpus" / case
            (root / case).parent.mkdir(parents=True, exist_ok=True)
            for f in src.parent.glob(src.name + ".*"):
                (root / case).parent.joinpath(f.name).write_bytes(f.read_bytes())
        return root
    return copy
