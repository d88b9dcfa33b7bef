"""Known device-compiler bugs and how tlgpu builds around them.

Each entry names the devices it applies to (platform name and version, as verified), the
shape of generated OpenCL C that triggers the bug, the build options that avoid it, and the
test holding a stand-alone reproducer. `runtime.build` applies the entries per kernel: a
kernel of the triggering shape is built with the entry's options, every other kernel of the
same source as usual, so users of `tlgpu.run`/`tlrun` get right answers and the fuzzer keeps
testing the device's optimiser on every other shape (docs/fuzzing.md, "Known device bugs").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# block headers of control flow: `if (...) {` / `} else {`, and loops
_BRANCH = re.compile(r"^(\}\s*)?(else\b.*|if\s*\(.*)\{$")
_LOOP = re.compile(r"^(for|while)\s*\(.*\{$|^do\s*\{$")


def pocl_barrier_shape(kernel_source: str) -> bool:
    """True when a `barrier(` statement sits inside an if/else block, or inside a loop nested
    in another loop: the shapes pocl 3.0 miscompiles (a barrier in one loop level is built
    right). The generated C is one statement per line; blocks open at the end of a line and
    close at the start of one."""
    stack: list[str] = []  # per open block: "if", "loop" or "" (a plain block)
    for line in kernel_source.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        if s.startswith("}") and stack:
            stack.pop()
        if s.endswith("{"):
            stack.append("if" if _BRANCH.match(s) else "loop" if _LOOP.match(s) else "")
        elif "barrier(" in s and ("if" in stack or stack.count("loop") >= 2):
            return True
    return False


@dataclass(frozen=True)
class Workaround:
    name: str
    platform: str  # a substring of the platform name (lower case)
    version: str  # a substring of the platform version: only releases seen to have the bug
    triggers: Callable[[str], bool]  # on one kernel's OpenCL C
    options: tuple[str, ...]  # build options that avoid the bug
    bug: str  # what goes wrong
    reproducer: str  # the test that shows it without tlgpu

    def applies_to(self, device) -> bool:
        """`device`: a pyopencl device."""
        return (self.platform in device.platform.name.lower()
                and self.version in device.platform.version)


KNOWN: tuple[Workaround, ...] = (
    Workaround(
        name="pocl-barrier-in-branch-or-nested-loop",
        platform="portable computing language", version="PoCL 3.0",
        triggers=pocl_barrier_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, pocl 3.0 (LLVM 14) runs the wrong branch of an if/else "
            "holding a barrier, and drops stores between the barriers of a loop that holds "
            "a nested barrier loop",
        reproducer="tests/test_gpu_pocl_barrier_loop.py"),
)


def kernel_text(source: str, kernel: str) -> str:
    """The lines of `kernel`'s definition in a tlgpu-generated source ('' when absent)."""
    lines = source.splitlines()
    head = re.compile(rf"^void {re.escape(kernel)}\($")
    for k, line in enumerate(lines):
        if head.match(line):
            for end in range(k + 1, len(lines)):
                if lines[end] == "}":
                    return "\n".join(lines[k:end + 1])
            return "\n".join(lines[k:])
    return ""


def applicable(kernel_source: str, device) -> tuple[Workaround, ...]:
    """The entries for this kernel's OpenCL C on this pyopencl device."""
    return tuple(w for w in KNOWN if w.applies_to(device) and w.triggers(kernel_source))


def options(found: tuple[Workaround, ...]) -> tuple[str, ...]:
    """The build options the entries add, each once, in order."""
    out: list[str] = []
    for w in found:
        out += [o for o in w.options if o not in out]
    return tuple(out)
