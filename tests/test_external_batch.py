"""A campaign's batch through `opencl-c:`/`spirv:` (fuzz.campaign.harness.differential_impl):
the compiler runs once over the whole batch and the device builds that one program, each
case still its own job; a hang or a crash inside the batch costs only that case, whose
verdict (and every later one) comes from a run alone, and the other cases get theirs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.harness import differential_impl
from fuzz.strategies import FuzzCase
from tlinterp.impl import ImplOptions, resolve

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

# the stand-in compiler: one OpenCL C kernel per function of the .tl file it is given, named
# after it; spin* spins, segv* stores through a wild pointer, off1* stores a[0] + 1 (a
# mismatch), us16* and miss* call a builtin the device lacks (a known device limit; any
# other), the others copy a[0] to a[1]
# (what the reference computes); each run appends the functions it compiled to a log
STANDIN = r'''
import re, sys
text = open(sys.argv[1]).read()
names = re.findall(r"func @(\w+)", text)
with open(sys.argv[2], "a") as log:
    log.write(" ".join(names) + "\n")
head = "kernel __attribute__((reqd_work_group_size(1, 1, 1))) void {}(global float* a)"
body = {"spin": "{ volatile global float* p = a; while (p[0] == 0.0f) {} }",
        "segv": "{ *(volatile global int*)(ulong)16 = 1; a[1] = a[0]; }",
        "off1": "{ a[1] = a[0] + 1.0f; }",
        "us16": "{ intel_sub_group_block_write_us16((global ushort*)a, (ushort16)(0)); }",
        "miss": "{ tl_no_such_builtin(a); }"}
for n in names:
    print(head.format(n), body.get(n[:4], "{ a[1] = a[0]; }"))
'''


def case(name: str) -> FuzzCase:
    text = f"""func @{name}(%a: memref<f32x4>) {{
  %x = load %a[0] : memref<f32x4>
  store %x, %a[1] : memref<f32x4>
}}
"""
    program = tlinterp.check(tlinterp.parse(text, filename=f"{name}.tl"))
    return FuzzCase(program, name, {"a": np.array([0, 1, 2, 3], np.float32)}, 1, "v0.3")


def standin(tmp_path: Path):
    script, log = tmp_path / "standin.py", tmp_path / "compiled.log"
    script.write_text(STANDIN)
    impl = resolve(f"opencl-c:{sys.executable} {script} {{tl}} {log}",
                   ImplOptions(device="pocl"))
    return impl, log


def compiled(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()]


def test_a_batch_is_compiled_once_and_every_case_agrees(tmp_path):
    impl, log = standin(tmp_path)
    try:
        done: list = []
        findings = differential_impl([case(f"ok{i}") for i in range(4)], impl, timeout=60,
                                     done=done)
        assert findings == [] and done == [4]
        assert compiled(log) == [["ok0", "ok1", "ok2", "ok3"]]  # one compiler run for all
        assert len(impl.runner._idle) == 1  # one worker, which built the program once
    finally:
        impl.close()


# the spinning case's bound: enough for a build of pocl's on a busy machine
@pytest.mark.parametrize("planted, status, timeout", [("segv", "crashed", 60),
                                                      ("spin", "timeout", 15)])
def test_a_crash_or_hang_inside_a_batch_costs_only_its_case(tmp_path, planted, status,
                                                           timeout):
    impl, log = standin(tmp_path)
    try:
        impl.runner.device_info()  # the worker's start-up is no case's time
        done: list = []
        cases = [case("ok0"), case(planted), case("ok1"), case("ok2")]
        findings = differential_impl(cases, impl, timeout=timeout, done=done)
        assert done == [4]  # every case got its verdict
        assert [(f.case.func, f.kind) for f in findings] == [(planted, "backend-crash")], \
            [f.message for f in findings]
        assert f"{impl.name}: {status}" in findings[0].message, findings[0].message
        # the batch, then the planted case alone and the rest of the batch alone
        assert compiled(log) == [["ok0", planted, "ok1", "ok2"], [planted], ["ok1"], ["ok2"]]
    finally:
        impl.close()


def test_a_mismatch_inside_a_batch_is_rerun_alone_and_the_rest_stay_batched(tmp_path):
    """A kernel that computes something else is judged on its run alone (the finding's
    command is its own); the batch's code stays good for the cases after it, so they are
    not compiled and built again one by one."""
    impl, log = standin(tmp_path)
    try:
        done: list = []
        cases = [case("ok0"), case("off1"), case("ok1"), case("ok2")]
        findings = differential_impl(cases, impl, timeout=60, done=done)
        assert done == [4]
        assert [(f.case.func, f.kind) for f in findings] == [("off1", "mismatch")]
        assert compiled(log) == [["ok0", "off1", "ok1", "ok2"], ["off1"]]
    finally:
        impl.close()


def test_a_batch_the_compiler_refuses_compiles_case_by_case(tmp_path):
    """A rejection of one kernel in the joined program must not reject the others: each
    compiles alone, and only the refused one is a finding."""
    script, log = tmp_path / "refusing.py", tmp_path / "compiled.log"
    script.write_text(STANDIN.replace(
        'names = re.findall(r"func @(\\w+)", text)',
        'names = re.findall(r"func @(\\w+)", text)\n'
        'if "bad" in names:\n'
        '    open(sys.argv[2], "a").write(" ".join(names) + "\\n")\n'
        '    sys.exit(sys.stderr.write(sys.argv[1] + ":1.6-9: no such thing\\n") and 2)'))
    impl = resolve(f"opencl-c:{sys.executable} {script} {{tl}} {log}",
                   ImplOptions(device="pocl"))
    try:
        findings = differential_impl([case("ok0"), case("bad"), case("ok1")], impl,
                                     timeout=60)
        assert [(f.case.func, f.kind) for f in findings] == [("bad", "rejected-construct")]
        assert compiled(log) == [["ok0", "bad", "ok1"], ["ok0"], ["bad"], ["ok1"]]
    finally:
        impl.close()


def test_code_the_device_cannot_run_is_counted_but_no_finding(tmp_path):
    """A build that fails on a builtin of DEVICE_LIMITS (a 16-element ushort block write,
    which Intel's CPU runtime lacks) is the device's limit: the case counts, nothing is saved
    or shrunk; a missing builtin of any other name is still a finding."""
    from fuzz.campaign.harness import device_limit

    assert "cl_intel_subgroups_short 1.1" in device_limit(
        "Symbols not found: [ _Z32intel_sub_group_block_write_us16PU3AS1tDv16_t ]")
    assert device_limit("Symbols not found: [ _Z10native_cosDh ]") is None
    impl, log = standin(tmp_path)
    try:
        done: list = []
        findings = differential_impl([case("ok0"), case("us16"), case("miss")], impl,
                                     timeout=60, done=done)
        assert done == [3]
        assert [(f.case.func, f.kind) for f in findings] == [("miss", "backend-crash")], \
            [f.message for f in findings]
    finally:
        impl.close()
