"""The vendor reports under corpus/findings/COMPILER/NAME/ stay true: every one has a README and
our own kernel; an `accepts-*` kernel is one the reference rejects (exit 2), every other one
checks; where a report has arguments, its expected.npz is what the reference computes from
them now (a change of the reference that moves a reported value fails here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tlinterp
from tlinterp.io.args import load_npz
from tlinterp.lang.diagnostics import TLError

FINDINGS = Path(__file__).resolve().parents[1] / "corpus" / "findings"
REPORTS = sorted(p for p in FINDINGS.glob("*/*") if p.is_dir())


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def test_there_are_reports():
    assert len(REPORTS) >= 10, REPORTS


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_report_is_complete_and_the_reference_still_says_what_it_quotes(report: Path):
    assert (report / "README.md").is_file() and (report / "kernel.tl").is_file()
    assert sum(f.stat().st_size for f in report.rglob("*") if f.is_file()) < 50_000
    source = (report / "kernel.tl").read_text(encoding="utf-8")
    # each compiler release speaks one version (a kernel of only `barrier` reads as both)
    lang = "v0.4" if report.parent.name.startswith("tinytc-0.4") else "v0.3"
    if report.name.startswith("accepts-"):  # an invalid program the compiler accepted
        with pytest.raises(TLError) as e:
            tlinterp.check(tlinterp.parse(source, filename="kernel.tl", lang=lang))
        assert e.value.exit_status == 2
        return
    program = tlinterp.check(tlinterp.parse(source, filename="kernel.tl", lang=lang))
    if not (report / "args.npz").exists():
        return
    args = load_npz(str(report / "args.npz"))
    expected = load_npz(str(report / "expected.npz"))
    got = tlinterp.run(program, args)
    assert set(got) == set(expected)
    for key, want in expected.items():
        have = _bits(np.asarray(got[key]))  # bf16: files hold bit patterns, runs give bf16
        want = _bits(want)
        assert have.dtype == want.dtype and have.shape == want.shape, key
        np.testing.assert_array_equal(have, want, err_msg=key)  # NaN equals NaN here
