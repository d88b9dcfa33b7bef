"""Hypothesis strategies for random, well-typed, UB-free tensor-language kernels.

    from fuzz.strategies import kernels
    @given(kernels())
    def test(case):            # case: FuzzCase(program, func, args, groups)
        out = tlinterp.interp.run(case.program, case.args, func=case.func, groups=case.groups)

`kernels(**params)` draws one function over the whole language (every instruction kind, every
scalar type, static and dynamic shapes and strides, subview/expand/fuse chains, group
arguments with offsets and mixed member sizes, nested if/for/foreach, alloca, barrier,
atomics with beta = 1) together with its arguments (the .npz convention of
`tlinterp.io.args`) and a work-group count. Programs are free of undefined behaviour by
construction (see `fuzz.gen.core`). The IR is printed, reparsed and checked, so every case
also exercises the printer, the parser and the checker; the program in the case is the
reparsed one, with source spans. Keyword parameters are `fuzz.gen.params.GenParams` fields
(size limits, type lists, weights), e.g. `kernels(max_groups=2, collective_weights={...})`,
and `profile` (a `fuzz.profiles` name or Profile, default `all`): the target's dialect, whose
constructs alone are generated, printed in its spellings (`kernels(profile="tinytc-0.3.1")`).

`kernels(lang="v0.4")` draws tensor language v0.4 kernels instead (`fuzz.gen.v04`: the same
builder under v0.4's rules, plus f16/bf16/c32/c64, math functions, loops that yield, 3-D
grids, multi-dimensional foreach, cumsum, atomics and attributes; see docs/fuzzing.md), printed
as v0.4 and reparsed with lang="v0.4"; `case.lang` says which, `case.groups` may then be an
(x, y, z) grid. `lang` defaults to the profile's version (a v0.4 profile such as
`tinytc-0.4.0`), else v0.3, whose draws are unchanged. `spmd_weight` (default 30) percent of
the v0.4 cases come from `fuzz.gen.spmd.spmd_cases(**spmd_params)` where that module exists.

`lowering_configs()` draws `tlgpu.LoweringConfig`s (tiling and tile plans, staging, unrolling,
fused multiply-add, index width, barriers, work-group size) so the OpenCL lowering's edge
cases are exercised alongside.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from fuzz.gen.function import FunctionGenerator
from fuzz.gen.params import GenParams
from fuzz.gen.v04 import V04Generator, v04_params
from fuzz.profiles import DEFAULT, Profile
from fuzz.profiles import load as load_profile
from fuzz.profiles.check import violations
from tlinterp.io.args import Groups
from tlinterp.lang import ir

__all__ = ["FuzzCase", "GenParams", "kernels", "kernel_functions", "lowering_configs",
           "to_program", "coverage_of", "sample_function", "profile_of", "case_of", "LANGS",
           "generated_kinds", "spmd_knobs"]


LANGS = ("v0.3", "v0.4")  # the tensor-language versions the generator writes


@dataclass
class FuzzCase:
    program: ir.Program  # one function, parsed back from its printed text
    func: str  # its name, without '@'
    args: dict[str, np.ndarray]  # .npz convention
    groups: Groups  # number of work-groups, or a v0.4 grid (x, y, z)
    lang: str = "v0.3"  # the version of the program's text (`source`)

    @property
    def source(self) -> str:
        return self.program.source

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        return (f"FuzzCase(groups={self.groups}, func={self.func!r}, lang={self.lang!r}):\n"
                f"{self.source}")


def profile_of(profile: Profile | str | None) -> Profile:
    """A profile given by name (fuzz/profiles) or as itself; None is `all`."""
    return profile if isinstance(profile, Profile) else load_profile(profile or DEFAULT)


def _lang(lang: str) -> str:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    return lang


def lang_of(lang: Optional[str], profile: Profile | str | None = None) -> str:
    """The version to generate: `lang`, else the profile's, else v0.3."""
    return _lang(lang or profile_of(profile).lang or "v0.3")


