"""Types of the tensor language: scalars, memrefs (with strided layout) and groups.

`None` stands for a dynamic (`?`) size, stride or offset everywhere.
Types are frozen and normalised (strides always explicit), so
`memref<f32x5x6x7>` and `memref<f32x5x6x7,strided<1,5,30>>` compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional, Union

import ml_dtypes
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
    # v0.4 only (tensor language v0.4; see V04_ONLY_SCALARS)
    f16 = "f16"
    bf16 = "bf16"
    c32 = "c32"
    c64 = "c64"

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_complex(self) -> bool:
        return self in (ScalarType.c32, ScalarType.c64)

    @property
    def is_int(self) -> bool:
        return not self.is_float and not self.is_complex

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
        return 16 if self is ScalarType.bf16 else int(self.value[1:])

    @property
    def dtype(self) -> np.dtype:
        """NumPy dtype used for values and storage (i1 is bool; it has no memref storage)."""
        return np.dtype(_DTYPES[self])

    @property
    def storage_dtypes(self) -> tuple[np.dtype, ...]:
        """dtypes an argument array of this type may arrive in: its own; for bf16 also uint16
        bit patterns and 2-byte void (what an .npy file of an ml_dtypes bfloat16 array holds),
        since the .npy format cannot name bfloat16 (docs/language.md "Arguments")."""
        if self is ScalarType.bf16:
            return (self.dtype, np.dtype(np.uint16), np.dtype("V2"))
        return (self.dtype,)

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
    ScalarType.f16: np.float16,
    # bfloat16 has no NumPy dtype: ml_dtypes' (tlinterp/interp/lowp.py computes with it)
    ScalarType.bf16: ml_dtypes.bfloat16,
    ScalarType.c32: np.complex64,
    ScalarType.c64: np.complex128,
}
_FLOATS = frozenset({ScalarType.f16, ScalarType.bf16, ScalarType.f32, ScalarType.f64})

# Scalar types that only tensor language v0.4 spells (the v0.3 grammar, the fuzzer and the
# interpreter leave them alone).  v0.4's `bool` is ScalarType.i1 (one IR): v0.3 spells it `i1`.
V04_ONLY_SCALARS = frozenset({ScalarType.f16, ScalarType.bf16, ScalarType.c32, ScalarType.c64})
V03_SCALARS = tuple(t for t in ScalarType if t not in V04_ONLY_SCALARS)

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
    # v0.4 address space, "global" or "local".  Excluded from equality: v0.3 spells no address
    # space (an alloca'd memref is local there too, implicitly), so a v0.3 program and its v0.4
    # spelling compare equal; the v0.4 checker compares spaces itself (checker_v04).
    space: str = field(default="global", compare=False)

    @staticmethod
    def make(element: ScalarType, shape, stride=None, space: str = "global") -> MemrefType:
        shape = tuple(shape)
        stride = canonical_strides(shape) if stride is None else tuple(stride)
        return MemrefType(element, shape, stride, space)

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
    size: Dyn = None  # v0.4's mandatory group size; v0.3 groups have a dynamic size ('?')

    def __str__(self) -> str:
        text = f"group<{self.memref}"
        if self.size is not None:  # only v0.4 programs have a static size
            text += f"x{self.size}"
        if self.offset != 0:
            text += ", offset: " + _dyn(self.offset)
        return text + ">"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "void"


MATRIX_USES = ("matrix_a", "matrix_b", "matrix_acc")


@dataclass(frozen=True)
class CoopMatrixType:
    """v0.4 `coopmatrix<T x M x N, use>`: a matrix distributed across a subgroup."""

    component: ScalarType
    rows: int
    cols: int
    use: str  # one of MATRIX_USES

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def __str__(self) -> str:
        return f"coopmatrix<{self.component.value}x{self.rows}x{self.cols},{self.use}>"


def _dyn(d: Dyn) -> str:
    return "?" if d is None else str(int(d))


Type = Union[ScalarType, MemrefType, GroupType, VoidType, CoopMatrixType]
INDEX = ScalarType.index
BOOL = ScalarType.i1
