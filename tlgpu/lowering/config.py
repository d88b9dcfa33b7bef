"""Lowering decisions as plain data, overridable from outside (docs/architecture.md); results
never depend on them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Optional

from tlgpu.lowering.callconv import CONVENTIONS
from tlinterp.lang.diagnostics import BackendError

# knobs whose None means "decided by the device kind" (see LoweringConfig)
DEVICE_DEFAULT = ("fused_multiply_add", "narrow_indices", "warp_groups")
# integer knobs whose None means "decided by the device kind": (value for GPUs, for CPUs)
DEVICE_DEFAULT_INTS = {"unroll_k": (1, 8), "load_batch": (8, 1)}
# knobs whose None means "as much as the device has" (runtime.device_config), with the values
# they take; a value the device lacks is lowered there, so every value is safe to draw
DEVICE_FEATURES = {"tensor_cores": (0, 8, 16)}
# boolean knobs whose None means "as the device has it" (runtime.device_config; False without
# a device); True on a device without the feature is lowered there to False. Not drawn by the
# fuzzer's configs: the feature decides what a kernel may ask for, not how fast it runs
DEVICE_FLAGS = ("atomics_cl20",)
# integer knobs that take one of these values (0: off), or None: decided from the kernel
CHOICES = {"narrow_columns": (0, 1, 2, 4, 8)}
# every knob that takes one of a fixed set of values or None ("auto"): parsed and drawn alike
VALUE_SETS = {**DEVICE_FEATURES, **CHOICES}


@dataclass(frozen=True)
class LoweringConfig:
    """Every knob the lowering turns; None means "choose from the kernel and the device"."""

    work_group_size: Optional[tuple[int, int]] = None  # overridden by a function's attribute
    max_work_group_size: int = 256  # cap for the automatic choice (the runtime lowers it to the
    # device's maximum)
    register_tiles: bool = True  # static-shape gemm: per-work-item register tiles of C
    max_tile: int = 16  # most C elements one work-item keeps in registers
    local_staging: bool = True  # copy static A/B of a gemm to local memory first
    local_staging_bytes: int = 32768  # budget for that copy (per gemm)
    local_staging_min_reuse: int = 32  # stage only when every element is reused this often
    # (min(M, N)); small GEMMs run faster straight from the cache (measured on an H200)
    # `#pragma unroll` factor of the K loop of a static-shape gemm (1: none); None: 1 on GPUs
    # (on an H100, ADER chain 2-7 % faster than 8, sample kernel and GEMM 32^3 the same), 8 on
    # CPUs (pocl: sample kernel 12 ms with 8, 28 ms with 1)
    unroll_k: Optional[int] = None
    local_memory_bytes: int = 49152  # budget for alloca + staging; more is a BackendError
    reuse_local_memory: bool = True  # allocas whose lifetimes do not overlap share memory
    minimise_barriers: bool = True  # False: a barrier after every memory-touching step
    # OpenCL C 1.2 forbids `global T*global*` kernel parameters and NVIDIA enforces it: pass
    # the pointer array as `global ulong*` instead (same bytes; the runtime sets this there)
    group_pointers_as_ulong: bool = False
    # the alloca/staging slab as a `local ulong*` kernel argument instead of a kernel-scope
    # array (same memory; Oclgrind checks uninitialised reads only there, the runtime sets it)
    local_slab_argument: bool = False
    planned_tiles: bool = True  # static-shape gemm: tiles fitted to its M x N and dealt to
    # the work-items in turn (tiles.plan) instead of the work-group's (wg0, wg1) grid (on an
    # H100: ADER chain 1.1-1.6x faster, sample kernel 80% -> 84% of copy bandwidth, GEMM 32^3
    # unchanged)
    clamped_loads: bool = True  # gemm rows/columns past the edge of C load the last in-range
    # element (an index clamped once per tile) instead of a guarded load in every K step; only
    # the store is guarded. Planned tiles that never pass C's edge need neither (on pocl GEMM
    # 32^3 122 -> 110 ms, as before planned tiles; on an H100 ADER f32 N=5 1.566 -> 1.496 ms)
    # The next three are None = "on for GPUs, off for CPUs" (runtime.device_config decides;
    # `--emit opencl` without a device lowers for a GPU); on pocl the first two measured slower,
    # and the third sizes work-groups for GPU warps.
    fused_multiply_add: Optional[bool] = None  # float gemm accumulates with fma(): collective
    # sums may be reassociated (their rounding is bounded, not fixed), so one rounding less is ok
    narrow_indices: Optional[bool] = None  # 32-bit index arithmetic in collectives whose static
    # extents and strides provably fit (64-bit integer multiplies are slow on GPUs)
    # with no size given, a function whose collective outputs all fit one pass of register tiles
    # over 32 work-items gets a 32x1 work-group (one NVIDIA warp) instead of the shape heuristic
    # (on an H100: ADER chain f64/f32, N = 3/5, 1.2-1.4x faster, sample kernel 84 -> 87 % of
    # copy bandwidth; GEMM 32^3 has 1024 outputs, keeps 16x8, and lost 17 % at 32x1)
    warp_groups: Optional[bool] = None
    infer_lifetimes: bool = True  # (with reuse_local_memory) an alloca lives from its first to
    # its last use, not to the end of its region (less local memory per work-group: more
    # work-groups fit on a GPU core)
    local_fences: bool = True  # a barrier ordering only local memory fences only local memory
    # memref arguments the kernel never writes become `global const T* restrict` (each memref
    # argument is a buffer of its own, docs/semantics.md "Arguments"; the compiler may then
    # keep their loads in registers across stores and use its read-only cache path; on an
    # H100 with 32x1 groups, ADER f32 N=5 2.71 -> 1.59 ms, f64 N=3 0.85 -> 0.58 ms, f64 N=5
    # 2.70 -> 2.63 ms; on pocl the sample kernel 19.7 -> 11.8 ms)
    restrict_read_only: bool = True
    # v0.4 coopmatrix mul_add and row reduce where A, C and D hold whole rows per lane (rows a
    # multiple of the sub-group size): each lane computes its own rows from its own A
    # components, B read from memory when it is a load of the same region with nothing
    # written in between, else from local memory (B only); the same order of sums as the
    # general path (coopmatrix.py), which writes A and B to local memory for every entry
    coop_rows: bool = True
    # static-shape f64 gemms in work-groups of whole warps run on NVIDIA's FP64 tensor cores
    # (mma.sync through inline PTX, lower_mma.py) in tiles of this many rows: 16 (m16n8k4,
    # compute capability 9.0), 8 (m8n8k4, 8.0) or 0 (off); None: the most the device has. The
    # runtime lowers a value to what the device has; lowering without a device takes None as 0
    # (on an H100, ADER f64 N=5: 2.64 ms without, 1.99 ms with m8n8k4, 1.96 with m16n8k4)
    tensor_cores: Optional[int] = None
    # a gemm whose output T is op(A) of the next gemm (T written whole, no other access to it
    # in between; chains.py) runs with it as one tensor-core step: the second takes T from the
    # first's accumulators, with no barrier, no loads of T, and no stores of T when nothing
    # reads it later (lower_mma.lower_pair; on an H100, ADER f64 N=5 1.64 -> 1.56 ms, N=3 0.374
    # -> 0.343 ms, with unroll_mma 2; keeping the second's output in registers across the
    # pairs that add into it measured 1.80 ms: 144 registers)
    gemm_pairs: bool = True
    # `#pragma unroll` factor of the K loop of a tensor-core gemm (unroll_k is the register-tile
    # path's): on an H100, ADER f64 N=5 with gemm_pairs 2.32 ms at 1, 1.56 at 2, 1.58 at 3,
    # 1.68 at 4 (the same code, scheduled differently by NVIDIA's compiler)
    unroll_mma: int = 2
    # an elementwise collective (axpby, hadamard, ger) computes this many of a work-item's
    # output elements, loads first, before storing them (lower_collectives._generic): the
    # loads overlap instead of waiting one memory latency each. None: 8 on GPUs, 1 on CPUs
    # (pocl keeps the code it had). Measured with bench/ader.py (driver 580.159), f64 E=1e5:
    # N=5 1.526 -> 1.444 ms on an H100 and 1.507 -> 1.428 ms on an H200 (38 -> 40 % of the
    # FP64 floor), N=3 0.343 -> 0.337 / 0.328 -> 0.327 ms, f32 within 1 %; 4 is as good at
    # N=5 but 6 % slower at N=3, 12 and 16 are 7-13 % slower at N=5 (NVIDIA's compiler
    # schedules the whole kernel differently; an older lowering ran N=5 at 2.1 ms with 8).
    load_batch: Optional[int] = None
    # a tensor-core gemm's last tile column of at most this many columns (N = 9: 1) runs on
    # the FP64 units (fma per lane, then a shuffle sum; lower_mma.py), not as mmas that are
    # mostly padding; not in gemm pairs. None: 1 in a function with one gemm, else 0. On an
    # H100 (bench/gemm_shapes.py), kernels of one batched f64 gemm: 35x9x56 0.180 -> 0.150
    # ms, 56x9x35 0.163 -> 0.146 ms, 7 other shapes within 2 %. In longer chains the fewer
    # registers let more groups onto an SM and the L1 hit rate halves: ADER f64 N=5 without
    # pairs 1.64 -> 1.76 ms, with its pairs narrowed too 1.56 -> 1.8-2.2 ms (L1 hits 80 -> 43 %)
    narrow_columns: Optional[int] = None
    # a tensor-core gemm whose op(A) or op(B) is contiguous along K in global memory, 16-byte
    # aligned (an even stride in the other mode, an even offset), walks K in steps of 8: lane
    # q takes the indices 8 t + 2 q and 8 t + 2 q + 1 and loads both with one `double2` load
    # (lower_mma.py). A warp's load touches the same cache lines for two K steps. On an H100
    # (bench/ader.py, bench/gemm_shapes.py): ADER f64 N=5 1.562 -> 1.532-1.549 ms at E = 1e5,
    # 3.120 -> 3.055 ms at 2e5 (its K_d dq0 gemms; dq0 has 56 rows), N=3 0.344 -> 0.342 ms;
    # batched 32x9x32 1.08x, 32x17x32 1.11x, 35x9x56 0.97x, six other shapes 0.99-1.01x
    k_pairs: bool = True
    # the calling convention the kernel's parameters and its launch follow (callconv.py):
    # "v0.3" (tinytc v0.3.1's, what `opencl` uses) or "v0.4" (tinytc v0.4.0's: all `?` sizes
    # before all `?` strides, a group's `?` size, a launch of wg size x grid per dimension).
    # Not a speed knob: a test's stand-in for another compiler lowers with "v0.4"
    convention: str = "v0.3"
    # v0.4 atomics as OpenCL C 2.0 atomics with the instruction's memory order and scope
    # (lowering/atomics.py; built with -cl-std=CL2.0), else OpenCL C 1.2's relaxed ones,
    # refusing an order or scope they cannot give. None: as the device has them
    atomics_cl20: Optional[bool] = None
    # how sub-group operations run (subgroups.py): "intel" (the device's sub-groups, with
    # intel_reqd_sub_group_size), "nvidia" (warp shuffles through inline PTX), "local" (through
    # local memory, for a work-group of one sub-group). None: the device's (the runtime
    # decides; lowering without a device takes "intel"). Not a speed knob: results are equal
    subgroups: Optional[str] = None

    def for_device(self, gpu: bool) -> LoweringConfig:
        """The device-decided knobs (None) as a GPU or a CPU takes them; lowering without a
        device lowers for a GPU."""
        auto: dict = {k: gpu for k in DEVICE_DEFAULT if getattr(self, k) is None}
        if self.tensor_cores is None:  # portable C unless a device says it has them
            auto["tensor_cores"] = 0
        auto.update({k: False for k in DEVICE_FLAGS if getattr(self, k) is None})
        auto.update({k: v[0] if gpu else v[1] for k, v in DEVICE_DEFAULT_INTS.items()
                     if getattr(self, k) is None})
        return dataclasses.replace(self, **auto) if auto else self

    @staticmethod
    def from_overrides(overrides: dict[str, str] | list[str] | None = None,
                       base: Optional[LoweringConfig] = None) -> LoweringConfig:
        """Parse `KEY=VALUE` overrides (`tlrun --lowering`); unknown keys are a BackendError."""
        base = base or LoweringConfig()
        if overrides is None:
            return base
        if not isinstance(overrides, dict):
            pairs = {}
            for item in overrides:
                key, sep, value = item.partition("=")
                if not sep:
                    raise BackendError(f"--lowering expects KEY=VALUE, got '{item}'")
                pairs[key.strip()] = value.strip()
            overrides = pairs
        known = {f.name: f for f in fields(LoweringConfig)}
        changes = {}
        for key, value in overrides.items():
            if key not in known:
                raise BackendError(f"unknown lowering option '{key}' (known: "
                                   f"{', '.join(sorted(known))})")
            changes[key] = _parse_value(key, str(value), getattr(base, key))
        return dataclasses.replace(base, **changes)


def _parse_value(key: str, text: str, current):
    if key == "subgroups":
        from tlgpu.lowering.v04.subgroups import STRATEGIES

        if text.lower() in ("", "none", "auto"):
            return None
        if text not in STRATEGIES:
            raise BackendError(f"lowering option 'subgroups': '{text}' is not "
                               f"{', '.join(STRATEGIES)} or auto")
        return text
    if key == "convention":
        if text not in CONVENTIONS:
            raise BackendError(f"lowering option 'convention': '{text}' is not "
                               f"{' or '.join(CONVENTIONS)}")
        return text
    try:
        if key == "work_group_size":
            if text.lower() in ("", "none", "auto"):
                return None
            parts = [int(p) for p in text.replace("x", ",").split(",")]
            if len(parts) != 2 or min(parts) < 1:
                raise ValueError
            return (parts[0], parts[1])
        if key in VALUE_SETS:
            if text.lower() in ("", "none", "auto"):
                return None
            if int(text) not in VALUE_SETS[key]:
                raise ValueError
            return int(text)
        if (key in DEVICE_DEFAULT or key in DEVICE_DEFAULT_INTS or key in DEVICE_FLAGS) \
                and text.lower() in ("", "none", "auto"):
            return None
        if isinstance(current, bool) or key in DEVICE_DEFAULT or key in DEVICE_FLAGS:
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError
        value = int(text)
        if value < 1:
            raise ValueError
        return value
    except ValueError:
        kind = ("W,H (two positive integers)" if key == "work_group_size"
                else "true/false/auto" if key in DEVICE_DEFAULT or key in DEVICE_FLAGS
                else " or ".join(map(str, VALUE_SETS[key])) + " or auto"
                if key in VALUE_SETS
                else "true/false" if isinstance(current, bool)
                else "a positive integer or auto" if key in DEVICE_DEFAULT_INTS
                else "a positive integer")
        raise BackendError(f"lowering option '{key}': '{text}' is not {kind}") from None
