"""How an external tool says "no" (exit statuses, diagnostics, --reject-status), how tlconform
judges where a rejection points, and the implementation flags shared by tlrun, tlconform and
tlfuzz."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from fuzz.campaign.cli import _impl_ref
from fuzz.campaign.cli import build_parser as tlfuzz_parser
from fuzz.campaign.cli import main as tlfuzz
from fuzz.conform.cli import _parser as tlconform_parser
from fuzz.conform.cli import main as tlconform
from tlinterp.cli import tlrun as tlrun
from tlinterp.impl import ImplOptions, Job
from tlinterp.impl.base import option_words, tlrun_command
from tlinterp.impl.command import rejection, run_command
from tlinterp.impl.flags import impl_options
from tlinterp.impl.template import Template

# a real invalid corpus case: `%t = alloca -> memref<f32x?x4>` blamed at 2.3-32
CASE = "invalid/alloca_dynamic"
WANT_RANGE, WANT_MESSAGE = "2.3-32", "alloca needs a static shape and stride"

SCRIPTS = {  # how a fake compiler ends: (shell body, given "$1" = the kernel file)
    "diagnostic-exit-1": f'echo "$1:{WANT_RANGE}: no dynamic allocas" >&2; exit 1',
    "silent-exit-1": "echo 'internal compiler error' >&2; exit 1",
    "diagnostic-exit-2": f'echo "$1:{WANT_RANGE}: no dynamic allocas" >&2; exit 2',
    "silent-exit-2": "exit 2",
    "signal": "kill -KILL $$",
}


def fake(tmp_path, body: str) -> str:
    """A command template running a compiler script written in tmp_path."""
    script = tmp_path / "fakecc.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    return f"sh {shlex.quote(str(script))} {{kernel}}"


@pytest.mark.parametrize("script, reject_status, want", [
    ("diagnostic-exit-1", (1,), "rejected"),
    ("diagnostic-exit-1", (2,), "failed"),  # a template's exit 1: a run-time failure
    ("silent-exit-1", (1,), "crashed"),  # exit 1 is also how compilers crash: no place named
    ("silent-exit-1", (2,), "failed"),
    ("diagnostic-exit-2", (1, 2), "rejected"),
    ("silent-exit-2", (2,), "rejected"),  # the contract's own 2 needs no diagnostic
    ("silent-exit-2", (1,), "crashed"),  # 2 is no reject status any more
    ("signal", (1, 2), "crashed"),
])
def test_a_template_honours_reject_status(tmp_path, script, reject_status, want):
    impl = Template(fake(tmp_path, SCRIPTS[script]), ImplOptions(reject_status=reject_status))
    o = impl.run(Job("func @k() {}\n", {}, filename="k.tl"), timeout=60)
    assert o.status == want, o.message
    if want == "rejected" and "diagnostic" in script:
        assert o.diagnostics == [(WANT_RANGE, "no dynamic allocas")]
    if script == "signal":
        assert "SIGKILL" in o.message
    if script == "silent-exit-1" and want == "crashed":
        assert "no FILE:LINE.COL-COL: message diagnostic" in o.message


@pytest.mark.parametrize("script, reject_status, want", [
    ("diagnostic-exit-1", (1,), "rejected"),
    ("diagnostic-exit-1", (2,), None),  # no reject status: a compiler adapter's crash
    ("silent-exit-1", (1,), "crashed"),
    ("signal", (1, 2), None),
])
def test_rejection_reads_a_compilers_end(tmp_path, script, reject_status, want):
    """What opencl-c:/spirv: adapters build on: `rejection` says rejected or crashed for a
    reject status, None (their own rules: a crash) for anything else."""
    kernel = tmp_path / "k.tl"
    kernel.write_text("func @k() {}\n")
    argv = shlex.split(fake(tmp_path, SCRIPTS[script]).replace("{kernel}", str(kernel)))
    said = rejection(run_command(argv, timeout=60), reject_status)
    assert (said.status if said else None) == want


@pytest.mark.parametrize("diagnostic, match, shown", [
    (f"{WANT_RANGE}: {WANT_MESSAGE}", "range+message", WANT_RANGE),
    ("2.3-2.32: alloca wants static sizes", "range", "2.3-2.32"),  # same range, spelt long
    ("2.8-32: alloca wants static sizes", "no", "2.8-32"),  # blames from the mnemonic
    (None, "no", None),
])
def test_tlconform_judges_where_a_rejection_points(tmp_path, capsys, diagnostic, match, shown):
    body = (f'echo "$1:{diagnostic}" >&2; exit 1' if diagnostic
            else "echo 'rejected, somewhere' >&2; exit 1")
    report, log = tmp_path / "r.json", tmp_path / "r.log"
    rc = tlconform(["--impl", fake(tmp_path, body), "--reject-status", "1", "--filter", CASE,
                    "--quiet", "--json", str(report), "--log", str(log)])
    out = capsys.readouterr().out
    if diagnostic is None:  # exit 1 naming no place is no rejection under --reject-status 1
        assert rc == 1 and "must be rejected (exit 1), but it crashed: exit status 1" in out
        return
    assert rc == 0, out  # a rejection at the wrong place still passes
    counts = {"range+message": 0, "range": 0, "no": 0}
    counts[match] = 1
    assert (f"{counts['range+message']}/1 range+message, {counts['range']} range, "
            f"{counts['no']} no") in out
    assert (f"ELSEWHERE {CASE}: rejected at another place: {shown}" in out) == (match == "no")
    data = json.loads(report.read_text())
    [case] = data["cases"]
    assert (case["status"], case["outcome"]) == ("pass", "rejected")
    assert (case["diagnostic_match"], case["diagnostic_range"]) == (match, shown)
    assert case["message_match"] == ("yes" if match == "range+message" else "no")
    assert data["summary"]["diagnostic_matches"] == {**counts, "wrong_place": counts["no"]}
    assert data["summary"]["message_matches"] == [counts["range+message"], 1]
    assert f"diagnostic: {match} ({shown})" in log.read_text()


def test_without_reject_status_exit_1_fails_the_invalid_case(tmp_path, capsys):
    body = f'echo "$1:{WANT_RANGE}: {WANT_MESSAGE}" >&2; exit 1'
    report = tmp_path / "r.json"
    assert tlconform(["--impl", fake(tmp_path, body), "--filter", CASE, "--quiet",
                      "--json", str(report)]) == 1
    [case] = json.loads(report.read_text())["cases"]
    assert (case["status"], case["outcome"], case["diagnostic_match"]) == (
        "fail", "failed", None)


@pytest.mark.parametrize("case, status, rc", [
    ("invalid/type_memref_i1", "info", 0),  # a restriction of the reference's own
    (CASE, "fail", 1),
])
def test_only_the_reference_must_reject_its_own_restrictions(tmp_path, case, status, rc):
    report = tmp_path / "r.json"
    accepts = fake(tmp_path, "exit 0")  # compiles anything (and writes no outputs)
    assert tlconform(["--impl", accepts, "--filter", case, "--quiet",
                      "--json", str(report)]) == rc
    [record] = json.loads(report.read_text())["cases"]
    assert record["status"] == status
    assert ("the reference's own restriction: i1 is a scalar type" in record["detail"]) == (
        status == "info")
    assert tlconform(["--impl", "interp", "--filter", case, "--quiet"]) == 0


def test_tlrun_reports_a_reject_status_as_its_own_exit_2(tmp_path, capsys):
    kernel = tmp_path / "k.tl"
    kernel.write_text("func @k() {}\n")
    template = fake(tmp_path, SCRIPTS["diagnostic-exit-1"])
    assert tlrun.main([str(kernel), "--impl", template, "--reject-status", "1"]) == 2
    assert "rejected it" in capsys.readouterr().err
    assert tlrun.main([str(kernel), "--backend", template]) == 1  # exit 1: a failure


# --- one set of implementation flags --------------------------------------------------------

FLAGS = ["--device", "oclgrind", "--lowering", "unroll_k=2", "--lowering", "max_tile=4",
         "--work-group-size", "16x2", "--build-options", "-cl-std=CL2.0 -cl-mad-enable",
         "--reject-status", "1,2,1"]
PARSERS = {"tlrun": tlrun._parser, "tlconform": tlconform_parser, "tlfuzz": tlfuzz_parser}


def test_the_flags_parse_identically_in_all_three_tools():
    want = ImplOptions(device="oclgrind", lowering=("unroll_k=2", "max_tile=4"),
                       work_group_size="16x2", build_options="-cl-std=CL2.0 -cl-mad-enable",
                       reject_status=(1, 2))
    got = {tool: impl_options(make().parse_args(FLAGS)) for tool, make in PARSERS.items()}
    assert got == {tool: want for tool in PARSERS}
    defaults = {tool: impl_options(make().parse_args([])) for tool, make in PARSERS.items()}
    assert defaults == {"tlrun": ImplOptions(), "tlconform": ImplOptions(),
                        "tlfuzz": ImplOptions(device="pocl")}  # tlfuzz's own default
    # a reproduce line's flags read back as the same options, one -cl-... option included
    for options in (want, ImplOptions(device="pocl", build_options="-cl-mad-enable",
                                      reject_status=(1,))):
        for make in PARSERS.values():
            assert impl_options(make().parse_args(option_words(options))) == options
    line = tlrun_command("opencl-c:cc {tl}", want, "k.tl", "k.npz", None, None)
    assert "'--build-options=-cl-std=CL2.0 -cl-mad-enable' --reject-status 1,2" in line


@pytest.mark.parametrize("flag, value, words", [
    ("--reject-status", "0", "0 means success"),
    ("--reject-status", "256", "256 is no exit status"),
    ("--reject-status", "1,x", "expects exit statuses 1-255"),
    ("--reject-status", "", "expects exit statuses 1-255"),
    ("--work-group-size", "0x0", "expects W0xW1"),
    ("--build-options", "-cl-mad-enable\n-O0", "must be one line of OpenCL build options"),
])
@pytest.mark.parametrize("tool", ["tlrun", "tlconform", "tlfuzz"])
def test_a_bad_flag_value_exits_2_naming_the_flag(tmp_path, monkeypatch, capsys, tool, flag,
                                                   value, words):
    monkeypatch.chdir(tmp_path)
    main = {"tlrun": tlrun.main, "tlconform": tlconform, "tlfuzz": tlfuzz}[tool]
    rest = {"tlrun": ["k.tl"], "tlconform": ["--impl", "interp"],
            "tlfuzz": ["--time", "1", "--out", "found"]}[tool]
    assert main([*rest, f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {words}" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # tlfuzz made no --out


def test_tlfuzz_lowering_is_for_our_lowering_only(tmp_path, capsys):
    assert tlfuzz(["--impl", f"{sys.executable} -m tlinterp.cli {{kernel}}", "--lowering",
                   "unroll_k=2", "--out", str(tmp_path / "found")]) == 2
    assert "--lowering needs --impl opencl" in capsys.readouterr().err
    assert not (tmp_path / "found").exists()


def test_tlfuzz_lowering_fuzzes_that_config_through_the_registry():
    ns = tlfuzz_parser().parse_args(["--lowering", "unroll_k=2"])
    spec, options = _impl_ref(ns)  # not None: not the random-config campaign
    assert (spec, options.lowering, options.device) == ("opencl", ("unroll_k=2",), "pocl")
    line = tlrun_command(spec, options, "f.tl", "f.npz", "k", 2)  # a finding's first line
    assert line.endswith("--impl opencl --device pocl --lowering unroll_k=2")
    assert _impl_ref(tlfuzz_parser().parse_args([])) is None