def _params(params: dict[str, Any], lang: str = "v0.3") -> GenParams:
    base = GenParams() if _lang(lang) == "v0.3" else v04_params()
    profile = params.get("profile")
    params = {k: v for k, v in params.items() if k != "profile"}
    weights = ("statement_weights", "collective_weights", "scalar_weights")
    for k in weights:
        if k in params:  # partial weight dicts update the defaults
            params = {**params, k: {**getattr(base, k), **params[k]}}
    return profile_of(profile).restrict(dataclasses.replace(base, **params))


def _generator(lang: str):
    return FunctionGenerator if lang == "v0.3" else V04Generator


# times a kernel outside the profile is drawn again before the example is dropped: dropping
# it at once (assume) threw away the batch's other kernels too, generated, printed and
# checked for nothing (a quarter of the kernels of tinytc-0.4.0 campaigns, whose SPMD
# kernels' work-group sizes are a multiple of 16 where it takes only multiples of 32). The
# kernels are drawn independently, so a kernel drawn again has the distribution a dropped
# batch gave: the generator's, conditioned on the profile
PROFILE_TRIES = 8


@st.composite
def kernel_functions(draw, name: str = "k", lang: Optional[str] = None,
                     **params: Any) -> tuple[ir.Function, dict, Any]:
    """The raw IR function (not printed), its arguments and its group count (v0.4: a count
    or an (x, y, z) grid). `lang` None: the profile's version, else v0.3."""
    lang = lang_of(lang, params.get("profile"))
    p = _params(params, lang)
    # the generator avoids what the profile leaves out; should a construct slip through
    # all the same, the kernel is drawn again rather than handed to the target
    for _ in range(PROFILE_TRIES):
        built = _generator(lang)(draw, p, name).build()
        if p.profile is None or not violations(built[0], p.profile):
            return built
    reject()


def sample_function(seed: int, name: str = "k", lang: Optional[str] = None, **params: Any):
    """(function, arguments, groups, generator statistics) drawn with plain random sampling:
    the same generator as `kernel_functions`, much faster, but nothing shrinks. For
    distribution statistics and quick surveys."""
    import random

    lang = lang_of(lang, params.get("profile"))
    gen = _generator(lang)(random.Random(seed), _params(params, lang), name)
    func, args, groups = gen.build()
    return func, args, groups, gen.stats


def to_program(functions: list[ir.Function], filename: str = "<fuzz>",
               spellings: Optional[Mapping[str, str]] = None,
               lang: str = "v0.3") -> ir.Program:
    """Print the IR as tensor language `lang` (v0.3: in a target's `spellings`, see
    fuzz/profiles; v0.4: through `tlinterp.front.migrate.to_v04`, which has one spelling) and
    parse + check it back (the printer/parser/checker round trip)."""
    import tlinterp

    program = ir.Program(tuple(functions), filename)
    if _lang(lang) == "v0.4":
        from tlinterp.lang.v04.printer import format_program_v04

        text = format_program_v04(program)
    else:
        from tlinterp.lang.v03.printer import format_program

        text = format_program(program, spellings)
    parsed = tlinterp.parse(text, filename, lang=lang)
    tlinterp.check(parsed)
    return parsed


@st.composite
def kernels(draw, name: str = "k", lang: Optional[str] = None, **params: Any) -> FuzzCase:
    """One random UB-free kernel with arguments, as tensor language `lang` (None: the
    profile's version, else v0.3); see the module docstring."""
    lang = lang_of(lang, params.get("profile"))
    weight = params.get("spmd_weight", GenParams().spmd_weight)
    if lang == "v0.4" and weight > 0 and _spmd_cases() is not None \
            and draw(st.integers(0, 99)) < weight:
        return draw(_spmd_kernels(name, params))
    func, args, groups = draw(kernel_functions(name=name, lang=lang, **params))
    return case_of(func, args, groups, params.get("profile"), lang)


