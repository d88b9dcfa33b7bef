"""The argument convention (docs/semantics.md "Arguments (`.npz`)"): bind a dict of arrays to a
function's arguments and turn the results back into the same keys and layout.

Both backends consume `BoundArgs`: every memref is a (buffer, offset, shape, strides) view on a
1-D buffer that the run may write; a group is a list of such views (the offset already applied).
Binding copies the inputs, so callers' arrays are never modified.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from tlinterp.io.memlimit import check_allocation  # noqa: F401 - re-exported: callers check sizes here too
from tlinterp.io.npzcheck import load_npz  # noqa: F401 - the convention's reader lives there
from tlinterp.io.outfile import save_npz  # noqa: F401 - and its atomic writer here
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ArgumentError
from tlinterp.lang.types import GroupType, MemrefType, ScalarType, VoidType


@dataclass
class MemrefArg:
    """A strided view: element (i_1..i_n) lives at buffer[offset + sum(i_k * strides[k])]."""

    buffer: np.ndarray  # 1-D, contiguous, element dtype
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def view(self) -> np.ndarray:
        """A NumPy view (not a copy) in logical index order."""
        item = self.buffer.itemsize
        if 0 in self.shape:
            return np.zeros(self.shape, self.buffer.dtype)
        return np.lib.stride_tricks.as_strided(
            self.buffer[self.offset:], self.shape, tuple(s * item for s in self.strides))


@dataclass
class GroupArg:
    members: list[MemrefArg]  # all share one buffer; each offset includes the group offset
    offset: int
    separate: bool = False  # given as NAME.0, NAME.1, ... (output uses the same keys)


Bound = Union[np.generic, MemrefArg, GroupArg]


@dataclass
class BoundArgs:
    function: ir.Function
    values: dict[str, Bound]
    extra_keys: dict[str, np.ndarray] = field(default_factory=dict)  # .strides/.offset, echoed
    group_members: Optional[int] = None  # member count of group arguments, if any

    def num_groups(self, groups: Optional[int] = None) -> int:
        """--groups N if given, else the groups' member count, else 1."""
        groups = check_groups(groups)
        if groups is not None:
            return groups
        return 1 if self.group_members is None else self.group_members

    def grid(self, groups: Optional[Groups] = None) -> tuple[int, int, int]:
        """The launch's grid (x, y, z): a given grid, else (`num_groups(groups)`, 1, 1)."""
        if isinstance(groups, (tuple, list)):
            return grid_of(groups)
        return (self.num_groups(groups), 1, 1)


def extent(shape, strides) -> int:
    """Elements a strided view spans (0 for an empty view)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides))


def _scalar(name: str, t: ScalarType, a: Any) -> np.generic:
    arr = np.asarray(a)
    if arr.shape != ():
        raise ArgumentError(f"argument '{name}' is a scalar {t}: expected a 0-d array, "
                            f"got shape {arr.shape}")
    kind = arr.dtype.kind
    if t.is_bool and kind in "bui" or t.is_int and kind in "iub":
        pass
    elif t is ScalarType.bf16 and arr.dtype in t.storage_dtypes:
        return arr.reshape(1).view(t.dtype)[0]  # bfloat16 itself or its bit pattern
    elif t.is_complex or t.is_float:
        data, want = ("complex", "c") if t.is_complex else ("float", "f")
        if kind != want:
            raise ArgumentError(f"argument '{name}' is {t}: expected {data} data, got "
                                f"{arr.dtype}")
        # None leaves numpy's setting as it is: only complex conversions silence `invalid`
        with np.errstate(over="ignore", invalid="ignore" if t.is_complex else None):
            v = t.dtype.type(arr)
        if np.isfinite(arr) and not np.isfinite(v):
            raise ArgumentError(f"argument '{name}': {arr.item()} does not fit in {t}")
        return v
    if t.is_bool:
        if kind not in "bui":
            raise ArgumentError(f"argument '{name}' is i1: expected bool data, got {arr.dtype}")
        return np.bool_(bool(arr))
    if kind not in "iub":
        raise ArgumentError(f"argument '{name}' is {t}: expected integer data, got {arr.dtype}")
    info = np.iinfo(t.dtype)
    v = int(arr)
    if not info.min <= v <= info.max:
        raise ArgumentError(f"argument '{name}': {v} does not fit in {t}")
    return t.dtype.type(v)


INT64_MAX = 2**63 - 1
MAX_GROUPS = 2**31 - 1  # the largest launch OpenCL devices accept in one dimension


def meta_ints(key: str, value: Any, dims: tuple[int, ...]) -> np.ndarray:
    """A `.strides`/`.offset` entry as int64 values of one of the allowed numbers of
    dimensions `dims`; anything else (floats, strings, NaN, wrong shape, values beyond
    int64) is an ArgumentError."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise ArgumentError(f"entry '{key}' must hold integers, got {arr.dtype} "
                            f"{_preview(arr)}")
    if arr.ndim not in dims:
        want = " or ".join(f"{d}-d" for d in dims)
        raise ArgumentError(f"entry '{key}' must be a {want} array, got shape {arr.shape}")
    if arr.size and int(arr.max()) > INT64_MAX:  # only uint64 gets here; signs checked later
        raise ArgumentError(f"entry '{key}' holds values beyond 2^63 - 1: {_preview(arr)}")
    return arr.astype(np.int64)


