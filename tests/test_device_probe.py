"""A device must build a one-line kernel before it is chosen (tlgpu.runtime.probe,
docs/devices.md): ranking with fake devices and fake probe outcomes (this machine's pocls
both build, so an AMD Zen 5, where the wheel's pocl 3.0 builds nothing, is simulated), the
probe cache, the once-only fallback line, and real probes of this machine's devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tlgpu.runtime import devices as D
from tlgpu.runtime import probe as P
from tlinterp.lang.diagnostics import BackendError

ROOT = Path(__file__).resolve().parents[1]
CPU = 2  # pyopencl's device_type.CPU


def _pair(platform: str, version: str, device: str):
    p = SimpleNamespace(name=platform)
    return p, SimpleNamespace(name=device, driver_version=version, platform=p, type=CPU)


POCL30 = _pair("Portable Computing Language", "3.0-rc2", "pthread-AMD Ryzen 9 9950X")
POCL31 = _pair("Portable Computing Language", "3.1+debian", "pthread-znver4-AMD Ryzen 9 9950X")
POCL5 = _pair("Portable Computing Language", "5.0", "cpu-x86-64")
GRIND = _pair("Oclgrind", "Oclgrind 21.10", "Oclgrind Simulator")
INTEL = _pair("Intel(R) OpenCL", "2026.22.10.0.01_160000", "AMD Ryzen 9 9950X")
ZEN5 = "unknown target CPU 'generic'"


def fails(*bad):
    """A probe under which the devices of `bad` cannot build (counting its calls)."""
    def probe(p, d):
        probe.calls.append(d.name)
        return P.Probe(False, ZEN5) if any(d is b[1] for b in bad) else P.Probe(True)
    probe.calls = []
    return probe


@pytest.fixture(autouse=True)
def _fresh_notes(monkeypatch):
    monkeypatch.delenv(D._SAID, raising=False)  # the once-only line, once per test


def test_a_device_that_cannot_build_ranks_last():
    devs = [POCL30, POCL31, GRIND, INTEL]
    assert D.rank(devs, (3, 0))[0] == POCL30  # the wheel's pocl first, when all build
    ranked = D.rank(devs, (3, 0), fails(POCL30))
    assert ranked[-1] == POCL30 and ranked[:3] == [INTEL, GRIND, POCL31]  # then versions


def test_default_pocl_falls_over_to_the_next_pocl_that_builds():
    probe = fails(POCL30)
    chosen, skipped = D.choose("pocl", [GRIND, POCL31, POCL30, POCL5], (3, 0), probe)
    assert chosen is POCL5[1] and skipped == [POCL30]  # the newest after the wheel's
    assert probe.calls == [POCL30[1].name, POCL5[1].name]  # probed in rank order, no more
    assert D.choose("pocl", [POCL30, POCL31], (3, 0), fails())[0] is POCL30[1]
    note = D.fallback_note("pocl", skipped, chosen, probe)
    assert note == (f"pocl 3.0-rc2 cannot build here ({ZEN5}); using Portable Computing "
                    "Language 5.0: cpu-x86-64")


def test_when_no_pocl_builds_the_error_says_what_to_do():
    with pytest.raises(BackendError) as e:
        D.choose("pocl", [POCL30, POCL31, GRIND], (3, 0), fails(POCL30, POCL31))
    text = str(e.value)
    assert f"Portable Computing Language 3.0-rc2: {POCL30[1].name}: cannot build here: {ZEN5}" \
        in text
    assert "apt install pocl-opencl-icd" in text
    assert "--device oclgrind (Oclgrind" in text
    assert "--device intel, Intel's CPU runtime: pip install" in text  # not installed here
    with pytest.raises(BackendError) as e:  # installed: named as a device to use
        D.choose("pocl", [POCL30, INTEL], (3, 0), fails(POCL30))
    assert "or --device intel (Intel(R) OpenCL" in str(e.value)
    assert "pip install" not in str(e.value)
    with pytest.raises(BackendError) as e:  # an exact choice that cannot build: no apt hint
        D.choose("pocl@3.0", [POCL30, POCL31], (3, 0), fails(POCL30))
    assert "cannot build here" in str(e.value) and "apt install" not in str(e.value)
    assert "or --device pocl (Portable Computing Language 3.1+debian" in str(e.value)


def test_the_device_table_shows_what_cannot_build():
    rows = D.inventory([POCL30, POCL31, GRIND], (3, 0), kind=lambda d: "CPU",
                       probe=fails(POCL30))
    by = {r.version: r for r in rows}
    assert rows[-1].version == "3.0-rc2"
    assert by["3.0-rc2"].cannot_build == ZEN5 and by["3.0-rc2"].default_for == ()
    assert by["3.0-rc2"].select == "pocl@3.0-rc2"
    assert by["3.1+debian"].default_for == ("pocl",) and by["3.1+debian"].select == "pocl"
    assert by["3.1+debian"].cannot_build == ""


def test_list_devices_prints_the_row(monkeypatch, capsys):
    monkeypatch.setattr(D, "_all_devices", lambda: [POCL30, POCL31])
    monkeypatch.setattr(D, "_wheel_pocl_version", lambda: (3, 0))
    monkeypatch.setattr(D, "real_probe", fails(POCL30))
    monkeypatch.setattr(D, "_kind", lambda d: "CPU")
    from tlinterp.cli import main

    assert main(["--list-devices"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "3.0-rc2" in line)
    assert f"cannot build here: {ZEN5}" in row


def test_find_device_says_the_fallback_once(monkeypatch, capsys):
    monkeypatch.setattr(D, "_all_devices", lambda: [POCL30, POCL31])
    monkeypatch.setattr(D, "_wheel_pocl_version", lambda: (3, 0))
    monkeypatch.setattr(D, "real_probe", fails(POCL30))
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert D.find_device() is POCL31[1]
    assert D.find_device("pocl") is POCL31[1]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].endswith(
        f": pocl 3.0-rc2 cannot build here ({ZEN5}); using Portable Computing Language "
        f"3.1+debian: {POCL31[1].name}")
    # a child process inherits what was said and does not repeat it
    child = subprocess.run([sys.executable, "-c", "from tlgpu.runtime.devices import say_once;"
                            f"say_once({D.notes_said()[0]!r}); say_once('new')"],
                           capture_output=True, text=True, env={**os.environ,
                                                                "PYTHONPATH": str(ROOT)})
    assert child.stderr == "tlgpu: new\n", child.stderr


def test_the_probe_cache_is_keyed_by_driver_version(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(P, "_SEEN", {})
    calls = []

    def child(platform, device, version):
        calls.append(version)
        return P.Probe(version != "3.0", ZEN5 if version == "3.0" else "")

    monkeypatch.setattr(P, "_probe_in_child", child)
    assert P.probe("pocl", "cpu", "3.0") == P.Probe(False, ZEN5)
    assert P.probe("pocl", "cpu", "3.0").builds is False and calls == ["3.0"]  # this process
    assert P.cache_file().parent == tmp_path / "tensor-language"
    monkeypatch.setattr(P, "_SEEN", {})  # another process: the file answers
    assert P.probe("pocl", "cpu", "3.0") == P.Probe(False, ZEN5) and calls == ["3.0"]
    assert P.probe("pocl", "cpu", "3.1").builds and calls == ["3.0", "3.1"]  # a new driver
    saved = json.loads(P.cache_file().read_text())
    assert saved == {"pocl|cpu|3.0": {"builds": False, "reason": ZEN5},
                     "pocl|cpu|3.1": {"builds": True, "reason": ""}}
    # a probe that ran out of time says nothing about the device: not written down
    monkeypatch.setattr(P, "_probe_in_child",
                        lambda *a: P.Probe(False, "did not finish", keep=False))
    assert not P.probe("pocl", "cpu", "3.2").builds
    assert "pocl|cpu|3.2" not in json.loads(P.cache_file().read_text())
    assert [f.name for f in P.cache_file().parent.iterdir()] == [P._FILE]  # no temp left


def test_first_line_of_a_build_log():
    log = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device "
           "'x' at 0x1>:\n\nerror: unknown target CPU 'generic'\nnote: valid target CPU "
           "values are: ...\n")
    assert P.first_line(P.build_log_of(log)) == ZEN5


@pytest.mark.opencl
def test_real_probes_of_this_machines_devices(tmp_path, monkeypatch):
    """Each device here builds the one-line kernel in a child process (no cache involved);
    a device the child does not find is not written down."""
    devs = D._all_devices()
    assert devs
    for p, d in devs:
        got = P._probe_in_child(p.name, d.name, d.driver_version)
        assert got == P.Probe(True), (D.label(d), got)
    gone = P._probe_in_child("Portable Computing Language", "no such device", "0")
    assert not gone.builds and not gone.keep and "no longer listed" in gone.reason
    # a build that fails: the reason is the first line of the driver's real build log
    p, d = D.rank(D._matches("pocl", devs), D._wheel_pocl_version())[0]
    monkeypatch.setattr(P, "KERNEL", "kernel void tl_probe(global int *a) { a[0] = nosuch; }")
    failed = D.probe_child(p.name, d.name, d.driver_version)
    assert failed["builds"] is False and "nosuch" in failed["reason"], failed
    assert "\n" not in failed["reason"] and not failed["reason"].startswith("error")


@pytest.mark.opencl
def test_a_simulated_zen5_end_to_end(tmp_path):
    """tlrun and tlfuzz with a probe cache that says the wheel's pocl cannot build (what
    AMD Zen 5 does): tlrun falls over to the next pocl with one line; with no pocl that
    builds, tlfuzz exits 2 with what to do, before any case."""
    from platformdirs import user_cache_dir

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop(D._SAID, None)
    env.pop("PYOPENCL_CTX", None)
    pocls = D.rank(D._matches("pocl", D._all_devices()), D._wheel_pocl_version())
    path = Path(user_cache_dir("tensor-language")).name  # the same name under tmp_path

    def cannot(*pds):
        f = tmp_path / "cache" / path / P._FILE
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps({P.key(p.name, d.name, d.driver_version):
                                 {"builds": False, "reason": ZEN5} for p, d in pds}))

    if len(pocls) > 1:
        cannot(pocls[0])
        r = subprocess.run([sys.executable, "-m", "tlinterp.cli",
                            str(ROOT / "examples/fused_kernel.tl"), "--args",
                            str(ROOT / "examples/fused_kernel.npz"), "--backend", "opencl",
                            "--out", str(tmp_path / "o.npz"), "-q"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr
        line = (f"tlrun: pocl {pocls[0][1].driver_version.strip()} cannot build here ({ZEN5}); "
                f"using {D.label(pocls[1][1])}")
        assert r.stderr.count("cannot build here") == 1 and line in r.stderr, r.stderr
    cannot(*pocls)
    r = subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", "--time", "5",
                        "--out", str(tmp_path / "f")], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "apt install pocl-opencl-icd" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "f").exists() or not any((tmp_path / "f").iterdir())


@pytest.mark.opencl
@pytest.mark.parametrize("tool", ["tlconform", "reproduce"])
def test_a_device_that_runs_nothing_is_no_finding_against_the_compiler(tool, monkeypatch,
                                                                        capsys, tmp_path):
    """opencl-c: runs a known-good kernel through its workers before the first case: a
    device or runtime failure there is exit 2 with its reason, never a case blamed on the
    compiler (the worker's failure is simulated; the real self-test passes here)."""
    from tlgpu.implementations import OpenCLC
    from tlinterp.impl import ImplOptions, resolve
    from tlinterp.impl.base import Outcome

    spec = "opencl-c:sh -c 'exit 3' sh {tl}"  # a compiler that must never be reached
    impl = resolve(spec, ImplOptions(device="pocl"))
    try:
        assert impl.self_test() is None  # the real device, the real worker
    finally:
        impl.close()
    monkeypatch.setattr("tlgpu.runtime.foreign.ForeignRunner.run", lambda self, job, t=None:
                        Outcome("crashed", message="the worker died (killed by SIGSEGV)"))
    assert isinstance(impl, OpenCLC)
    if tool == "tlconform":
        from fuzz.conform.cli import main

        status = main(["--impl", spec, "--filter", "valid/scalar/arith_f32", "--quiet"])
    else:
        from fuzz.campaign.cli import main

        status = main(["reproduce", str(ROOT / "corpus/valid/scalar/arith_f32.tl"), "--args",
                       str(ROOT / "corpus/valid/scalar/arith_f32.args.npz"), "--impl", spec])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "cannot build and run a known-good kernel" in err and "SIGSEGV" in err, err
    assert "exit status 3" not in err and "FAIL" not in err


@pytest.mark.parametrize("ci", ["", "true"])
def test_no_working_device_skips_with_one_line_outside_ci(ci):
    """The conftest hook: without a working device (simulated: OpenCL off, so this runs no
    OpenCL either) the OpenCL tests are skipped with one line saying why, except under CI,
    where they run and fail."""
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    env[D.OFF] = "simulated: no device here"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/test_device_probe.py", "-k", "real_probes or ranks_last"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    line = ("OpenCL tests skipped, no working OpenCL device here: OpenCL is off in this "
            f"process ({D.OFF}=simulated: no device here)")
    if ci:
        assert r.returncode == 1 and "1 failed, 1 passed" in r.stdout, r.stdout
        assert line not in r.stdout
    else:
        assert r.returncode == 0 and "1 passed, 1 skipped" in r.stdout, r.stdout
        assert r.stdout.count(line) == 1, r.stdout


@pytest.mark.opencl
def test_triage_on_a_device_that_builds_nothing_is_exit_2_not_a_verdict(tmp_path, monkeypatch,
                                                                        capsys):
    """No pocl here builds (simulated): tlfuzz triage says so and what to do, exit 2, and
    reads nothing of the finding as flaky or as a compiler's bug."""
    from fuzz.campaign.cli import main

    monkeypatch.setattr(D, "real_probe", lambda p, d: P.Probe(
        not D._ALIASES["pocl"](p, d), ZEN5))
    base = tmp_path / "mismatch-0"
    src = ROOT / "corpus/valid/scalar/arith_f32"
    base.with_suffix(".tl").write_text(src.with_suffix(".tl").read_text())
    base.with_suffix(".npz").write_bytes(Path(f"{src}.args.npz").read_bytes())
    base.with_suffix(".txt").write_text("tlrun mismatch-0.tl --args mismatch-0.npz "
                                        "--backend opencl --device pocl\n\n...\n")
    assert main(["triage", str(base) + ".tl", "--reduce-time", "5"]) == 2
    err = capsys.readouterr().err
    assert "apt install pocl-opencl-icd" in err and "cannot read the finding" not in err, err
    assert not (tmp_path / "mismatch-0.triage.txt").exists()
