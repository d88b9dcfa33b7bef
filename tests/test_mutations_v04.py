"""The v0.4 mutants (fuzz.mutants.interp_v04): the interpreter as a `python:` plug-in with
one rule changed. Each planted bug is observable (the v0.4 corpus run through tlconform catches
it, with a wrong result or a reported failure, never a crash of the plug-in), the unmutated
plug-in passes the same corpus, and installing mutants leaves the reference alone."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from fuzz.conform.cli import main as tlconform
from fuzz.mutants import interp_v04 as mutations_v04
from fuzz.mutants import lowering_v03 as mutations
from fuzz.mutants import registry

ROOT = Path(__file__).resolve().parents[1]


def _conform(spec: str, tmp_path, *extra: str) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    status = tlconform(["--lang", "v0.4", "--impl", spec, "-q", "--json", str(report),
                        *extra])
    return status, json.loads(report.read_text())


def test_at_least_12_mutants_spanning_every_category_each_a_plugin():
    assert len(mutations_v04.MUTATIONS) >= 12
    seen = {m.category for m in mutations_v04.MUTATIONS.values()}
    assert seen == set(mutations_v04.CATEGORIES)
    assert not set(mutations_v04.MUTATIONS) & set(registry.known())  # one registry of names
    for name in mutations_v04.MUTATIONS:
        assert callable(getattr(mutations_v04, name))
    with pytest.raises(AttributeError):
        getattr(mutations_v04, "no-such-bug")


def test_the_unmutated_plugin_passes_the_v04_corpus(tmp_path, capsys):
    status, report = _conform(mutations_v04.plugin_spec(mutations_v04.REFERENCE), tmp_path)
    assert status == 0, [c["id"] for c in report["cases"] if c["status"] == "fail"]
    assert report["summary"]["fail"] == 0 and report["summary"]["pass"] > 0


@pytest.mark.parametrize("name", sorted(mutations_v04.MUTATIONS))
def test_every_mutant_fails_a_v04_corpus_case(name, tmp_path, capsys):
    mutations.HITS[0] = 0
    # the cases written in v0.4 (not the migrated v0.3 ones): the bugs are in v0.4 rules
    status, report = _conform(mutations_v04.plugin_spec(name), tmp_path, "-x",
                              "--filter", "*v04*")
    failed = [c for c in report["cases"] if c["status"] == "fail"]
    assert status == 1 and failed, f"{name}: no v0.4 corpus case sees it"
    assert mutations.HITS[0] > 0  # the wrong branch was taken: the failure is the mutant's
    # a wrong result, or a failure the plug-in reports (undefined behaviour it now sees); a
    # crashing plug-in would be no realistic bug
    assert all(c["outcome"] in ("ok", "failed") for c in failed), failed
    assert mutations_v04.active() is None


def test_installed_mutants_leave_the_reference_alone(tmp_path, capsys):
    """Every mutant's patches installed in this process, and a mutant running in another
    thread all the while: the reference here still passes the whole v0.4 corpus (the gate is
    per thread), and the other thread's results are the mutant's."""
    import numpy as np

    for name in mutations_v04.MUTATIONS:
        mutations_v04.install(name)
    case = ROOT / "corpus" / "valid" / "v04" / "subgroup_ops_i32"
    source = case.with_suffix(".tl").read_text()
    args = dict(np.load(case.with_suffix(".args.npz")))
    expected = np.load(case.with_suffix(".expected.npz"))["R"]
    stop, wrong = threading.Event(), []

    def mutant() -> None:
        while not stop.is_set():
            out = mutations_v04.run("sg-scan-exclusive", source, dict(args))
            wrong.append(not np.array_equal(out["R"], expected))

    other = threading.Thread(target=mutant)
    other.start()
    try:
        status, report = _conform("interp", tmp_path, "--filter", "*v04*")
    finally:
        stop.set()
        other.join()
    assert status == 0, [c["id"] for c in report["cases"] if c["status"] != "pass"]
    assert wrong and all(wrong)


def test_low_precision_mutants_keep_single_values_single():
    """A rounding mutant hands back a value of the shape it got: one bf16/f16 value stays
    0-d (an atomic update of one shared element stores it into an array element; a 1-element
    array there made the plug-in crash instead of computing)."""
    import numpy as np

    assert mutations_v04._bf16_truncate(np.float32(-0.1)).shape == ()
    assert mutations_v04._f16_flush(np.float32(1e-6)).shape == ()
    source = """func @k(%A: memref<bf16 x 4>, %M: memref<bf16>)
        attributes{subgroup_size=8, work_group_size=[8, 1]} {
    parallel {
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %c4 = constant 4 : index
        %i = rem %ki, %c4 : index
        %x = load %A[%i] : bf16
        %old = atomic_max %x, %M[] : bf16
    }
}
"""
    import ml_dtypes

    args = {"A": np.array([0.5, -2.0, 3.25, 1.0], ml_dtypes.bfloat16),
            "M": np.array(-8.0, ml_dtypes.bfloat16)}
    for name in ("bf16-truncate", "f16-flush-subnormals"):
        out = mutations_v04.run(name, source, dict(args))
        assert float(np.asarray(out["M"]).astype(np.float32)) == 3.25