def _preview(arr: np.ndarray) -> str:
    text = str(arr.reshape(-1)[:8].tolist()) if arr.ndim else repr(arr.item())
    return text[:80]


def check_groups(groups: Any) -> Optional[int]:
    """Validate a requested work-group count (None: from the arguments)."""
    if groups is None:
        return None
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, (int, np.integer)):
        raise ArgumentError(f"groups (the number of work-groups) must be an integer, got "
                            f"{type(groups).__name__} {groups!r}"[:200])
    groups = int(groups)
    if not 0 <= groups <= MAX_GROUPS:
        raise ArgumentError(f"the number of work-groups must be in [0, {MAX_GROUPS}], got "
                            f"{str(groups)[:40]}")
    return groups


# a launch's work-groups: a count, or a v0.4 grid (x, y, z) linearised x fastest
Groups = Union[int, tuple[int, int, int]]


def grid_of(groups: Union[int, tuple[int, ...], list]) -> tuple[int, int, int]:
    """A work-group count or a v0.4 grid (x[, y[, z]]) as (x, y, z)."""
    g = tuple(groups) if isinstance(groups, (tuple, list)) else (groups,)
    if not 1 <= len(g) <= 3:
        raise ArgumentError(f"groups: a grid has 1 to 3 dimensions, got {len(g)}")
    if any(x is None for x in g):
        raise ArgumentError(f"groups: every grid size must be an integer, got {g!r}"[:200])
    grid = tuple(int(check_groups(x)) for x in g) + (1,) * (3 - len(g))  # in range
    check_groups(grid[0] * grid[1] * grid[2])  # and so is their product
    return grid  # type: ignore[return-value]


def groups_count(groups: Optional[Groups]) -> Optional[int]:
    """The number of work-groups a count or a grid launches (None: from the arguments)."""
    if isinstance(groups, (tuple, list)):
        x, y, z = grid_of(groups)
        return x * y * z
    return check_groups(groups)


def groups_text(groups: Groups) -> str:
    """How tools write a work-group count or grid (`--groups 4`, `--groups 2,3,1`)."""
    if isinstance(groups, (tuple, list)):
        return ",".join(str(int(g)) for g in groups)
    return str(int(groups))


def parse_groups(text: str) -> Groups:
    """`N` as an int, `X,Y[,Z]` as (x, y, z) (a missing Z is 1); ValueError with a message
    otherwise (the tools' --groups)."""
    parts = text.split(",")
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"expected N or X,Y[,Z], got {text!r}"[:200])
    try:
        nums = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"expected integers N or X,Y[,Z], got {text!r}"[:200]) from None
    if len(nums) == 1:
        return nums[0]  # its range is check_groups' to report
    if any(n < 0 for n in nums):
        raise ValueError(f"the numbers of work-groups in a grid must be >= 0, got {text!r}"[:200])
    return nums + (1,) * (3 - len(nums))  # type: ignore[return-value]


