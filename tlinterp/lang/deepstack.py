"""Running a recursive walker on deeply nested code.

The interpreter, the v0.4 checker and the migrations walk regions recursively (a few Python
frames per nesting level; the passes over a whole program through `deep_program_pass`). The parser
accepts up to `parser.MAX_NESTING` levels, more than Python's default recursion limit allows;
such programs run in a thread with a large stack and a raised recursion limit, so shallow
programs (nearly all) pay nothing and the caller's limits are restored afterwards.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from tlinterp.lang import ir

T = TypeVar("T")

SHALLOW = 40  # nesting depth that runs directly, without a thread
FRAMES_PER_LEVEL = 30  # generous: region walk + dispatch + control flow + Env lookups
STACK_BYTES = 512 * 1024 * 1024  # virtual; only the pages used are committed

_LOCK = threading.Lock()
_INSIDE = threading.local()  # set on the deep thread: a deep pass there may start another


def nesting(body: ir.Region) -> int:
    """Deepest region nesting under `body` (the body itself is level 1), without recursion."""
    best = 0
    stack = [(body, 1)]
    while stack:
        region, d = stack.pop()
        best = max(best, d)
        for inst in region.instructions:
            stack.extend((r, d + 1) for r in ir.regions_of(inst))
    return best


def program_nesting(program: ir.Program) -> int:
    """Deepest region nesting of any function of `program`."""
    return max((nesting(f.body) for f in program.functions), default=0)


def deep_program_pass(walk: Callable[..., T]) -> Callable[..., T]:
    """`walk(program, ...)`, a recursive pass over a whole program, run on a stack deep enough
    for the program's nesting (the parser accepts `parser.MAX_NESTING` levels)."""
    @functools.wraps(walk)
    def deep(program: ir.Program, *args, **kwargs) -> T:
        return call_deep(lambda: walk(program, *args, **kwargs), program_nesting(program))
    return deep


def call_deep(fn: Callable[[], T], depth: int) -> T:
    """`fn()`, with stack and recursion limit enough for `depth` nested regions."""
    if depth <= SHALLOW:
        return fn()
    return call_with_frames(fn, FRAMES_PER_LEVEL * depth)


def call_with_frames(fn: Callable[[], T], frames: int) -> T:
    """`fn()` in a thread with a large stack and room for `frames` more Python frames; its
    exception, if any, is raised in the caller's thread."""
    if getattr(_INSIDE, "deep", False):
        # Already on a deep thread holding the lock (the migration to v0.4 runs the v0.4
        # checker on its result): its stack is large; only the recursion limit may need room.
        needed = _depth() + frames + 5000
        if sys.getrecursionlimit() < needed:
            sys.setrecursionlimit(needed)
        return fn()
    result: dict[str, object] = {}

    def work() -> None:
        _INSIDE.deep = True
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            result["error"] = e

    with _LOCK:  # the recursion limit is global: one deep walk at a time
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, frames + 5000))
        try:
            old_size = threading.stack_size()
            try:
                threading.stack_size(STACK_BYTES)
            except (ValueError, RuntimeError):  # platform refuses: the default must do
                pass
            try:
                thread = threading.Thread(target=work, name="tl-deep", daemon=True)
                thread.start()
            finally:
                threading.stack_size(old_size)
            thread.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["value"]  # type: ignore[return-value]


def _depth() -> int:
    """How many Python frames the calling thread already uses."""
    n, f = 0, sys._getframe(1)
    while f is not None:
        n, f = n + 1, f.f_back
    return n
