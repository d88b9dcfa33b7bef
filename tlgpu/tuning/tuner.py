"""The autotuner: time candidate lowering configs of one kernel on one device, keep the fastest.

The search is coordinate descent over the axes of `SPACE`, starting from the default config:
each axis's values are timed with the best choice so far for the others, and the winner of an
axis is kept before the next one; sweeps repeat until one brings no gain (at most
`MAX_SWEEPS`), and a config met again is not timed again. Nor is a config that lowers to the
OpenCL C of one already timed (a knob the kernel does not reach: tensor-core knobs on an f32
kernel): it gets that config's time, so it never wins on timing noise, and the report names
the config whose code it shares. An axis is one knob, or knobs that
interact too strongly to be tuned one at a time (the group shape and the K unrolling: on an
H100 the ADER chain's best group shape lost 40 % with the default unrolling, so one knob at a
time never reached it). Every candidate is a
`LoweringConfig`, the same knobs the fuzzer draws (`fuzz.strategies.lowering_configs`), so the
tuner can only pick configs the fuzzer checks. Arguments are marshalled once and every
candidate runs on the same buffers (timing only: the outputs of a tuning run are not the
kernel's result). The winner is cached on disk per
(kernel source, function, device), in the user cache directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from tlgpu.lowering.config import LoweringConfig
from tlinterp.io.args import bind
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import TLError

GROUP_SHAPES = (None, (32, 1), (16, 4), (8, 8), (32, 2), (32, 4), (16, 8), (16, 16))
UNROLLS = (1, 2, 4, 8)

# axis -> values tried (coordinate descent, in this order); an axis is a knob, or a tuple of
# knobs whose values are tuples (searched jointly). A knob may come back: tile size and group
# shape depend on each other.
SPACE: tuple[tuple, ...] = (
    ("planned_tiles", (False, True)),
    ("max_tile", (4, 6, 9, 16, 32)),
    (("work_group_size", "unroll_k"), tuple((g, u) for g in GROUP_SHAPES for u in UNROLLS)),
    ("max_tile", (4, 6, 9, 16, 32)),
    ("clamped_loads", (True, False)),
    ("fused_multiply_add", (True, False)),
    ("local_staging", (True, False)),
    ("local_fences", (True, False)),
    ("infer_lifetimes", (True, False)),
    ("narrow_indices", (True, False)),
    ("tensor_cores", (16, 8, 0)),  # lowered to what the device has: one trial off NVIDIA
    # the group shape again under each tensor-core setting, jointly: one knob at a time, the
    # search stopped at (tensor cores, 8x8) for GEMM 32^3 f64 on an H200 (0.655 ms) while
    # (no tensor cores, 16x8) ran 0.599 ms in the same run, two changes away
    (("tensor_cores", "work_group_size"), tuple((t, g) for t in (16, 8, 0)
                                                for g in GROUP_SHAPES)),
    ("unroll_mma", (2, 1, 3, 4)),
    ("narrow_columns", (None, 0, 1, 2)),
    ("k_pairs", (True, False)),
    ("gemm_pairs", (True, False)),
    ("load_batch", (1, 4, 6, 8)),
)


MAX_SWEEPS = 3


def candidates(space: tuple = SPACE):
    """Every value of every axis as a dict of knob changes, in search order."""
    for axis, values in space:
        for v in values:
            yield dict(zip(axis, v)) if isinstance(axis, tuple) else {axis: v}


@dataclass
class Trial:
    config: LoweringConfig
    seconds: Optional[float]  # median kernel time; None when it failed
    error: str = ""
    same_as: Optional[LoweringConfig] = None  # lowered to this earlier trial's code: not timed


@dataclass
class TuneResult:
    best: LoweringConfig
    trials: list[Trial] = field(default_factory=list)  # empty when the winner came from cache
    cached: bool = False
    device: str = ""


def changes(config: LoweringConfig) -> dict:
    """The knobs of `config` that differ from the defaults (what the cache stores)."""
    base = LoweringConfig()
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if getattr(config, f.name) != getattr(base, f.name)}


def describe(config: LoweringConfig) -> str:
    ch = changes(config)
    return " ".join(f"{k}={_text(v)}" for k, v in ch.items()) or "default"


def _text(v) -> str:
    return f"{v[0]}x{v[1]}" if isinstance(v, tuple) else str(v)


def cache_path() -> Path:
    """`$TL_TUNE_CACHE`, else tune.json in the user cache directory."""
    if os.environ.get("TL_TUNE_CACHE"):
        return Path(os.environ["TL_TUNE_CACHE"])
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("tensor-language")) / "tune.json"
    except ImportError:  # platformdirs comes with pyopencl; this is a fallback only
        return Path.home() / ".cache" / "tensor-language" / "tune.json"


def cache_key(program: ir.Program, function: ir.Function, device_key: str) -> str:
    text = f"{program.source}\0{function.name}\0{device_key}"
    return hashlib.sha256(text.encode()).hexdigest()


def _load_cache() -> dict:
    try:
        return json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}  # no cache yet, or an unreadable one: search again


def _store(key: str, result: TuneResult) -> None:
    data = _load_cache()
    best = {k: list(v) if isinstance(v, tuple) else v for k, v in changes(result.best).items()}
    data[key] = {"device": result.device, "config": best}
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs a new search next time


def cached(program: ir.Program, function: ir.Function, device_key: str
           ) -> Optional[LoweringConfig]:
    entry = _load_cache().get(cache_key(program, function, device_key))
    if not isinstance(entry, dict):
        return None
    try:
        values = {k: tuple(v) if isinstance(v, list) else v
                  for k, v in entry.get("config", {}).items()}
        return dataclasses.replace(LoweringConfig(), **values)
    except TypeError:
        return None  # written by a version with other knobs


def tune(program: Union[ir.Program, str], args: dict, func: Optional[str] = None,
         groups: Optional[int] = None, device: Optional[str] = None, reps: int = 5,
         use_cache: bool = True, space: tuple = SPACE) -> TuneResult:
    """Search lowering configs for `func` on `device` with these arguments (.npz convention)."""
    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.launch import _as_program, _Marshal, device_config, lowered_for

    program = _as_program(program)
    function = program.function(func)
    dev = handle(device)
    key = cache_key(program, function, dev.key)
    if use_cache:
        hit = cached(program, function, dev.key)
        if hit is not None:
            return TuneResult(hit, [], True, dev.device.name)
    bound = bind(function, args)
    n = bound.num_groups(groups)
    marshal = _Marshal(dev)
    kargs = marshal.args(function, bound)
    result = TuneResult(LoweringConfig(), [], False, dev.device.name)
    seen: dict[LoweringConfig, Optional[float]] = {}
    timed: dict[tuple, Trial] = {}  # lowered code -> the trial that timed it

    def trial(cfg: LoweringConfig) -> Optional[float]:
        resolved = device_config(dev, cfg)  # None knobs as this device resolves them
        if resolved not in seen:
            t = Trial(cfg, None)
            code = None
            try:
                code = _code(lowered_for(program, dev, resolved), function.name)
                first = timed.get(code)
                if first is not None:
                    t.seconds, t.error, t.same_as = first.seconds, first.error, first.config
                else:
                    t.seconds = _time(program, function, device, dev, cfg, kargs, n, reps)
            except TLError as e:
                t.error = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if code is not None:
                timed.setdefault(code, t)
            seen[resolved] = t.seconds
            result.trials.append(t)
        return seen[resolved]

    best = LoweringConfig()
    best_s = trial(best)
    for _ in range(MAX_SWEEPS):
        start = best
        for changes_ in candidates(space):
            cand = dataclasses.replace(best, **changes_)
            s = trial(cand)
            if s is not None and (best_s is None or s < best_s):
                best, best_s = cand, s
        if best == start:
            break
    result.best = best
    if best_s is not None:
        _store(key, result)
    return result


def _code(lowered, func: str) -> tuple:
    """What decides the kernel that runs: its OpenCL C, work-group size and local slab."""
    kname, geo = lowered.kernels[func]
    return lowered.source, kname, (geo.wg0, geo.wg1), lowered.local_args.get(func)


def _time(program, function, device, dev, cfg, kargs, groups: int, reps: int) -> float:
    import pyopencl as cl

    from tlgpu.runtime.launch import prepare
    from tlinterp.lang.diagnostics import ExecutionError

    _, kernel, geo = prepare(program, function, device, cfg)
    if groups == 0:
        return 0.0
    g = (geo.wg0, geo.wg1, groups)
    loc = (geo.wg0, geo.wg1, 1)
    try:
        kernel(dev.queue, g, loc, *kargs).wait()  # warm-up
        times = []
        for _ in range(max(1, reps)):
            ev = kernel(dev.queue, g, loc, *kargs)
            ev.wait()
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
    except cl.Error as e:
        raise ExecutionError(f"launch failed: {e}") from None
    return statistics.median(times)


def table(result: TuneResult) -> list[tuple[str, str, str]]:
    """(config, time, note) rows of the search, the winner marked."""
    rows = []
    for t in result.trials:
        note = "best" if t.config == result.best else t.error
        if t.same_as is not None:
            note = (note + "; " if note else "") + f"same code as {describe(t.same_as)}"
        rows.append((describe(t.config), "-" if t.seconds is None else f"{t.seconds * 1e3:.3f} ms",
                     note))
    if result.cached:
        rows.append((describe(result.best), "-", "cached winner"))
    return rows


def print_table(result: TuneResult, file=None) -> None:
    """The search as a table (stderr by default)."""
    import sys

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"lowering configs on {result.device}"
              + (" (cached winner)" if result.cached else " (median kernel time)"))
    for col in ("config", "time", ""):
        t.add_column(col)
    for row in table(result):
        t.add_row(*row)
    Console(file=file or sys.stderr).print(t)