@st.composite
def _spmd_kernels(draw, name: str, params: dict[str, Any]) -> FuzzCase:
    """A case of `fuzz.gen.spmd.spmd_cases(**spmd_params)` within the profile."""
    profile = profile_of(params.get("profile"))
    for _ in range(PROFILE_TRIES):
        func, args, groups = draw(_spmd_cases()(name=name, **spmd_knobs(profile, params)))
        if not profile.restricts or not violations(func, profile):
            return case_of(func, args, groups, profile, "v0.4")
    reject()


def spmd_knobs(profile: Profile | str | None, params: Optional[dict[str, Any]] = None
               ) -> dict[str, Any]:
    """The knobs of `fuzz.gen.spmd` (`spmd_cases`, `sample_spmd`) that keep its kernels within
    the profile: its sub-group sizes and work-group size multiple, its types (a target's:
    tinytc-0.4.0-tgl has no f64 or bf16) and, without narrow atomics, the atomic types it
    compiles; `params["spmd_params"]` comes first."""
    profile = profile_of(profile)
    knobs = dict((params or {}).get("spmd_params") or {})
    if profile.subgroup_sizes is not None:
        knobs.setdefault("subgroup_sizes", profile.subgroup_sizes)
    if profile.work_group_size_multiple > 1:
        knobs.setdefault("wx_multiple", profile.work_group_size_multiple)
    gone = profile.exclude_types
    narrow = "atomic-narrow-types" in profile.exclude_features
    if gone or narrow:
        from fuzz.gen.spmd_model import NUMBER_TYPES
        from fuzz.profiles import NARROW_ATOMIC_UPDATE_TYPES

        kept = tuple(t for t in NUMBER_TYPES if t not in gone)
        if gone:
            knobs.setdefault("types", kept)
        knobs.setdefault("atomic_types", tuple(
            t for t in kept if not (narrow and t in NARROW_ATOMIC_UPDATE_TYPES)))
    if "bf16-constants" in profile.exclude_features:
        knobs.setdefault("bf16_constants", False)
    if "index-i64-casts" in profile.exclude_features:
        knobs.setdefault("index_i64_casts", False)
    if "coopmatrix-padded-columns" in profile.exclude_features:
        knobs.setdefault("padded_columns", False)
    if "bf16-conversions" in profile.exclude_features:
        knobs.setdefault("bf16_conversions", False)
    if "coopmatrix-transposed-strided-stores" in profile.exclude_features:
        knobs.setdefault("transposed_strided_stores", False)
    return knobs


def _spmd_cases():
    """`fuzz.gen.spmd.spmd_cases` (whole SPMD v0.4 kernels: parallel regions, sub-groups,
    cooperative matrices), or None where that generator is not part of this checkout."""
    try:
        from fuzz.gen.spmd import spmd_cases  # type: ignore[import-not-found]
    except ImportError:
        return None
    return spmd_cases


def case_of(func: ir.Function, args: dict[str, np.ndarray], groups: Any,
            profile: Profile | str | None = None, lang: Optional[str] = None) -> FuzzCase:
    """A generated function as a case, its text in the profile's spellings (v0.3) or as v0.4
    (`lang` None: the profile's version, else v0.3): what the implementation under test
    reads, and what a finding saves."""
    lang = lang_of(lang, profile)
    program = to_program([func], spellings=profile_of(profile).spellings, lang=lang)
    return FuzzCase(program, func.name, args, groups, lang)


# the v0.4 instructions the builder here makes (fuzz/gen/v04.py); SPMD kernels
# (fuzz.gen.spmd, where present) add theirs when drawn
V04_GENERATED = (ir.Constant, ir.Builtin, ir.AtomicLoad, ir.AtomicStore, ir.AtomicUpdate,
                 ir.Cumsum, ir.ForeachNd)


# ... and those of the SPMD kernels (fuzz.gen.spmd, kernels(spmd_weight > 0))
V04_SPMD_GENERATED = (ir.Parallel, ir.ForeachTile, ir.SubgroupBroadcast, ir.SubgroupOp,
                      ir.CoopApply, ir.CoopAtomicUpdate, ir.CoopConstruct, ir.CoopExtract,
                      ir.CoopInsert, ir.CoopLoad, ir.CoopMulAdd, ir.CoopPrefetch, ir.CoopReduce,
                      ir.CoopScale, ir.CoopStore)