def _check_layout(name: str, shape, strides, item: int) -> None:
    # Spec "Strided layout": 1 <= S_1 and S_{i-1} s_{i-1} <= S_i (no self-overlap).
    for k, st in enumerate(strides):
        if st < 1:
            raise ArgumentError(f"argument '{name}': stride {k} is {st}, strides must be >= 1")
        # Strides are addressed in bytes (NumPy views, OpenCL's 64-bit offsets). A huge
        # stride of a mode of size 1, or of an empty view, adds nothing to the extent, so
        # the memory check (which names the GiB otherwise) does not catch it.
        if st * item > INT64_MAX and (shape[k] <= 1 or 0 in shape):
            raise ArgumentError(f"argument '{name}': stride {k} ({st} elements of {item} "
                                "bytes) is beyond 2^63 - 1 bytes")
        if k and strides[k - 1] * shape[k - 1] > st:
            raise ArgumentError(
                f"argument '{name}': strides {tuple(strides)} overlap for shape {tuple(shape)} "
                f"(S_{k} s_{k} > S_{k + 1})")


def _layout(name: str, t: MemrefType, arr: np.ndarray, strides: Any):
    """Validate one memref's data against its type; returns (shape, strides)."""
    if t.element.is_bool:
        raise ArgumentError(f"argument '{name}': memrefs of i1 have no storage type")
    if arr.dtype not in t.element.storage_dtypes:
        want = " or ".join(str(d) for d in t.element.storage_dtypes)
        raise ArgumentError(f"argument '{name}' has element type {t.element}: expected dtype "
                            f"{want}, got {arr.dtype}")
    if arr.ndim != t.order:
        raise ArgumentError(f"argument '{name}' is {t}: expected {t.order} dimensions, "
                            f"got shape {arr.shape}")
    for k, (want, got) in enumerate(zip(t.shape, arr.shape)):
        if want is not None and want != got:
            raise ArgumentError(f"argument '{name}' is {t}: mode {k} must be {want}, got {got}")
    shape = tuple(int(s) for s in arr.shape)
    if strides is None:
        st: list[int] = []
        acc = 1
        for k, s in enumerate(shape):  # static strides from the type, dynamic ones canonical
            st.append(t.stride[k] if t.stride[k] is not None else acc)
            acc = st[-1] * s
        strides = tuple(st)
    else:
        strides = tuple(int(x) for x in meta_ints(f"{name}.strides", strides, (1,)))
        if len(strides) != t.order:
            raise ArgumentError(f"argument '{name}': {len(strides)} strides given for "
                                f"order {t.order}")
        for k, (want, got) in enumerate(zip(t.stride, strides)):
            if want is not None and want != got:
                raise ArgumentError(f"argument '{name}' is {t}: stride {k} must be {want}, "
                                    f"got {got}")
    _check_layout(name, shape, strides, arr.dtype.itemsize)
    return shape, strides


@dataclass
class RedZones:
    """Guard regions for the fuzzer (see `red_zones`): every buffer bound while active gets
    `guard_bytes` before and after it, and every element no view covers (guards, gaps between
    strided elements, padding, group offsets) holds the byte SENTINEL."""

    guard_bytes: int = 1024  # a multiple of every device's base address alignment
    buffers: list = field(default_factory=list)  # (argument name, buffer, covered mask, guard)

    SENTINEL = 0xA5

    def damaged(self) -> list[tuple[str, int, np.ndarray]]:
        """(argument name, guard elements, element indices whose sentinel changed)."""
        out = []
        for name, buf, covered, guard in self.buffers:
            raw = buf.view(np.uint8).reshape(buf.size, buf.itemsize)
            bad = (raw != self.SENTINEL).any(axis=1) & ~covered
            if bad.any():
                out.append((name, guard, np.flatnonzero(bad)))
        return out


_RED_ZONES: Optional[RedZones] = None


@contextmanager
def red_zones(guard_bytes: int = 1024) -> Iterator[RedZones]:
    """While active, `bind` surrounds every memref/group buffer with sentinel-filled guards
    (the views then start at a positive offset); `RedZones.damaged()` after the run finds
    writes outside every view. Used by the fuzz harness only."""
    global _RED_ZONES
    saved, _RED_ZONES = _RED_ZONES, RedZones(guard_bytes)
    try:
        yield _RED_ZONES
    finally:
        _RED_ZONES = saved


