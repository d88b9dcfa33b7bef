"""Shared test configuration: Hypothesis profiles ("ci" when $CI is set, "dev" otherwise),
the caches of one session in its temporary directory, the `opencl` marker kept true, and
fixtures more than one test file needs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# --- caches and OpenCL ------------------------------------------------------------------------

_TMP = pytest.StashKey[str]()
_NO_DEVICE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Every cache the suite fills (pocl's kernels and its uncached temporaries, the device
    probes, pyopencl's, the tools' own under the user cache directory) lives in one directory
    of this session, removed at its end: the user's caches neither decide a test nor grow."""
    tmp = tempfile.mkdtemp(prefix="tl-tests-")
    config.stash[_TMP] = tmp
    os.environ["POCL_CACHE_DIR"] = os.path.join(tmp, "pocl")
    os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _TMP in config.stash:
        shutil.rmtree(config.stash[_TMP], ignore_errors=True)


def _why_no_device() -> Optional[str]:
    """Why the tests' device (`pocl`, by the rule of docs/devices.md) cannot run here."""
    try:
        from tlgpu.runtime.devices import find_device

        find_device("pocl")
    except Exception as e:  # noqa: BLE001 - whatever stops the device is the reason
        text = "\n".join(d.message for d in getattr(e, "diagnostics", ())) or str(e)
        return " / ".join(line.strip() for line in text.splitlines() if line.strip())
    return None


@pytest.hookimpl(trylast=True)  # after -m has deselected what will not run
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Outside CI, a machine without a working OpenCL device skips the OpenCL tests (one line
    at the end says why); under CI they run, and fail."""
    # NVIDIA's tests need no pocl: they skip themselves where NVIDIA's device is missing
    needs = [i for i in items if i.get_closest_marker("opencl")
             and not i.get_closest_marker("nvidia")]
    if not needs or os.environ.get("CI"):
        return
    why = _why_no_device()
    if why:
        config.stash[_NO_DEVICE] = why
        for item in needs:
            item.add_marker(pytest.mark.skip(reason=f"no working OpenCL device: {why}"))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if _NO_DEVICE in config.stash:
        terminalreporter.write_line(f"OpenCL tests skipped, no working OpenCL device here: "
                                    f"{config.stash[_NO_DEVICE]}")


@pytest.fixture(autouse=True)
def _opencl_needs_the_marker(request, monkeypatch):
    """A test without the `opencl` marker runs no OpenCL, in this process or in those it
    starts (TLGPU_NO_OPENCL stops the one platform query), so `-m "not opencl"` is true."""
    if request.node.get_closest_marker("opencl"):
        return
    from tlgpu.runtime import devices

    why = f"{request.node.nodeid} has no opencl marker"
    monkeypatch.setenv(devices.OFF, why)
    monkeypatch.setattr(devices, "_all_devices",
                        lambda: pytest.fail(f"uses OpenCL without the opencl marker: {why}"))


@pytest.fixture(scope="session", autouse=True)
def _checkout_untouched():
    """The suite writes nothing into the checkout's top directory (pocl's k.dot, a CLI run
    with the checkout as its working directory): what a test leaves there fails the run."""
    root = Path(__file__).resolve().parents[1]
    before = set(os.listdir(root))
    yield
    # the tools' own caches (.hypothesis, .pytest_cache, ...) are the ones .gitignore names
    tools = {".hypothesis", ".pytest_cache", ".ruff_cache", ".benchmarks", "__pycache__"}
    new = sorted(set(os.listdir(root)) - before - tools)
    assert not new, f"the test suite wrote into the checkout: {new}"


@pytest.fixture
def corpus_copy(tmp_path) -> Callable[[Sequence[str]], Path]:
    """`corpus_copy(cases)`: a corpus directory under tmp_path holding only the given cases
    (ids such as "valid/blas/axpby_f32_canonical_v0", each with all its files)."""
    def copy(cases: Sequence[str]) -> Path:
        root = tmp_path / "corpus"
        for kind in ("valid", "invalid", "undefined"):
            (root / kind).mkdir(parents=True)
        for case in cases:
            src = Path(__file__).resolve().parents[1] / "corpus" / case
            (root / case).parent.mkdir(parents=True, exist_ok=True)
            for f in src.parent.glob(src.name + ".*"):
                (root / case).parent.joinpath(f.name).write_bytes(f.read_bytes())
        return root
    return copy
