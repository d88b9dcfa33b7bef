"""What the generator knows about a value, a buffer or a view while it builds a kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from tlinterp.lang import ir
from tlinterp.lang.ir import Value
from tlinterp.lang.types import MemrefType, ScalarType


@dataclass
class Scal:
    op: ir.Operand
    type: ScalarType
    rng: object  # IRange | FRange
    nonzero: bool = False  # integers: never 0 although rng may contain 0 (guarded divisors)


@dataclass
class Buf:
    name: str
    kind: str  # "input" | "own" | "alloca" | "atomic"
    elem: ScalarType
    cap: int = 0  # integer buffers: |value| bound that reads may assume (readable ones)
    readable: bool = True
    initialised: bool = True
    acc: float = 0.0  # integer sinks: accumulated magnitude bound
    finite: bool = True  # float inputs: no NaN/Inf in the data
    edge: bool = False  # integer inputs holding type edges (MIN, MAX, ...): loads span the type
    level: int = 0  # allocas: scope depth of the defining region
    alive: bool = True  # allocas: before the end of their region


@dataclass
class View:
    value: Value
    type: MemrefType
    dims: tuple[tuple[int, int], ...]  # run-time size interval per mode (over work-groups)
    strides: tuple[Optional[int], ...]  # concrete strides, None where they vary or are unknown
    buf: Buf
    full: bool = False  # covers the whole buffer (an alloca initialised through it)


@dataclass
class Scope:
    insts: list = field(default_factory=list)
    scalars: list = field(default_factory=list)
    views: list = field(default_factory=list)


class Unavailable(Exception):
    """The requested construct cannot be built in the current state (caller tries another)."""


@dataclass
class ArgSpec:
    """What the generator decided for one argument: type and the arrays to pass."""

    name: str
    type: object
    data: dict  # .npz entries