def _pack(names, t: MemrefType, datas, strides_list, offset: int) -> list[MemrefArg]:
    """Place several memrefs in ONE buffer, each `offset` elements after its slot's start.
    Group members share a buffer so backends can address them arithmetically."""
    arrs = [np.asarray(d) for d in datas]
    if t.element is ScalarType.bf16:  # bit patterns (uint16, V2) read as the bf16 they encode
        arrs = [a.view(t.element.dtype) if a.dtype in t.element.storage_dtypes else a
                for a in arrs]
    layouts = [_layout(n, t, a, s) for n, a, s in zip(names, arrs, strides_list)]
    slots = [offset + extent(sh, st) for sh, st in layouts]
    total = sum(slots)
    rz = _RED_ZONES
    item = t.element.dtype.itemsize
    guard = 0 if rz is None else -(-rz.guard_bytes // item)
    check_allocation((total + 2 * guard) * item, f"argument '{names[0].split('.')[0]}'")
    buf = np.zeros(max(total + 2 * guard, 1), t.element.dtype)
    if rz is not None:
        buf.view(np.uint8)[...] = RedZones.SENTINEL
        covered = np.zeros(buf.size, bool)
    out, start = [], guard
    for a, (sh, st), slot in zip(arrs, layouts, slots):
        m = MemrefArg(buf, start + offset, sh, st)
        if a.size:
            m.view()[...] = a
            if rz is not None:
                MemrefArg(covered, m.offset, sh, st).view()[...] = True
        out.append(m)
        start += slot
    if rz is not None:
        rz.buffers.append((names[0].split(".")[0], buf, covered, guard))
    return out


def _memref(name: str, t: MemrefType, data: Any, strides: Any) -> MemrefArg:
    return _pack([name], t, [data], [strides], 0)[0]


def _group_offset(name: str, t: GroupType, args: Mapping[str, Any]) -> int:
    key = f"{name}.offset"
    if t.offset is None:
        if key not in args:
            raise ArgumentError(f"argument '{name}' is {t}: missing entry '{key}'")
        off = int(meta_ints(key, args[key], (0,)))
    else:
        off = t.offset
        if key in args and int(meta_ints(key, args[key], (0,))) != off:
            raise ArgumentError(f"argument '{name}': '{key}' differs from the static offset {off}")
    if off < 0:
        raise ArgumentError(f"argument '{name}': group offset must be >= 0, got {off}")
    return off


def member_keys(name: str, args: Mapping[str, Any]) -> list[str]:
    """The `NAME.0`, `NAME.1`, ... entries of a group given member by member, checked to be
    numbered 0..n-1 without gaps (a gap would silently drop the members after it)."""
    found = {}
    for k in args:
        rest = k[len(name) + 1:] if k.startswith(name + ".") else ""
        if rest.isdigit() and rest.isascii():
            if str(int(rest)) != rest:
                raise ArgumentError(f"entry '{k}': member numbers have no leading zeros")
            found[int(rest)] = k
    if found and sorted(found) != list(range(len(found))):
        missing = min(set(range(max(found) + 1)) - set(found))
        shown = ", ".join(f"'{found[i]}'" for i in sorted(found)[:6])
        raise ArgumentError(f"group '{name}': members {shown} are not numbered 0, 1, 2, ...: "
                            f"'{name}.{missing}' is missing")
    return [found[i] for i in range(len(found))]


def _group(name: str, t: GroupType, args: Mapping[str, Any]) -> GroupArg:
    off = _group_offset(name, t, args)
    keys = member_keys(name, args)
    if name in args:
        if keys or any(k.startswith(name + ".") and k.endswith(".strides")
                       and k != f"{name}.strides" for k in args):
            raise ArgumentError(f"group '{name}' is given both as one array '{name}' and as "
                                f"members '{name}.0', ...: give one of the two")
        try:
            arr = np.asarray(args[name])
        except ValueError:  # ragged members in one list
            raise ArgumentError(f"argument '{name}' is {t}: its members differ in shape; give "
                                f"them as '{name}.0', '{name}.1', ...") from None
        if arr.ndim != t.memref.order + 1:
            raise ArgumentError(f"argument '{name}' is {t}: expected an array of shape "
                                f"(members, ...) with {t.memref.order + 1} dimensions, "
                                f"got {arr.shape}")
        datas = list(arr)
        separate = False
    else:
        datas = [args[k] for k in keys]
        if not datas:
            raise ArgumentError(f"missing argument '{name}' ({t}): give '{name}' as one array "
                                f"(members, ...) or '{name}.0', '{name}.1', ...")
        separate = True
    strides = None
    if f"{name}.strides" in args:
        strides = meta_ints(f"{name}.strides", args[f"{name}.strides"], (1, 2))
        if strides.ndim == 2 and strides.shape[0] != len(datas):
            raise ArgumentError(f"entry '{name}.strides' has {strides.shape[0]} rows for "
                                f"{len(datas)} members")
    strides_list = []
    for i in range(len(datas)):
        s = args.get(f"{name}.{i}.strides", None)
        if s is None and strides is not None:
            s = strides[i] if strides.ndim == 2 else strides
        strides_list.append(s)
    names = [f"{name}.{i}" for i in range(len(datas))]
    members = _pack(names, t.memref, datas, strides_list, off) if datas else []
    return GroupArg(members, off, separate)


def group_keys(name: str, members: int) -> set[str]:
    """Every entry a group argument with `members` members may have."""
    keys = {name, f"{name}.offset", f"{name}.strides"}
    for i in range(members):
        keys |= {f"{name}.{i}", f"{name}.{i}.strides"}
    return keys


def _member_count(name: str, args: Mapping[str, Any]) -> int:
    if name in args:
        return len(np.asarray(args[name]))
    return len(member_keys(name, args))


def count_groups(function: ir.Function, args: Mapping[str, Any],
                 groups: Optional[int] = None) -> int:
    """The launch's work-group count as `bind(...).num_groups(groups)` gives it, without
    binding (copying) the arguments. Assumes `args` binds; `bind` reports what is wrong."""
    groups = check_groups(groups)
    if groups is not None:
        return groups
    counts = {_member_count(a.value.name, args) for a in function.args
              if isinstance(a.type, GroupType)}
    return counts.pop() if len(counts) == 1 else 1


def bind(function: ir.Function, args: Mapping[str, Any]) -> BoundArgs:
    """Validate and copy `args` (the .npz convention) for `function`; raises ArgumentError."""
    if not isinstance(args, Mapping):
        raise TypeError(f"args: expected a mapping of argument names to arrays (the .npz "
                        f"convention), got {type(args).__name__}")
    names = {a.value.name for a in function.args}
    known = set()
    values: dict[str, Bound] = {}
    members: set[int] = set()
    for a in function.args:
        name, t = a.value.name, a.type
        if isinstance(t, VoidType):
            raise ArgumentError(f"argument '{name}' has type void")
        if isinstance(t, GroupType):
            g = _group(name, t, args)
            values[name] = g
            members.add(len(g.members))
            known |= group_keys(name, len(g.members)) & set(args)
            continue
        if name not in args:
            raise ArgumentError(f"missing argument '{name}' ({t})")
        known.add(name)
        if isinstance(t, ScalarType):
            values[name] = _scalar(name, t, args[name])
        else:
            known.add(f"{name}.strides")
            values[name] = _memref(name, t, args[name], args.get(f"{name}.strides"))
    unknown = sorted(set(args) - known)
    if unknown:
        hint = ", ".join(sorted(f"'{n}'" for n in names)) or "none"
        raise ArgumentError(f"unexpected entries {', '.join(repr(u) for u in unknown)} "
                            f"(@{function.name} takes {hint})")
    extra = {k: np.asarray(v) for k, v in args.items()
             if k.endswith(".strides") or k.endswith(".offset")}
    if len(members) > 1:
        raise ArgumentError(f"group arguments have different member counts {sorted(members)}")
    return BoundArgs(function, values, extra, members.pop() if members else None)


def unbind(bound: BoundArgs) -> dict[str, np.ndarray]:
    """Every memref and group argument after the run, in the input's keys and layout."""
    out: dict[str, np.ndarray] = {}
    for name, v in bound.values.items():
        if isinstance(v, MemrefArg):
            out[name] = v.view().copy()
        elif isinstance(v, GroupArg):
            if v.separate:
                for i, m in enumerate(v.members):
                    out[f"{name}.{i}"] = m.view().copy()
            else:
                t = next(a.type for a in bound.function.args if a.value.name == name)
                shape = (len(v.members),) + tuple(
                    s if s is not None else (v.members[0].shape[k] if v.members else 0)
                    for k, s in enumerate(t.memref.shape))
                arr = np.empty(shape, t.memref.element.dtype)
                for i, m in enumerate(v.members):
                    arr[i] = m.view()
                out[name] = arr
    out.update(bound.extra_keys)
    return out