def generated_kinds(lang: str = "v0.3", spmd: Optional[bool] = None) -> list[str]:
    """The instruction kinds (`coverage_of`'s names) the generator makes for `lang`: the
    denominator of tlfuzz's instruction coverage. v0.4 has no lifetime_stop; `spmd` (None:
    whether the default spmd_weight draws SPMD kernels and fuzz.gen.spmd exists) adds the
    SPMD kinds."""
    v03 = {t.__name__ for t in ir.Instruction.__args__ if t not in ir.V04_INSTRUCTIONS} \
        | {t.__name__ + ".atomic" for t in ir.BLAS}
    if _lang(lang) == "v0.3":
        return sorted(v03)
    if spmd is None:
        spmd = GenParams().spmd_weight > 0 and _spmd_cases() is not None
    extra = V04_GENERATED + (V04_SPMD_GENERATED if spmd else ())
    return sorted(v03 - {"LifetimeStop"} | {t.__name__ for t in extra})


def coverage_of(program: ir.Program) -> set[str]:
    """Instruction kinds (IR class names, with `.atomic` marked) a program contains."""
    kinds = set()
    for f in program.functions:
        for inst in ir.walk(f.body):
            k = type(inst).__name__
            kinds.add(k + ".atomic" if getattr(inst, "atomic", False) else k)
    return kinds


# the values lowering_configs draws for integer knobs and forced work-group sizes: a superset
# of what the autotuner (tlgpu.tuning.tuner.SPACE) tries, so the fuzzer checks every config it
# can pick
LOWERING_INTS = (1, 2, 3, 4, 6, 8, 9, 16, 32, 64)
LOWERING_GROUP_DIMS = ((1, 2, 4, 8, 16, 32), (1, 2, 4, 8, 16))


@st.composite
def lowering_configs(draw):
    """A random `tlgpu.LoweringConfig`: the default, or some of its knobs changed (booleans
    flipped, integer knobs small or large, sometimes a forced work-group size). Results must
    not depend on it."""
    from tlgpu import LoweringConfig
    from tlgpu.lowering.config import DEVICE_DEFAULT, DEVICE_DEFAULT_INTS, VALUE_SETS

    changes: dict[str, Any] = {}
    # half of the knobs changed (shrinking towards the default one by one), or a quarter of
    # the time the default itself: the config users run, with every default path together
    # (fused gemm pairs need four knobs at their defaults: reached about 3x more often).
    # bench/mutants.py on pocl, 60 s: seeds 1 + 2 killed 71/78 with this draw, 69/78 with half
    # of the knobs always; a third mode, one knob in 8 changed, killed 35/39 at seed 0 (37/39
    # with half always), so it is not here
    spread = draw(st.sampled_from((2, 0, 2, 2)))
    for f in dataclasses.fields(LoweringConfig):
        default = getattr(LoweringConfig(), f.name)
        if spread == 0 or draw(st.integers(0, spread - 1)) != 0:
            continue  # keep the default
        if f.name == "work_group_size":
            changes[f.name] = (draw(st.sampled_from(LOWERING_GROUP_DIMS[0])),
                               draw(st.sampled_from(LOWERING_GROUP_DIMS[1])))
        elif f.name in DEVICE_DEFAULT:  # None (the device decides) is the default: force one
            changes[f.name] = draw(st.booleans())
        elif f.name in VALUE_SETS:  # None (the device or the kernel decides): force a value
            changes[f.name] = draw(st.sampled_from(VALUE_SETS[f.name]))
        elif f.name in DEVICE_DEFAULT_INTS:
            changes[f.name] = draw(st.sampled_from(LOWERING_INTS))
        elif isinstance(default, bool):
            changes[f.name] = not default
        elif isinstance(default, int) and "bytes" in f.name:
            changes[f.name] = draw(st.sampled_from([default // 4, default, default * 2]))
        elif isinstance(default, int):
            changes[f.name] = draw(st.sampled_from(LOWERING_INTS))
    return dataclasses.replace(LoweringConfig(), **changes)
