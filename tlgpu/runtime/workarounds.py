"""Known device-compiler bugs and how tlgpu builds around them.

Each entry names the devices it applies to (platform name and version, as verified), the
shape of generated OpenCL C that triggers the bug, the build options that avoid it, and the
test holding a stand-alone reproducer. `runtime.build` applies the entries per kernel: a
kernel of the triggering shape is built alone (`only_kernel`) with the entry's options, every
other kernel of the same source as usual, so users of `tlgpu.run`/`tlrun` get right answers
and the fuzzer keeps testing the device's optimiser on every other shape (docs/fuzzing.md,
"Known device bugs").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# block headers of control flow: `if (...) {` / `} else {`, and loops
_BRANCH = re.compile(r"^(\}\s*)?(else\b.*|if\s*\(.*)\{$")
_LOOP = re.compile(r"^(for|while)\s*\(.*\{$|^do\s*\{$")
_LOOP_LINE = re.compile(r"^(for|while)\s*\(")


def pocl_barrier_shape(kernel_source: str) -> bool:
    """True when a `barrier(` statement sits inside an if/else block, or inside a loop that
    also holds another loop (with or without barriers): the shapes pocl 3.0 miscompiles or
    crashes on (a loop holding barriers and straight-line code is built right). The generated
    C is one statement per line; blocks open at the end of a line and close at the start."""
    # per open block: its kind ("if", "loop" or "" for a plain block) and, for loops,
    # whether it holds a barrier and whether it holds another loop
    stack: list[list] = []
    for line in kernel_source.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        if s.startswith("}") and stack:
            kind, barrier, inner = stack.pop()
            if kind == "loop" and barrier and inner:
                return True
            for outer in stack:  # what the closed block held, its enclosing blocks hold
                outer[1] = outer[1] or barrier
                outer[2] = outer[2] or kind == "loop" or inner
        if s.endswith("{"):
            stack.append(["if" if _BRANCH.match(s) else "loop" if _LOOP.match(s) else "",
                          False, False])
        elif "barrier(" in s:
            if any(b[0] == "if" for b in stack):
                return True
            if stack:
                stack[-1][1] = True
        elif _LOOP_LINE.match(s):  # a one-line loop (`for (...) x = y;`) is a loop too
            for outer in stack:
                outer[2] = True
    return False


def pocl_coopmatrix_shape(kernel_source: str) -> bool:
    """True when the kernel holds coopmatrix values (their struct types, `tl_cm_...`,
    ctypes_map.ctype) and has a work-group barrier: pocl 3.0 loses stores of such kernels
    (tests/data/pocl30-lost-stores) whether the matrices move through the sub-groups' local
    scratch or stay in registers (the kernel of that reproducer, lowered with coop_rows, has no
    scratch and still loses them)."""
    return "tl_cm_" in kernel_source and "barrier(" in kernel_source


# a division (`x / y`, `x /= y`) and a remainder (`x % y`) by a variable (a constant divisor
# becomes shifts or a multiplication, no freeze): the lowering writes the operators between
# spaces
_DIV = re.compile(r"(\w+) /=? ([A-Za-z_]\w*)\b")
_REM = re.compile(r"(\w+) % ([A-Za-z_]\w*)\b")


def div_and_rem_shape(kernel_source: str) -> bool:
    """True when the kernel divides x by a variable y and also takes x % y: clang's optimiser
    pairs the two and inserts `freeze`, an instruction Oclgrind 21.10 cannot simulate."""
    return bool(set(_DIV.findall(kernel_source)) & set(_REM.findall(kernel_source)))


def f16_shape(kernel_source: str) -> bool:
    """True when the kernel converts f16 values to float (lowering/v04/lowp.py's helper):
    Oclgrind 21.10's optimiser then compares -0.0 and +0.0 as different and rounds f16
    products and sums differently from pocl and Intel (tests/test_gpu_oclgrind.py)."""
    return "tl_f16_f32(" in kernel_source


# a C conversion to a 16-bit integer type: how the lowering wraps every i16/u16 result
_TO_16BIT = re.compile(r"\(u?short\)")


def sixteen_bit_shape(kernel_source: str) -> bool:
    """True when the kernel computes or converts 16-bit integers (a cast to `short` or
    `ushort`). NVIDIA's optimiser sign-extends the 16-bit result of a negation wrongly, and
    the negation may be written many ways (`-x`, `0 - x`, `x * -1`, `~x + 1`), across
    statements, in any width before the truncation; every 16-bit result passes through such a
    cast, so the shape is the cast itself. Loads and stores of 16-bit values need none, and
    f16/bf16 bit patterns are spelt `tl_f16`/`tl_bf16` (typedefs of ushort,
    ctypes_map.C_TYPES): float code keeps its optimiser."""
    return _TO_16BIT.search(kernel_source) is not None


def intel_ldexp_shape(kernel_source: str) -> bool:
    """True when the kernel converts a 64-bit integer to f16 or bf16 through the round-to-odd
    helper (lowering/v04/lowp.py's `tl_odd_f32_l`), which scales by `ldexp` in a branch: Intel's
    CPU compiler vectorises a kernel of sub-group size 32 32 lanes wide and then finds no
    32-wide masked ldexp to link. The sub-group size is an attribute outside the kernel's
    text, so kernels of other sizes (which build) get the options too."""
    return "tl_odd_f32_l(" in kernel_source


@dataclass(frozen=True)
class Workaround:
    name: str
    platform: str  # a substring of the platform name (lower case)
    # the releases seen with the bug, each as it appears in the platform version ("PoCL 3.0"
    # matches "PoCL 3.0-rc2" and "PoCL 3.0.1", never "PoCL 3.01" or "PoCL 3.1") or in the
    # driver version (Intel's platform version names no release): a release not listed is
    # tested in full, and its reproducer tests say whether it has the bug
    versions: tuple[str, ...]
    triggers: Callable[[str], bool]  # on one kernel's OpenCL C
    options: tuple[str, ...]  # build options that avoid the bug
    bug: str  # what goes wrong
    reproducer: str  # the test that shows it without tlgpu

    def applies_to(self, device) -> bool:
        """`device`: a pyopencl device."""
        where = f"{device.platform.version} {getattr(device, 'driver_version', '')}"
        return (self.platform in device.platform.name.lower()
                and any(release_in(v, where) for v in self.versions))


def release_in(release: str, platform_version: str) -> bool:
    """Whether `platform_version` names `release` exactly, not as the prefix of a longer number
    ('PoCL 3.0' is in 'OpenCL 3.0 PoCL 3.0-rc2 Linux', not in 'PoCL 3.1' or 'PoCL 3.01')."""
    return re.search(re.escape(release) + r"(?![0-9])", platform_version) is not None


KNOWN: tuple[Workaround, ...] = (
    Workaround(
        name="pocl-barrier-in-branch-or-loop-nest",
        platform="portable computing language", versions=("PoCL 3.0", "PoCL 3.1"),
        triggers=pocl_barrier_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, pocl 3.0 (LLVM 14) and Debian's pocl 3.1 (LLVM 15) skip "
            "the branch of an if/else that holds a barrier, drop stores between the barriers "
            "of a loop that holds a nested barrier loop, and abort ('Could not find a "
            "dominating alternative variable') on a loop holding a barrier and another loop",
        reproducer="tests/test_gpu_pocl_barrier_loop.py"),
    Workaround(
        name="pocl30-coopmatrix-lost-stores",
        platform="portable computing language", versions=("PoCL 3.0",),
        triggers=pocl_coopmatrix_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, pocl 3.0 (LLVM 14) stores garbage or nothing from a "
            "kernel that holds coopmatrices across work-group barriers "
            "(a mul_add's result stored as 0 or 6.9e-310); pocl 3.1, Intel, Oclgrind and "
            "-cl-opt-disable compute it right",
        reproducer="tests/test_gpu_pocl_coopmatrix.py"),
    Workaround(
        name="oclgrind-freeze",
        platform="oclgrind", versions=("Oclgrind 21.10",),
        triggers=div_and_rem_shape, options=("-cl-opt-disable",),
        bug="Oclgrind 21.10 stops ('fatal error of the simulator: Unsupported instruction: "
            "freeze') on the freeze that clang's optimiser inserts when it pairs a division "
            "with a remainder of the same operands",
        reproducer="tests/test_gpu_oclgrind.py"),
    Workaround(
        name="oclgrind-f16",
        platform="oclgrind", versions=("Oclgrind 21.10",),
        triggers=f16_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, Oclgrind 21.10 finds -0.0 == +0.0 false when both come "
            "from f16 bits through the exact f16-to-float conversion, and a f16 mul_add "
            "differs from the interpreter, pocl and Intel in the last bits",
        reproducer="tests/test_gpu_oclgrind.py"),
    Workaround(
        name="nvidia-16bit-negation-sign-extension",
        platform="nvidia cuda", versions=("CUDA 13.0",),
        triggers=sixteen_bit_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, NVIDIA's OpenCL compiler (H100, CUDA 13.0, NVVM 7.0.1) "
            "sign-extends a negated 16-bit value as if the negation did not wrap: "
            "(long)(short)(-x) is 32768 for x = -32768 (short or ushort 0x8000), and so are "
            "0 - x, x * -1, x * 0xFFFF and ~x + 1; 8-bit values are built right",
        reproducer="tests/test_gpu_nvidia_neg16.py"),
    Workaround(
        name="intel-cpu-ldexp-32-wide",
        platform="intel(r) opencl", versions=("2026.22.10",),
        triggers=intel_ldexp_shape, options=("-cl-opt-disable",),
        bug="with optimisation on, Intel's CPU OpenCL runtime (driver 2026.22.10) vectorises "
            "a kernel of sub-group size 32 32 lanes wide and then cannot link an ldexp in a "
            "branch ('JIT session error: Symbols not found: [ _Z5ldexpDv32_fDv32_iS_ ]'); "
            "sub-group size 16 and -cl-opt-disable build it",
        reproducer="tests/test_gpu_intel_ldexp.py"),
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


def only_kernel(source: str, kernel: str) -> str:
    """`source` with every other kernel's definition blanked out, line for line (the line
    table still maps build-log lines to instructions): what a workaround's build compiles,
    so that its options cost the compile time of one kernel, not of the whole batch."""
    lines = source.splitlines()
    head = re.compile(r"^void (\w+)\($")
    out = list(lines)
    for k, line in enumerate(lines):
        m = head.match(line)
        if m is None or m.group(1) == kernel:
            continue
        start = k - 1 if k and lines[k - 1].startswith("kernel") else k
        end = next((e for e in range(k + 1, len(lines)) if lines[e] == "}"), len(lines) - 1)
        out[start:end + 1] = [""] * (end + 1 - start)
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def applicable(kernel_source: str, device) -> tuple[Workaround, ...]:
    """The entries for this kernel's OpenCL C on this pyopencl device."""
    return tuple(w for w in KNOWN if w.applies_to(device) and w.triggers(kernel_source))


def options(found: tuple[Workaround, ...]) -> tuple[str, ...]:
    """The build options the entries add, each once, in order."""
    out: list[str] = []
    for w in found:
        out += [o for o in w.options if o not in out]
    return tuple(out)
