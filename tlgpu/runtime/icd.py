"""Intel's CPU OpenCL runtime (the `intel` extra) made visible to the OpenCL loader.

pip installs `intel-opencl-rt` as data files: libintelocl.so under `<prefix>/lib` and an ICD
file whose content is a placeholder path, so no loader finds it. The loader bundled with
pyopencl (ocl-icd) reads, at the first platform query of a process, `$OCL_ICD_VENDORS` (a
directory of *.icd files, one file, or one library), else `$OPENCL_VENDOR_PATH`, else
/etc/OpenCL/vendors, plus pyopencl's own ICDs (pocl, Oclgrind). `register()` writes, once per
user and per set of ICDs, a directory under the user cache directory holding every ICD the
loader would have read plus one naming the installed libintelocl.so, and points
`OCL_ICD_VENDORS` there, so the system's platforms stay visible and child processes, which
inherit the environment, see the same platforms. It must run before the process's first
platform query: `tlgpu.runtime.devices` calls it before every one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

DISTRIBUTION = "intel-opencl-rt"
LIBRARY = "libintelocl.so"
INSTALL = ("pip install 'tensor-language-reference[intel]' "
           "(in a checkout: pip install -e '.[intel]')")
_OURS = "intel-cpu.icd"


@dataclass(frozen=True)
class Registration:
    library: Optional[Path]  # the installed runtime's libintelocl.so; None when not installed
    vendors: Optional[str]  # the directory OCL_ICD_VENDORS was pointed at; None if untouched
    problem: Optional[str]  # why an installed runtime could not be registered


def runtime_library() -> Optional[Path]:
    """libintelocl.so of the installed intel-opencl-rt distribution (its file list gives the
    real place, for venvs, --user installs and system prefixes alike), or None."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name == LIBRARY:
            path = Path(str(dist.locate_file(f))).resolve()
            if path.is_file():
                return path
    return None


def _read(path: Path) -> Optional[bytes]:
    try:
        return path.read_bytes()
    except OSError:  # unreadable or vanished: the loader could not use it either
        return None


def scanned_icds(env: Mapping[str, str]) -> dict[str, bytes]:
    """The ICD files (name -> content) the loader reads with this environment, besides
    pyopencl's own: ocl-icd's rules for OCL_ICD_VENDORS and OPENCL_VENDOR_PATH."""
    vendor_path = Path(env.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors")
    given = env.get("OCL_ICD_VENDORS") or ""
    if not given or os.path.isdir(given):
        folder = Path(given) if given else vendor_path
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".icd"))
        except OSError:
            return {}
        found = {n: _read(folder / n) for n in names}
        return {n: data for n, data in found.items() if data is not None}
    if given.endswith(".icd"):  # one ICD file; a bare name is looked up in the vendor path
        for path in ([vendor_path / given] if "/" not in given else []) + [Path(given)]:
            data = _read(path)
            if data is not None:
                return {path.name: data}
        return {}
    return {"given.icd": given.encode() + b"\n"}  # one library


def _names_intel(icd: bytes) -> bool:
    """An ICD naming Intel's CPU runtime (this one or a system install): registering ours as
    well would show two Intel platforms, so the one already there is kept."""
    return os.path.basename(icd.decode(errors="replace").strip()).startswith("libintelocl")


def cache_root() -> Path:
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("tensor-language")) / "opencl-vendors"
    except ImportError:  # platformdirs comes with pyopencl; this is a fallback only
        return Path.home() / ".cache" / "tensor-language" / "opencl-vendors"


def _materialise(files: dict[str, bytes]) -> Path:
    """The directory holding exactly `files`, named by their hash: written once, by one
    rename, so concurrent processes either find it complete or write the same one."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    root = cache_root()
    final = root / digest
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():  # not another process that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # already gone after the rename
    return final


_LOCK = threading.Lock()
_DONE: Optional[Registration] = None


def register() -> Registration:
    """Make the installed Intel CPU runtime visible to this process's OpenCL loader and to
    its children (see the module doc); once per process, and a no-op when the runtime is not
    installed or the loader already reads an ICD for it."""
    global _DONE
    with _LOCK:
        if _DONE is None:
            _DONE = _register()
        return _DONE


def _register() -> Registration:
    library = runtime_library()
    if library is None:
        return Registration(None, None, None)
    if not sys.platform.startswith("linux"):
        return Registration(library, None, "registering it automatically is done on Linux "
                                           "only; register libintelocl.so with your OpenCL "
                                           "loader")
    files = scanned_icds(os.environ)
    if any(_names_intel(data) for data in files.values()):
        return Registration(library, None, None)
    name = _OURS if _OURS not in files else f"tensor-language-{_OURS}"
    files[name] = str(library).encode() + b"\n"
    try:
        folder = _materialise(files)
    except OSError as e:
        return Registration(library, None, f"cannot write its ICD file under {cache_root()} "
                                           f"({e.strerror or e}); set XDG_CACHE_HOME to a "
                                           "writable directory")
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return Registration(library, str(folder), None)
