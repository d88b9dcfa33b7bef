"""Types of the tensor language: scalars, memrefs (with strided layout) and groups.

`None` stands for a dynamic (`?`) size, stride or offset everywhere.
Types are frozen and normalised (strides always explicit), so
`memref<f32x5x6x7>` and `memref<f32x5x6x7,strided<1,5,30>>` compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional, Union

import numpy as np

Dyn = Optional[int]  # a static integer or None for '?'
DYNAMIC = None


class ScalarType(Enum):
    """Scalar types; the value is the canonical spelling."""

    i1 = "i1"
    i8 = "i8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    index = "index"
    u8 = "u8"
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    f32 = "f32"
    f64 = "f64"

    @property
    def is_float(self) -> bool:
        return self in (ScalarType.f32, ScalarType.f64)

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @property
    def is_bool(self) -> bool:
        return self is ScalarType.i1

    @property
    def is_signed(self) -> bool:
        """Signless i* and index are treated as signed (two's complement, C semantics)."""
        return self.is_int and not self.value.startswith("u")

    @property
    def bits(self) -> int:
        if self is ScalarType.index:
            return 64
        return int(self.value[1:])

    @property
    def dtype(self) -> np.dtype:
        """NumPy dtype used for values and storage (i1 is bool; it has no memref storage)."""
        return np.dtype(_DTYPES[self])

    def __str__(self) -> str:
        return self.value


_DTYPES = {
    ScalarType.i1: np.bool_,
    ScalarType.i8: np.int8,
    ScalarType.i16: np.int16,
    ScalarType.i32: np.int32,
    ScalarType.i64: np.int64,
    ScalarType.index: np.int64,
    ScalarType.u8: np.uint8,
    ScalarType.u16: np.uint16,
    ScalarType.u32: np.uint32,
    ScalarType.u64: np.uint64,
    ScalarType.f32: np.float32,
    ScalarType.f64: np.float64,
}

# Older spellings accepted by the parser (docs/semantics.md "Accepted syntax").
SCALAR_ALIASES = {"bool": ScalarType.i1}


def canonical_strides(shape: tuple[Dyn, ...]) -> tuple[Dyn, ...]:
    """Packed column-major strides: S_1 = 1, S_i = S_{i-1} s_{i-1}; '?' propagates."""
    strides: list[Dyn] = []
    s: Dyn = 1
    for size in shape:
        strides.append(s)
        s = None if (s is None or size is None) else s * size
    return tuple(strides)


@dataclass(frozen=True)
class MemrefType:
    element: ScalarType
    shape: tuple[Dyn, ...]
    stride: tuple[Dyn, ...]

    @staticmethod
    def make(element: ScalarType, shape, stride=None) -> MemrefType:
        shape = tuple(shape)
        stride = canonical_strides(shape) if stride is None else tuple(stride)
        return MemrefType(element, shape, stride)

    @property
    def order(self) -> int:
        return len(self.shape)

    @property
    def is_canonical(self) -> bool:
        return self.stride == canonical_strides(self.shape)

    @property
    def is_static(self) -> bool:
        return None not in self.shape and None not in self.stride

    def __str__(self) -> str:
        """The one spelling of a memref type (the printer and every message use it)."""
        text = "memref<" + self.element.value + "".join("x" + _dyn(s) for s in self.shape)
        if not self.is_canonical:
            text += ",strided<" + ",".join(_dyn(s) for s in self.stride) + ">"
        return text + ">"


@dataclass(frozen=True)
class GroupType:
    memref: MemrefType
    offset: Dyn = 0

    def __str__(self) -> str:
        text = f"group<{self.memref}"
        if self.offset != 0:
            text += ", offset: " + _dyn(self.offset)
        return text + ">"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "void"


def _dyn(d: Dyn) -> str:
    return "?" if d is None else str(int(d))


Type = Union[ScalarType, MemrefType, GroupType, VoidType]
INDEX = ScalarType.index
BOOL = ScalarType.i1
