"""Reading an arguments file without trusting it.

An `.npz` is a zip archive of `NAME.npy` members. A hostile or broken file must end in an
`ArgumentError` (exit 2) before it costs memory: every member's header is read and checked
(an `.npy` array, no Python objects, declared size consistent with the stored bytes), the
declared shapes are checked against the function's argument types, and the total is checked
against the free memory -- all before a single array is inflated.
"""

from __future__ import annotations

import math
import os
import stat
import struct
import threading
import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

import numpy as np
import numpy.lib.format as npy

from tlinterp.io.memlimit import check_allocation
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ArgumentError, Diagnostic
from tlinterp.lang.types import GroupType, MemrefType

# what a damaged archive or member raises while being read (zlib.error: corrupt deflate
# data; NotImplementedError: unknown zip versions or compression methods; TokenError and
# SyntaxError: numpy tokenising a damaged header)
_READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError,
                RuntimeError, zlib.error, struct.error, OverflowError, KeyError,
                tokenize.TokenError, SyntaxError)

# npy headers are a few hundred bytes; numpy's own default cap (10,000) is kept
MAX_HEADER = 10_000
MAX_MEMBERS = 100_000


@dataclass(frozen=True)
class Header:
    """What an `.npy` member declares about itself."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    info: zipfile.ZipInfo

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _open(path: str) -> zipfile.ZipFile:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ArgumentError(f"{path}: no such file") from None
    except OSError as e:
        raise ArgumentError(f"{path}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ArgumentError(f"{path}: is a directory, not an .npz file")
    if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: reading them would never end
        raise ArgumentError(f"{path}: not a regular file (an .npz archive is expected)")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, struct.error,
            OverflowError):
        raise ArgumentError(f"{path}: not an .npz file (numpy.savez writes a zip archive)") \
            from None
    except OSError as e:
        raise ArgumentError(f"{path}: cannot read ({e.strerror or e})") from None


def _reason(e: Exception) -> str:
    """numpy's words for a bad header, without the AST object a name in it leaves there."""
    text = str(e)
    if "malformed node or string" in text:  # ast.literal_eval met a name or a call
        return "its header holds a name or expression where numpy writes only literals"
    return text


