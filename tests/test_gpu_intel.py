"""Intel's CPU OpenCL runtime (the `intel` extra) as `--device intel`: found with no
environment variables set and beside the ICDs the loader would have read, in child processes
too; a sub-group kernel only it builds; our lowering over the corpus and the whole-kernel
tests on it; exit status 2 with the install line in all three tools when the extra is
missing. Without the extra these tests skip, except under CI, which installs it (.ci/run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.oracle.compare import compare_outputs
from tlgpu.runtime.icd import DISTRIBUTION, INSTALL, runtime_library
from tlinterp.interp import run as interp_run

pytestmark = [pytest.mark.opencl,  # needs OpenCL devices: Intel's beside pocl
              # Intel's build log is never empty ("Compilation started", ...)
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

ROOT = Path(__file__).resolve().parents[1]
INTEL = "Intel(R) OpenCL"  # the platform name of Intel's CPU runtime
POCL = "Portable Computing Language"


@pytest.fixture(scope="module")
def intel():
    """The Intel device handle; skip without the extra (CI installs it: fail there)."""
    from tlgpu.runtime.devices import handle

    if runtime_library() is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the intel extra ({DISTRIBUTION} is missing)")
        pytest.skip(f"Intel's CPU OpenCL runtime is not installed ({INSTALL})")
    return handle("intel")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who set nothing for OpenCL, with a cache of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH", "PYOPENCL_CTX")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), **extra)
    return env


def python(code: str, env: dict[str, str], exe: str = sys.executable,
           timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([exe, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def vendor_dirs(tmp_path: Path) -> list[Path]:
    root = tmp_path / "cache" / "tensor-language" / "opencl-vendors"
    return sorted(root.iterdir()) if root.is_dir() else []


PLATFORMS = ("import pyopencl as cl; "
             "print('|'.join(sorted(p.name for p in cl.get_platforms())))")

# registers in this process, then asks a child that knows nothing of tlgpu
REGISTER_THEN_CHILD = f"""
import os, subprocess, sys
from tlgpu.runtime.devices import find_device
d = find_device("intel")
print(d.platform.name)
print(os.environ["OCL_ICD_VENDORS"])
sys.stdout.flush()
subprocess.run([sys.executable, "-c", {PLATFORMS!r}], check=True)
"""


def test_found_with_no_environment_set_and_seen_by_children(intel, tmp_path):
    r = python(REGISTER_THEN_CHILD, clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    name, vendors, child = r.stdout.splitlines()
    assert name == INTEL
    assert INTEL in child.split("|") and POCL in child.split("|")
    (folder,) = vendor_dirs(tmp_path)
    assert vendors == str(folder)
    assert (folder / "intel-cpu.icd").read_text().strip() == str(runtime_library())
    # the directory is written once: a second process finds and reuses it
    before = folder.stat().st_ino, sorted(p.name for p in folder.iterdir())
    again = python(REGISTER_THEN_CHILD, clean_env(tmp_path))
    assert again.returncode == 0, again.stderr
    assert vendor_dirs(tmp_path) == [folder]
    assert (folder.stat().st_ino, sorted(p.name for p in folder.iterdir())) == before


def test_tlrun_runs_on_intel_in_its_child_process(intel, tmp_path):
    out = tmp_path / "out.npz"
    r = subprocess.run([sys.executable, "-m", "tlinterp.cli", "examples/fused_kernel.tl",
                        "--args", "examples/fused_kernel.npz", "--backend", "opencl",
                        "--device", "intel", "--out", str(out)],
                       env=clean_env(tmp_path), capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"device {INTEL} " in r.stderr  # devices.label: PLATFORM VERSION: DEVICE
    want = np.load(ROOT / "examples" / "fused_kernel.npz")
    p = tlinterp.check(tlinterp.parse((ROOT / "examples" / "fused_kernel.tl").read_text()))
    ref = interp_run(p, dict(want))
    np.testing.assert_allclose(np.load(out)["D"], ref["D"], rtol=1e-5, atol=1e-5)


def pocl_library() -> Path:
    """pocl's library from pyopencl's wheel (an ICD that is not Intel's)."""
    import pyopencl

    libs = Path(pyopencl.__file__).parent / ".libs"
    found = sorted(libs.glob("libpocl*.so*")) if libs.is_dir() else []
    if not found:  # the dev extra's pyopencl[pocl] brings it: CI must have it
        if os.environ.get("CI"):
            pytest.fail("pyopencl's wheel has no bundled pocl library")
        pytest.skip("pyopencl without its bundled pocl")
    return found[0]


@pytest.mark.parametrize("form", ["directory", "library", "intel-already-there"])
def test_the_icds_the_loader_would_read_are_kept(intel, tmp_path, form):
    """A user's OCL_ICD_VENDORS (here naming a second copy of pocl) still loads, as a
    directory or as one library; one that already names Intel's runtime is left alone."""
    mine = tmp_path / "vendors"
    mine.mkdir()
    lib = runtime_library() if form == "intel-already-there" else pocl_library()
    (mine / "mine.icd").write_text(f"{lib}\n")
    given = str(lib) if form == "library" else str(mine)
    r = python(REGISTER_THEN_CHILD, clean_env(tmp_path, OCL_ICD_VENDORS=given))
    assert r.returncode == 0, r.stderr
    _, vendors, child = r.stdout.splitlines()
    names = child.split("|")
    assert names.count(INTEL) == 1
    if form == "intel-already-there":
        assert vendors == given and vendor_dirs(tmp_path) == []
        assert names.count(POCL) == 1
    else:
        assert names.count(POCL) == 2  # pyopencl's own pocl and the user's
        assert [p.name for p in mine.iterdir()] == ["mine.icd"]


def test_a_platform_query_before_tlgpu_is_named_in_the_message(intel, tmp_path):
    """The loader reads its ICDs once per process: asked for platforms before tlgpu could
    register Intel's, it never shows it, and the message says where to look."""
    code = ("import numpy as np, pyopencl as cl, tlgpu, tlinterp\n"
            "cl.get_platforms()\n"
            "try:\n"
            "    tlgpu.run('func @f(%a: memref<f32x4>) {}', {'a': np.zeros(4, np.float32)},"
            " device='intel')\n"
            "except tlinterp.BackendError as e:\n"
            "    print(e.exit_status, e.diagnostics[0].message)\n")
    r = python(code, clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("2 ") and "did not load (OCL_ICD_DEBUG=7" in r.stdout
    assert str(runtime_library()) in r.stdout


def test_concurrent_processes_write_one_directory(intel, tmp_path):
    code = "from tlgpu.runtime.icd import register; print(register().vendors)"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=clean_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=ROOT) for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    (folder,) = vendor_dirs(tmp_path)  # no second directory, no half-written leftovers
    assert {o.strip() for o, _ in outs} == {str(folder)}


# --- a sub-group kernel: Intel's device has sub-groups, pocl has none -----------------------

SUBGROUP_TL = """
func @sg(%a: memref<f32x16>, %b: memref<f32x16>, %s: memref<i32x16>) {
  foreach %i=0,16 {
    %x = load %a[%i] : memref<f32x16>
    store %x, %b[%i] : memref<f32x16>
  }
}
"""

# written by hand under the calling convention (docs/conformance.md): each work-item adds up
# its sub-group's elements of a and records the sub-group size
SUBGROUP_CL = """
kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void sg(global const float* restrict a, global float* b, global int* s)
{
    uint i = get_local_id(0);
    b[i] = sub_group_reduce_add(a[i]);
    s[i] = (int)get_sub_group_size();
}
"""


def run_subgroup_kernel(tmp_path: Path, device: str) -> subprocess.CompletedProcess:
    (tmp_path / "sg.tl").write_text(SUBGROUP_TL)
    (tmp_path / "sg.cl").write_text(SUBGROUP_CL)
    np.savez(tmp_path / "sg.npz", a=np.arange(16, dtype=np.float32),
             b=np.zeros(16, np.float32), s=np.zeros(16, np.int32))
    compiler = f"opencl-c:sh -c 'cat {tmp_path / 'sg.cl'}' {{tl}}"
    return subprocess.run([sys.executable, "-m", "tlinterp.cli", str(tmp_path / "sg.tl"),
                           "--args", str(tmp_path / "sg.npz"), "--backend", compiler,
                           "--device", device, "--out", str(tmp_path / "out.npz")],
                          env=clean_env(tmp_path), capture_output=True, text=True,
                          timeout=120)


def test_a_sub_group_kernel_builds_and_runs_on_intel(intel, tmp_path):
    r = run_subgroup_kernel(tmp_path, "intel")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out.npz")
    size = int(out["s"][0])
    assert size > 1 and 16 % size == 0 and (out["s"] == size).all()
    want = np.repeat(np.arange(16, dtype=np.float32).reshape(-1, size).sum(axis=1), size)
    np.testing.assert_array_equal(out["b"], want)


def test_a_sub_group_kernel_does_not_build_on_pocl(tmp_path):
    r = run_subgroup_kernel(tmp_path, "pocl")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "sub_group_reduce_add" in r.stderr  # the build log names what pocl lacks
    assert not (tmp_path / "out.npz").exists()


# --- our lowering on Intel ------------------------------------------------------------------

def test_the_corpus_passes_through_our_lowering_on_intel(intel, tmp_path):
    r = subprocess.run([sys.executable, "-m", "fuzz.conform.cli", "--impl", "opencl",
                        "--device", "intel", "--lang", "v0.3",  # the lowering's language
                        "--quiet", "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, timeout=590, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    report = json.loads((tmp_path / "r.json").read_text())
    failed = [c for c in report["cases"] if c["status"] == "fail"]
    assert r.returncode == 0 and not failed, (r.stderr[-2000:], failed[:3])
    assert report["summary"]["pass"] > 250


def _agree(program, func: str, args: dict, groups=None) -> None:
    want = interp_run(program, args, func=func, groups=groups)
    got = tlgpu.run(program, args, func=func, groups=groups, device="intel")
    bad = compare_outputs(program, func, args, want, got, groups=groups)
    assert not bad, "\n".join(str(m) for m in bad[:5])


def test_the_whole_kernel_tests_agree_on_intel(intel):
    """test_gpu_kernels.py's kernels (sample, matrix chain, control flow), on Intel."""
    import test_gpu_kernels as K

    p = tlinterp.check(tlinterp.parse(K.SOURCE, "kernels.tl"))
    rng = np.random.default_rng(3)
    for func, make in K.CASES.items():
        _agree(p, func, make(rng), groups=3 if func == "chain" else None)


def test_the_collective_tests_agree_on_intel(intel):
    """test_gpu_collectives.py's instructions and types, on Intel, with beta 0 and 1."""
    import test_gpu_collectives as C

    p = tlinterp.check(tlinterp.parse(C.SOURCE, "collectives.tl"))
    for name, cname, T, S, _ in C.INDEX:
        rng = np.random.default_rng(len(name))
        for beta in (0, 1):
            _agree(p, name, C.arguments(cname, T, S, beta, 3, rng), groups=3)


# --- the extra missing ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def python_without_extra(tmp_path_factory) -> str:
    """A virtual environment that sees this one's packages except Intel's runtime, so
    importlib.metadata finds no intel-opencl-rt, in the tools and in their child processes."""
    base = tmp_path_factory.mktemp("no-intel")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")],
                   check=True, timeout=120)
    shown = base / "site"
    shown.mkdir()
    hidden = ("intel_opencl_rt", "intel_cmplr_lib_rt")
    for lib in dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")):
        for entry in Path(lib).iterdir():
            if (not entry.name.lower().startswith(hidden) and not entry.name.endswith(".pth")
                    and not (shown / entry.name).exists()):
                (shown / entry.name).symlink_to(entry)
    exe = base / "venv" / "bin" / "python"
    venv_site = python("import sysconfig; print(sysconfig.get_paths()['purelib'])",
                       {"PATH": os.environ.get("PATH", "")}, exe=str(exe)).stdout.strip()
    (Path(venv_site) / "shown.pth").write_text(f"{shown}\n")
    yield str(exe)
    shutil.rmtree(base, ignore_errors=True)


TOOLS = {
    "tlrun": ["tlinterp.cli", "examples/fused_kernel.tl", "--args",
              "examples/fused_kernel.npz", "--backend", "opencl", "--device", "intel"],
    "tlconform": ["fuzz.conform.cli", "--impl", "opencl", "--device", "intel", "--quiet",
                  "--filter", "fused"],
    "tlfuzz": ["fuzz.campaign.cli", "--device", "intel", "--time", "5", "--jobs", "1",
               "--out", "{tmp}/findings"],
}


@pytest.mark.parametrize("tool", TOOLS)
def test_missing_extra_is_exit_2_with_the_install_line(python_without_extra, tmp_path, tool):
    env = clean_env(tmp_path)
    assert python(f"import importlib.metadata as m; m.distribution({DISTRIBUTION!r})", env,
                  exe=python_without_extra).returncode == 1  # really not installed there
    argv = [a.replace("{tmp}", str(tmp_path)) for a in TOOLS[tool]]
    r = subprocess.run([python_without_extra, "-m", *argv], env=env, capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert INSTALL in r.stderr and "Traceback" not in r.stderr


def test_missing_extra_in_the_python_api(python_without_extra, tmp_path):
    code = ("import tlgpu, tlinterp, numpy as np\n"
            "try:\n"
            "    tlgpu.run('func @f(%a: memref<f32x4>) {}', {'a': np.zeros(4, np.float32)},"
            " device='intel')\n"
            "except tlinterp.BackendError as e:\n"
            "    print(e.exit_status, e.diagnostics[0].message)\n")
    r = python(code, clean_env(tmp_path), exe=python_without_extra)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("2 ") and INSTALL in r.stdout
