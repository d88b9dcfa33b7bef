"""`spirv:COMMAND`: a compiler that emits SPIR-V, built from IL and run like `opencl-c:`; a
device that takes no SPIR-V is refused before any case runs.

The SPIR-V comes from a real tool chain: our own lowering to OpenCL C, then clang (target
spir64, LLVM bitcode) and llvm-spirv (Debian: clang-15 llvm-spirv-15)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import ImplOptions, Job, SpecError, resolve

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

KERNEL = """func @twice(%a: memref<f32x4>) {
  %x = load %a[0] : memref<f32x4>
  %y = arith.add %x, %x : f32
  store %y, %a[3] : memref<f32x4>
}
"""


def _tool(*names: str) -> str | None:
    return next((p for p in map(shutil.which, names) if p), None)


def _missing(why: str):
    """Skip where the tool chain is not installed; CI installs it (.ci/run), so fail there."""
    if os.environ.get("CI"):
        pytest.fail(f"CI installs this ({why})")
    pytest.skip(why)


def spirv_compiler(tmp_path: Path) -> str:
    """`spirv:` over a script: tlrun --emit opencl | clang -target spir64 | llvm-spirv."""
    clang = _tool("clang-15", "clang")
    translator = _tool("llvm-spirv-15", "llvm-spirv")
    if clang is None or translator is None:
        _missing("needs clang and llvm-spirv to make SPIR-V (Debian: apt-get install "
                 "clang-15 llvm-spirv-15)")
    script = tmp_path / "tl2spv.sh"
    script.write_text(f"""#!/bin/sh
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
{sys.executable} -m tlinterp.cli "$1" --emit opencl > "$d/k.cl"
# -O0: clang's optimiser pairs a division with the remainder it sees (t - (t / M) * M) and
# inserts `freeze`, which llvm-spirv 15 cannot translate; the device compiler optimises anyway
{clang} -cl-std=CL2.0 -O0 -target spir64 -Xclang -finclude-default-header -emit-llvm -c \\
    -o "$d/k.bc" "$d/k.cl"
{translator} "$d/k.bc" -o "$2"
""")
    script.chmod(0o755)
    return f"spirv:{script} {{tl}} {{out}}"


def intel(spec: str):
    """The implementation on Intel's OpenCL runtime (the device here that takes SPIR-V),
    named exactly: "intel" alone also matches pocl's device on an Intel CPU."""
    from tlgpu.runtime.devices import _all_devices

    found = [(p.name.strip(), d.name.strip()) for p, d in _all_devices()
             if "intel" in p.name.lower()]
    if not found:
        _missing("no Intel OpenCL runtime (pip install .[intel])")
    return resolve(spec, ImplOptions(device=f"{found[0][0]}:{found[0][1]}"))


@pytest.mark.parametrize("device", ["pocl", "oclgrind"])
def test_a_device_without_il_is_refused_up_front(device):
    with pytest.raises(SpecError, match="takes no SPIR-V .*use --device intel"):
        resolve("spirv:true {tl}", ImplOptions(device=device))


def test_tlconform_refuses_before_any_case(tmp_path):
    r = subprocess.run([sys.executable, "-m", "fuzz.conform.cli", "--impl", "spirv:true {tl}",
                        "--device", "pocl", "--quiet"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "takes no SPIR-V" in r.stderr, r.stderr
    assert "passed" not in r.stdout + r.stderr and "Traceback" not in r.stderr


def test_spirv_runs_on_intel(tmp_path):
    impl = intel(spirv_compiler(tmp_path))
    try:
        o = impl.run(Job(KERNEL, {"a": np.array([5, 1, 2, 3], dtype=np.float32)}), 120)
        assert o.status == "ok", o.message
        assert o.outputs["a"].tolist() == [5, 1, 2, 10]
        verdicts = run_all(impl, load_corpus(default_corpus(), "valid/groups")[:2],
                           timeout=120)
        assert [v.status for v in verdicts] == ["pass"] * 2, [v.detail for v in verdicts]
    finally:
        impl.close()


def test_a_compiler_that_writes_no_spirv_is_a_crash(tmp_path):
    impl = intel("spirv:sh -c 'echo not spir-v > \"$1\"' sh {out} {tl}")
    try:
        o = impl.run(Job(KERNEL, {"a": np.zeros(4, np.float32)}), 60)
    finally:
        impl.close()
    assert o.status == "crashed" and "is no SPIR-V module" in o.message, o.message
