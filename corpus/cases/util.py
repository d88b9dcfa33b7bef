"""Building blocks for corpus cases: type spellings, layouts, deterministic data."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Optional

import numpy as np

FLOATS = ("f32", "f64")
SIGNED = ("i8", "i16", "i32", "i64", "index")
UNSIGNED = ("u8", "u16", "u32", "u64")
INTS = SIGNED + UNSIGNED
LAYOUTS = ("canonical", "strided", "dynshape", "dynstride")

DTYPE = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
         "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
         "f32": np.float32, "f64": np.float64}


def dtype(t: str) -> np.dtype:
    return np.dtype(DTYPE[t])


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded by the case name: regeneration is deterministic per case."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def data(rng: np.random.Generator, t: str, shape, lo: int = -3, hi: int = 3) -> np.ndarray:
    """Small values: floats are multiples of 1/8 (sums of products stay exact), integers lie in
    [lo, hi] (never negative for unsigned types)."""
    if t in FLOATS:
        return (rng.integers(-16, 17, size=shape) / 8).astype(dtype(t))
    if t in UNSIGNED:
        lo = max(lo, 0)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype(t))


def scalar(t: str, v) -> np.ndarray:
    return np.asarray(v, dtype=dtype(t))


def canonical(shape) -> tuple:
    out, s = [], 1
    for n in shape:
        out.append(s)
        s = None if (s is None or n is None) else s * n
    return tuple(out)


def fmt_dim(d: Optional[int]) -> str:
    return "?" if d is None else str(d)


def memref(t: str, shape, strides=None) -> str:
    """`memref<T x shape [,strided<...>]>`, the layout written only when not canonical."""
    shape = tuple(shape)
    dims = "".join(f"x{fmt_dim(d)}" for d in shape)
    if strides is None or tuple(strides) == canonical(shape):
        return f"memref<{t}{dims}>"
    return f"memref<{t}{dims},strided<{','.join(fmt_dim(s) for s in strides)}>>"


def group(mt: str, offset=0) -> str:
    if offset == 0:
        return f"group<{mt}>"
    return f"group<{mt}, offset: {fmt_dim(offset)}>"


@dataclass(frozen=True)
class Layout:
    """A memref argument's written type (shape and strides, None for '?') and the run-time
    strides to pass as NAME.strides (None: the binding's default)."""

    shape: tuple
    strides: tuple
    runtime_strides: Optional[tuple]

    def type(self, t: str) -> str:
        return memref(t, self.shape, self.strides)

    def drop_last(self) -> Layout:
        """The layout of `subview X[:,…,:,%g]` (the last mode rank-reduced)."""
        return Layout(self.shape[:-1], self.strides[:-1], None)


def padded(shape, first: int = 1) -> tuple:
    """Strides with one element of padding after every mode (a non-canonical layout)."""
    out, s = [], first
    for n in shape:
        out.append(s)
        s = s * n + 1
    return tuple(out)


def layout(kind: str, shape) -> Layout:
    shape = tuple(shape)
    if kind == "canonical":
        return Layout(shape, canonical(shape), None)
    if kind == "strided":
        return Layout(shape, padded(shape), None)
    if kind == "dynshape":
        dyn = (None,) * len(shape)
        return Layout(dyn, canonical(dyn), None)
    if kind == "dynstride":
        return Layout(shape, (None,) * len(shape), padded(shape, first=2))
    raise ValueError(kind)


def mem_arg(name: str, kind: str, value: np.ndarray) -> tuple[Layout, dict[str, np.ndarray]]:
    """A memref argument in layout `kind`: its Layout and its .npz entries."""
    lay = layout(kind, value.shape)
    entries = {name: value}
    if lay.runtime_strides is not None:
        entries[f"{name}.strides"] = np.asarray(lay.runtime_strides, np.int64)
    return lay, entries


def outputs(args: dict[str, np.ndarray], scalars, **updated: np.ndarray) -> dict[str, np.ndarray]:
    """The expected output file: every non-scalar entry of `args`, with `updated` replacing."""
    out = {k: np.array(v) for k, v in args.items() if k not in scalars}
    for k, v in updated.items():
        if k not in out:
            raise KeyError(f"output {k} is not an argument")
        out[k] = np.asarray(v).astype(out[k].dtype)
    return out


def const(t: str, v) -> str:
    """A literal spelled for type t (floats with a point, integers without)."""
    if t in FLOATS:
        return repr(float(v))
    return str(int(v))


def tags(instruction, types, layouts) -> dict[str, list[str]]:
    def as_list(x):
        return sorted(set([x] if isinstance(x, str) else x))

    return {"instruction": as_list(instruction), "type": as_list(types),
            "layout": as_list(layouts)}