def _header(path: str, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> Header:
    name = info.filename
    if not name.endswith(".npy") or info.is_dir():
        raise ArgumentError(f"{path}: member '{name}' is not an .npy array (an .npz holds "
                            "only NAME.npy members written by numpy.savez)")
    bad = f"{path}: member '{name}' is not a valid .npy array"
    try:
        with z.open(info) as fp:
            version = npy.read_magic(fp)
            read = npy.read_array_header_1_0 if version == (1, 0) else \
                npy.read_array_header_2_0
            shape, _fortran, dtype = read(fp, max_header_size=MAX_HEADER)
            data_start = fp.tell()
    except _READ_ERRORS as e:
        raise ArgumentError(f"{bad} ({_reason(e)})") from None
    if dtype.hasobject:
        raise ArgumentError(f"{path}: member '{name}' holds Python objects (pickled data); "
                            "only plain numeric arrays are read")
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise ArgumentError(f"{bad} (shape {shape})")
    h = Header(name[:-4], tuple(shape), dtype, info)
    stored = info.file_size - data_start
    if h.nbytes != stored:
        raise ArgumentError(
            f"{path}: member '{name}' is malformed: its header declares shape {h.shape} of "
            f"{dtype} ({_fmt_bytes(h.nbytes)}) but it holds {_fmt_bytes(max(stored, 0))}")
    return h


# numpy parses .npy headers with ast.literal_eval, and CPython 3.11's AST constructor keeps
# one recursion counter per interpreter: two threads parsing at once (tlconform -j N) can fail
# with "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905). Headers
# are small, so reading them one thread at a time costs nothing.
_AST_LOCK = threading.RLock()


def read_headers(path: str) -> tuple[zipfile.ZipFile, dict[str, Header]]:
    """Open `path` and check every member's header; the caller closes the archive."""
    with _AST_LOCK:
        return _read_headers(path)


def _read_headers(path: str) -> tuple[zipfile.ZipFile, dict[str, Header]]:
    z = _open(path)
    try:
        infos = z.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ArgumentError(f"{path}: {len(infos)} members, more than {MAX_MEMBERS}")
        headers: dict[str, Header] = {}
        problems: list[Diagnostic] = []  # every bad member, in one report
        for info in infos:
            try:
                h = _header(path, z, info)
            except ArgumentError as e:
                problems += e.diagnostics
                continue
            if h.key in headers:
                problems.append(Diagnostic(f"{path}: member '{info.filename}' appears twice"))
                continue
            headers[h.key] = h
        if problems:
            raise ArgumentError(problems)
        return z, headers
    except BaseException:
        z.close()
        raise


def _memref_problem(t: MemrefType, shape: tuple, dtype: np.dtype) -> Optional[tuple[str, str]]:
    """What is wrong with an array of `shape` and `dtype` for a memref of type `t`, as (verb,
    rest) so that one entry and several read alike; None when nothing is."""
    if t.element.is_bool:
        return None  # bind explains that i1 memrefs have no storage type
    if dtype not in t.element.storage_dtypes:
        want = " or ".join(str(d) for d in t.element.storage_dtypes)
        return "has", f"element type {t.element}: expected dtype {want}, got {dtype}"
    if len(shape) != t.order:
        return "is", f"{t}: expected {t.order} dimensions, got shape {shape}"
    for k, (want, got) in enumerate(zip(t.shape, shape)):
        if want is not None and want != got:
            return "is", f"{t}: mode {k} must be {want}, got {got}"
    return None


_PLURAL = {"has": "have", "is": "are"}
SHOWN_KEYS = 3  # entries named in a line about several; the rest are counted


def _problem_lines(problems: dict[tuple[str, str, str], list[str]]) -> list[Diagnostic]:
    """One line per (group, problem): a problem shared by the members of a group (one per
    work-group, say) is one line with a count, not one line per member."""
    lines = []
    for (group, verb, rest), keys in problems.items():
        if len(keys) == 1:
            lines.append(Diagnostic(f"argument '{keys[0]}' {verb} {rest}"))
            continue
        named = ", ".join(f"'{k}'" for k in keys[:SHOWN_KEYS])
        more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
        lines.append(Diagnostic(f"arguments {named}{more} ({len(keys)} members of group "
                                f"'{group}') {_PLURAL[verb]} {rest}"))
    return lines


def _known(function: ir.Function, key: str) -> bool:
    for a in function.args:
        name, t = a.value.name, a.type
        if key == name:
            return True
        if not key.startswith(name + "."):
            continue
        rest = key[len(name) + 1:]
        if isinstance(t, MemrefType) and rest == "strides":
            return True
        if isinstance(t, GroupType):
            member = rest[:-len(".strides")] if rest.endswith(".strides") else rest
            if rest in ("offset", "strides") or (member.isdigit() and member.isascii()):
                return True
    return False


def _member_number(rest: str) -> bool:
    return rest.isdigit() and rest.isascii()  # '²'.isdigit() too, but int() refuses it


def preflight(function: ir.Function, headers: Mapping[str, Header]) -> None:
    """Check the keys and the declared shapes of memref and group entries against
    `function` (the rules `bind` applies to the loaded data), so that a wrong entry is
    refused before anything is loaded. Every problem is reported at once."""
    errors: list[Diagnostic] = []
    unknown = sorted(k for k in headers if not _known(function, k))
    if unknown:
        takes = ", ".join(f"'{a.value.name}'" for a in function.args) or "none"
        errors.append(Diagnostic(
            f"unexpected entries {', '.join(repr(u) for u in unknown[:10])}"
            f"{' ...' if len(unknown) > 10 else ''} (@{function.name} takes {takes})"))
    problems: dict[tuple[str, str, str], list[str]] = {}  # (group, verb, rest) -> keys

    def check(key: str, group: str, t: MemrefType, shape: tuple, dtype: np.dtype) -> None:
        problem = _memref_problem(t, shape, dtype)
        if problem is not None:
            problems.setdefault((group, *problem), []).append(key)

    for a in function.args:
        name, t = a.value.name, a.type
        if isinstance(t, MemrefType) and name in headers:
            h = headers[name]
            check(name, name, t, h.shape, h.dtype)
        elif isinstance(t, GroupType):
            if name in headers:
                h = headers[name]
                if len(h.shape) != t.memref.order + 1:
                    errors.append(Diagnostic(
                        f"argument '{name}' is {t}: expected an array of shape (members, ...) "
                        f"with {t.memref.order + 1} dimensions, got {h.shape}"))
                else:
                    check(name, name, t.memref, h.shape[1:], h.dtype)
            members = [(key, h) for key, h in headers.items()
                       if key.startswith(name + ".") and _member_number(key[len(name) + 1:])]
            for key, h in sorted(members, key=lambda m: int(m[0][len(name) + 1:])):
                check(key, name, t.memref, h.shape, h.dtype)
    errors += _problem_lines(problems)
    if errors:
        raise ArgumentError(errors)


def load_npz(path: str, function: Optional[ir.Function] = None,
             factor: int = 1, limit: Optional[int] = None) -> dict[str, np.ndarray]:
    """Read an arguments file; any failure is an ArgumentError (exit 2). With `function`,
    declared shapes are checked against its arguments first; `factor` times the declared
    size must fit in free memory (the caller's copies of the data counted). `limit`: the
    most bytes all members may declare (an implementation's output is bounded by the
    outputs it can have), so that a small archive inflating to gigabytes is refused from
    its headers alone."""

    z, headers = read_headers(path)
    with z:
        if function is not None:
            preflight(function, headers)
        total = sum(h.nbytes for h in headers.values())
        if limit is not None and total > limit:
            big = max(headers.values(), key=lambda h: h.nbytes)
            raise ArgumentError(
                f"{path}: declares {_fmt_bytes(total)} of arrays ({len(headers)} member(s), "
                f"the largest '{big.info.filename}' of shape {big.shape} {big.dtype}, "
                f"{big.info.compress_size} bytes compressed), more than the "
                f"{_fmt_bytes(limit)} the outputs can take; nothing was inflated")
        check_allocation(total * max(factor, 1), f"{path} (declared array sizes)")
        out: dict[str, np.ndarray] = {}
        for key, h in headers.items():
            try:
                with z.open(h.info) as fp, _AST_LOCK:  # it parses the header again
                    out[key] = npy.read_array(fp, allow_pickle=False,
                                              max_header_size=MAX_HEADER)
            except _READ_ERRORS as e:
                raise ArgumentError(f"{path}: member '{h.info.filename}' cannot be read "
                                    f"({e})") from None
        return out
