"""The valid v0.4 corpus (the cases written in v0.4 and the v0.3 cases in their v0.4 form, as
`tlconform --lang v0.4` selects them) through our OpenCL lowering on Intel's CPU runtime and on
pocl, as CI runs it (issue 43 item 4): every case passes. In-process through the conformance
machinery (fuzz/conform: run_all, judge), one build per case; the SPMD programs too, since valid
cases have no undefined behaviour that could take a driver down. CI installs both devices
(tests/opencl_devices.py: a missing one fails there)."""

from __future__ import annotations

import pytest
from opencl_devices import require_device

from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from fuzz.conform.judge import PASS
from fuzz.conform.migrated import migrate_cases
from tlinterp.impl import ImplOptions
from tlinterp.impl import resolve as from_spec

pytestmark = [pytest.mark.opencl,
              # Intel's build log is never empty ("Compilation started", ...)
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]


@pytest.fixture(scope="module")
def cases() -> list:
    """The valid cases of `tlconform --lang v0.4`, in corpus order."""
    valid = [c for c in load_corpus(default_corpus()) if c.kind == "valid"]
    migrated, _ = migrate_cases(valid)  # the rest: v0.3 constructs v0.4 cannot spell
    v03 = {c.id: c for c in migrated}
    out = [v03.get(c.id, c) for c in valid if c.lang == "v0.4" or c.id in v03]
    assert sum(c.lang == "v0.4" and "migrated" not in c.meta for c in out) >= 80
    return out


@pytest.mark.parametrize("name", ["intel", "pocl"])
def test_the_valid_v04_corpus_passes_through_our_lowering(name: str, cases: list) -> None:
    impl = from_spec("opencl", ImplOptions(device=require_device(name)))
    impl.isolate_spmd = False
    verdicts = run_all(impl, cases)
    assert len(verdicts) == len(cases)
    failures = [f"{v.case.id}: {v.detail}" for v in verdicts if v.status != PASS]
    assert not failures, f"{len(failures)} of {len(cases)} cases fail on {name}:\n" + \
        "\n".join(failures)
