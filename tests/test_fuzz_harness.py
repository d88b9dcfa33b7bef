"""fuzz.campaign: harness, sandbox, frontend mutants; batching, findings, crash isolation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import tlinterp
from fuzz.campaign.frontend import frontend_problem, mutants
from fuzz.campaign.harness import Finding, combine, config_overrides, differential, save_finding
from fuzz.campaign.sandbox import Sandbox
from fuzz.strategies import FuzzCase
from tlgpu import LoweringConfig
from tlinterp.io.args import load_npz

AXPY = """
func @k{n}(%x: memref<f32x8x?>, %y: memref<f32x8x?>) {{
  %g = group_id
  %a = subview %x[:, %g] : memref<f32x8x?>
  %b = subview %y[:, %g] : memref<f32x8x?>
  axpby.n 2.0, %a, 1.0, %b : f32, memref<f32x8>, f32, memref<f32x8>
}}
"""


def case(n: int) -> FuzzCase:
    text = AXPY.format(n=n)
    rng = np.random.default_rng(n)
    args = {k: rng.uniform(-1, 1, (8, 3)).astype(np.float32) for k in "xy"}
    return FuzzCase(tlinterp.check(tlinterp.parse(text)), f"k{n}", args, 3)


@pytest.mark.opencl  # runs on pocl
def test_a_batch_is_one_program_and_agrees():
    cases = [case(0), case(1), case(2)]
    program = combine(cases)
    assert [f.name for f in program.functions] == ["k0", "k1", "k2"]
    assert differential(cases, config=LoweringConfig(), device="pocl") == []


@pytest.mark.opencl  # runs on pocl
def test_a_wrong_backend_result_is_a_finding(monkeypatch):
    import tlgpu

    real = tlgpu.run

    def off(*a, **kw):
        out = real(*a, **kw)
        out["y"][0, 0] += 1
        return out

    monkeypatch.setattr(tlgpu, "run", off)
    found = differential([case(0)], device="pocl")
    assert len(found) == 1 and found[0].kind == "mismatch"
    assert "y[0, 0]" in found[0].message


def test_findings_are_saved_with_a_reproducing_command(tmp_path):
    cfg = LoweringConfig.from_overrides({"unroll_k": "2", "work_group_size": "4,2"})
    f = Finding(case(0), "mismatch", "interpreter vs OpenCL:\ny[0, 0]: ...", cfg, "pocl")
    base = save_finding(f, str(tmp_path))
    assert open(base + ".tl").read() == case(0).source
    assert set(load_npz(base + ".npz")) == {"x", "y"}
    first, alone = open(base + ".txt").read().splitlines()[:2]
    cmd = first.split()
    assert cmd[:3] == ["tlfuzz", "reproduce", base + ".tl"]  # the interestingness test
    for flag in ("--args", "--func", "--groups", "--impl", "--device", "--lowering"):
        assert flag in cmd
    assert alone.startswith(f"run it alone: tlrun {base}.tl ") and "--impl opencl" in alone
    assert config_overrides(cfg) == ["work_group_size=4,2", "unroll_k=2"]
    assert save_finding(f, str(tmp_path)) == base  # saved once


@pytest.mark.opencl  # runs on pocl
def test_sandbox_runs_batches_in_a_child_and_survives_its_death():
    with Sandbox("pocl", timeout=60) as box:
        assert box.run([case(0), case(1)]) == []
    with Sandbox("pocl", timeout=60, mutation="crash") as box:
        found = box.run([case(2), case(3)])
        assert [f.kind for f in found] == ["backend-crash"]
        assert "exit status 139" in found[0].message
        # rerun alone, the batch's first kernel crashes: it is saved with its own arguments
        assert "kernel 1 of a crashing batch of 2" in found[0].message
        assert found[0].case.func == "k2" and len(found[0].case.program.functions) == 1
        assert [f.kind for f in box.run([case(4)])] == ["backend-crash"]  # restarted
        assert box.restarts == 3


class _Scripted(Sandbox):
    """A sandbox whose child 'crashes' exactly when the batch holds one of `bad`."""

    def __init__(self, bad: set[str]):
        super().__init__("pocl")
        self.bad, self.tried = bad, []

    def _attempt(self, cases, config):
        self.tried.append([c.func for c in cases])
        return "the OpenCL side died (exit code -11)" if {c.func for c in cases} & self.bad \
            else []


def test_a_crashing_batch_is_narrowed_to_the_kernel_that_crashes_alone():
    box = _Scripted({"k3"})
    (found,) = box.run([case(2), case(3), case(4)])
    assert box.tried == [["k2", "k3", "k4"], ["k2"], ["k3"]]
    assert found.case.func == "k3" and len(found.case.program.functions) == 1
    assert set(found.case.args) == {"x", "y"}


def test_a_batch_crash_no_kernel_repeats_alone_keeps_the_batch():
    box = _Scripted(set())
    box._attempt = lambda cases, config, real=box._attempt: (
        "no answer within 120 s (hang)" if len(cases) > 1 else real(cases, config))
    (found,) = box.run([case(2), case(3)])
    assert "no kernel of the batch of 2 crashes alone" in found.message
    assert len(found.case.program.functions) == 2


@seed(7)
@settings(max_examples=25, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(mutants())
def test_front_end_mutants_only_produce_diagnostics(item):
    text, original = item
    assert frontend_problem(text, original.args, original.groups) is None


def test_front_end_problem_reports_non_diagnostic_exceptions(monkeypatch):
    import tlinterp.lang.v03.parser

    def boom(text, filename="<input>"):
        raise IndexError("oops")

    monkeypatch.setattr(tlinterp.lang.v03.parser, "parse", boom)
    assert frontend_problem("func @f() {}", {}, 1) == "IndexError: oops"
