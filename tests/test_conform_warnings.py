"""tlconform and warnings: a valid case may expect a warning; whether an implementation
reported it is recorded (in-process, from a command's output) but never fails the case."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fuzz.conform.corpus import default_corpus, load_corpus
from fuzz.conform.impl import outcome_of
from fuzz.conform.judge import judge
from fuzz.conform.report import log_lines, summary_tables
from tlinterp.impl import mentioned_warnings
from tlinterp.impl import resolve as from_spec
from tlinterp.impl.inprocess import InProcess
from tlinterp.impl.template import Template

ROOT = Path(__file__).resolve().parent.parent
CASE = "valid/groups/offset_omitted_warning"


def case():
    [c] = load_corpus(default_corpus(), CASE)
    return c


def test_the_corpus_case_expects_the_warning():
    c = case()
    assert c.meta["warning"]["range"] == "3.13-14"
    assert c.meta["warning"]["message"].startswith("the type written for %X lacks its offset")


def test_reference_reports_the_expected_warning():
    impl = from_spec("tlinterp")
    c = case()
    v = judge(c, outcome_of(impl, c, None), impl)
    assert (v.status, v.warning_match) == ("pass", "yes")
    assert "expected warning reported" in v.detail
    assert any("expected warning reported: yes" in line for line in log_lines([v], "tlinterp"))


def test_a_missing_warning_is_reported_but_not_a_failure():
    def quiet(job):  # right outputs, no warning
        from tlinterp.interp import run

        return run(job.source, job.args, func=job.func, groups=job.groups)

    impl = InProcess("quiet", quiet)
    c = case()
    v = judge(c, outcome_of(impl, c, None), impl)
    assert (v.status, v.warning_match) == ("pass", "no")
    assert "not reported (not a failure)" in v.detail
    [table] = summary_tables([v])[:1]
    assert table.columns[-1].header == "diagnostics match"
    assert list(table.columns[-1].cells) == ["0/1 warnings"]


def test_a_command_reports_warnings_on_its_output():
    template = (f"{sys.executable} -m tlinterp.cli {{kernel}} --args {{args}} --out {{out}}"
                " [--groups {groups}]")
    impl = Template(template)
    c = case()
    o = outcome_of(impl, c, 120)
    assert o.status == "ok", o.message
    assert o.warnings and o.warnings[0][0] == "3.13-14"
    assert judge(c, o, impl).warning_match == "yes"
    np.testing.assert_array_equal(o.outputs["s"], c.expected()["s"])


def test_warning_lines_are_parsed():
    text = ("k.tl:3.13-14: warning: the type written lacks its offset\n  load\n"
            "k.tl:4.1-2: not a warning\nk.tl:5.1-6.2: warning: two lines\n")
    assert mentioned_warnings(text) == [("3.13-14", "the type written lacks its offset"),
                                        ("5.1-6.2", "two lines")]
