"""Target profiles: the dialect of the language that one implementation accepts.

A profile is data, one JSON file per profile in this directory (`NAME.json`):

    {"name": "tinytc-0.3.1",
     "description": "one line",
     "exclude_types": ["u8"],                  # scalar types, by spelling
     "exclude_instructions": ["barrier"],      # by mnemonic (`tlinterp.lang.v03.printer.mnemonic`)
     "exclude_features": ["store-constant"],   # see FEATURES
     "work_group_size_multiple": 32,           # work_group_size(W0,W1): W0 a multiple of it
     "spellings": {"hadamard_product": "hadamard"},  # mnemonic -> the target's spelling
     "why": {"u8": "one line: what the target says and why it is left out"}}

A profile may say the version it reads, and a tensor language v0.4 target's profile may also
have its subgroup sizes:

     "lang": "v0.4",                           # the version it reads (default: any)
     "subgroup_sizes": [16, 32],               # the subgroup_size attribute values it takes

A profile may build on others, `"extends": "tinytc-0.4.0"` (or a list of names): it holds the
exclusions of every profile named there (first to last) and its own, their `why` lines, and
their other keys where it does not say its own (a later base's over an earlier one's); a
target's profile (`tinytc-0.4.0-tgl`) is its compiler's profile plus what that target lacks.

`lang` makes the profile's programs that version's (`tlfuzz --profile` then generates it
unless --lang says otherwise, which is a usage error for a profile of the other version; the
tinytc-0.3.1 profiles say v0.3, the tinytc-0.4.0 ones v0.4, `all` nothing); spellings
are v0.3 respellings and only apply to v0.3 text. `subgroup_sizes` needs its line in `why`
under "subgroup_size".

Every exclusion needs its line in `why` (so the file documents what was found and why), and
`tlconform --profile` gives that line as the reason a case is skipped. The fuzzer never
generates a construct outside the profile (`fuzz.strategies.kernels(profile=...)`), and
programs are printed in its spellings for the implementation under test.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from fuzz.gen.params import COLLECTIVE_KINDS
from tlinterp.lang import ir, ops
from tlinterp.lang.types import ScalarType

__all__ = ["FEATURES", "INSTRUCTIONS", "Profile", "ProfileError", "load", "names",
           "describe", "DEFAULT"]

DEFAULT = "all"
_DIR = os.path.dirname(os.path.abspath(__file__))

# constructs that are neither a type nor an instruction, with what each one means
FEATURES = {
    "store-constant": "a store whose value is a constant (`store 1.0, %x[0]`)",
    "hadamard-matrix": "hadamard_product on matrices (the spec says vectors)",
    "mixed-static-dynamic-sizes": "a collective relating a `?` size to a static one "
                                  "(`gemv` of memref<f32x4x?> by memref<f32x3>)",
    "alloca-in-if": "an alloca inside the then or else region of an `if` (at any depth)",
    "integer-products": "gemm or gemv with an integer element type in any operand",
    "order0-axpby": "axpby on order-0 memrefs (a scalar update)",
    "transposed-sum": "sum.t of a matrix (the row sums)",
    "expand-inferred-dynamic": "expand with a `?` entry of a mode whose size is `?` (the "
                               "entry inferred at run time)",
    "expand-dynamic-stride": "expand of a mode whose stride is `?`",
    "nan-constants": "a NaN `constant`, a float `rem` whose divisor may be zero, or a float "
                     "`div` of zero by zero (constant folding turns both into a NaN "
                     "constant)",
    "gemm-atomic-beta-one": "gemm.atomic with beta 1 (v0.4: beta is a `constant` 0 or 1)",
    "atomic-narrow-types": "v0.4 atomics (`.atomic` collectives, atomic_load/store/add/max/"
                           "min) on i8, i16 or bf16 elements, and atomic updates of f16",
    "group-offsets": "a group type whose offset is not 0 (a constant other than 0, or `?`)",
    "index-i64-casts": "a cast between index and i64, either way (`cast %x : i64` of an "
                       "index value)",
    "bf16-constants": "a bf16 `constant` (v0.3 form: a literal operand of type bf16), also a "
                      "cooperative matrix constant of bf16 components",
    "bf16-conversions": "a cast from bf16 to f32, or to bf16 from f16 or f64 (scalars or a "
                        "cooperative matrix's components), or a cooperative_matrix_mul_add "
                        "of a bf16 operand into a result that is not bf16",
    "coopmatrix-transposed-strided-stores": "a transposed cooperative_matrix_store or atomic "
                                            "update (`.t`) into a memref whose first stride "
                                            "is not 1",
    "coopmatrix-padded-columns": "a cooperative_matrix_store or atomic update of a matrix "
                                 "whose sub-group layout pads its columns (8 x 3 at sub-group "
                                 "size 16), or an extract of a padding component",
    "inexact-constant-casts": "a `cast` of a floating-point (or complex) `constant` whose "
                              "literal its type does not hold exactly (`constant 0.001 : f32`)",
}
# the casts "bf16-conversions" names (from, to)
BF16_CONVERSIONS = frozenset({(ScalarType.bf16, ScalarType.f32), (ScalarType.f16, ScalarType.bf16),
                              (ScalarType.f64, ScalarType.bf16)})
# element types of the atomics "atomic-narrow-types" names: any atomic, an update
NARROW_ATOMIC_TYPES = frozenset({ScalarType.i8, ScalarType.i16, ScalarType.bf16})
NARROW_ATOMIC_UPDATE_TYPES = NARROW_ATOMIC_TYPES | {ScalarType.f16}
# the instructions the generator can leave out (others are the language's backbone): also
# every scalar operation beyond the v0.3 reference (tlinterp/lang/ops.py), such as `arith.min`
INSTRUCTIONS = ("barrier", "lifetime_stop", *(cls.MNEMONIC for cls in ir.BLAS),
                *ops.extensions())
# types no program of the language can do without
_NEEDED_TYPES = {"index": "group_id, size and loop variables have it",
                 "i1": "compares give it and if takes it"}
_KEYS = {"name", "description", "exclude_types", "exclude_instructions", "exclude_features",
         "work_group_size_multiple", "spellings", "why", "lang", "subgroup_sizes", "extends"}
# the keys whose lists (or maps) a profile adds to those of the profiles it extends
_MERGED = ("exclude_types", "exclude_instructions", "exclude_features", "spellings", "why")
_MNEMONIC_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_.")


class ProfileError(ValueError):
    """A profile that does not exist or does not validate; the message says which and why."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str = ""
    exclude_types: frozenset = frozenset()  # of ScalarType
    exclude_instructions: frozenset = frozenset()  # of mnemonics
    exclude_features: frozenset = frozenset()  # of FEATURES keys
    work_group_size_multiple: int = 1
    spellings: dict = field(default_factory=dict)  # canonical mnemonic -> target spelling
    why: dict = field(default_factory=dict)  # excluded construct -> one line
    lang: Optional[str] = None  # the tensor-language version it reads (None: any)
    subgroup_sizes: Optional[tuple[int, ...]] = None  # subgroup_size values (None: any)

    @property
    def restricts(self) -> bool:
        """Whether anything is left out (the `all` profile restricts nothing)."""
        return bool(self.exclude_types or self.exclude_instructions or self.exclude_features
                    or self.work_group_size_multiple > 1 or self.subgroup_sizes is not None)

    def reason(self, construct: str) -> str:
        return self.why.get(construct, "not in the profile")

    def restrict(self, params):
        """`params` (fuzz.gen.params.GenParams) narrowed to the profile: its types, no
        weight for an excluded instruction; the generator reads the features and the
        work-group size rule through `params.profile`."""
        if not self.restricts:
            return params
        gone = self.exclude_instructions
        types = tuple(t for t in params.scalar_types if t not in self.exclude_types)
        return dataclasses.replace(
            params, profile=self, scalar_types=types,
            memref_types=tuple(t for t in params.memref_types if t in types),
            lowp_types=tuple(t for t in params.lowp_types if t not in self.exclude_types),
            statement_weights={k: 0 if k in gone else v
                               for k, v in params.statement_weights.items()},
            collective_weights={
                k: 0 if getattr(COLLECTIVE_KINDS.get(k), "MNEMONIC", k) in gone else v
                for k, v in params.collective_weights.items()},
            lifetime_stop_percent=0 if "lifetime_stop" in gone
            else params.lifetime_stop_percent,
            work_group_size_multiple=max(self.work_group_size_multiple,
                                         params.work_group_size_multiple),
            subgroup_sizes=tuple(s for s in params.subgroup_sizes
                                 if self.subgroup_sizes is None or s in self.subgroup_sizes))


def describe() -> str:
    """One line per known profile: its name and description (`--profile list`)."""
    lines = []
    for n in names():
        try:
            lines.append(f"{n:16} {load(n).description}")
        except ProfileError as e:
            lines.append(f"{n:16} (invalid: {e})")
    return "\n".join(lines)


def names() -> list[str]:
    """The known profiles, sorted."""
    return sorted(f[:-5] for f in os.listdir(_DIR) if f.endswith(".json"))


def load(name: str) -> Profile:
    """The profile NAME (a file of this directory) or, when NAME names a .json file, that
    file; ProfileError when it is unknown or invalid."""
    if name.endswith(".json") and os.path.isfile(name):
        path = name
    elif name in names():
        path = os.path.join(_DIR, name + ".json")
    else:
        raise ProfileError(f"unknown profile '{name}' (known: {', '.join(names())}; or a "
                           f"profile file NAME.json)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProfileError(f"profile {path}: cannot read it: {e}") from None
    return from_dict(data, path)


def _extended(data: Any, where: str, chain: tuple[str, ...]) -> Any:
    """`data` with the profiles its "extends" names merged in (see the module doc); a cycle
    or an unknown base is a ProfileError naming the chain."""
    if not isinstance(data, dict) or "extends" not in data:
        return data
    bases = data["extends"]
    bases = [bases] if isinstance(bases, str) else bases
    if not isinstance(bases, list) or not bases or not all(isinstance(b, str) for b in bases):
        raise ProfileError(f"profile {where}: 'extends' must name a profile or list profiles")
    merged: dict = {}
    for base in bases:
        if base in chain:
            raise ProfileError(f"profile {where}: 'extends' makes a cycle: "
                               f"{' -> '.join((*chain, base))}")
        if base not in names():
            raise ProfileError(f"profile {where}: 'extends' names the unknown profile "
                               f"'{base}' (known: {', '.join(names())})")
        path = os.path.join(_DIR, base + ".json")
        try:
            with open(path, encoding="utf-8") as f:
                got = _extended(json.load(f), path, (*chain, base))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ProfileError(f"profile {path}: cannot read it: {e}") from None
        if not isinstance(got, dict):
            raise ProfileError(f"profile {path}: the file must hold one JSON object")
        merged = _merge(merged, got)
    own = {k: v for k, v in data.items() if k != "extends"}
    return _merge({k: v for k, v in merged.items() if k not in ("name", "description")}, own)


def _merge(base: dict, over: dict) -> dict:
    """`over`'s keys over `base`'s, the lists and maps of _MERGED joined (base first)."""
    out = {**base, **over}
    for k in _MERGED:
        b, o = base.get(k), over.get(k)
        if isinstance(b, list) and isinstance(o, list):
            out[k] = list(dict.fromkeys(b + o))
        elif isinstance(b, dict) and isinstance(o, dict):
            out[k] = {**b, **o}
    return out


def from_dict(data: Any, where: str = "<profile>") -> Profile:
    """Validate one profile's data; every problem named with the file it came from."""
    def bad(msg: str) -> ProfileError:
        return ProfileError(f"profile {where}: {msg}")

    data = _extended(data, where, ())

    if not isinstance(data, dict):
        raise bad("the file must hold one JSON object")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise bad("'name' must be a non-empty string")

    def strings(key: str) -> list[str]:
        v = data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise bad(f"'{key}' must be a list of strings")
        return v

    spelled = {t.value: t for t in ScalarType}
    types = strings("exclude_types")
    for t in types:
        if t not in spelled:
            raise bad(f"unknown type '{t}' in exclude_types (known: {', '.join(spelled)})")
        if t in _NEEDED_TYPES:
            raise bad(f"type '{t}' cannot be excluded: {_NEEDED_TYPES[t]}")
    insts = strings("exclude_instructions")
    for i in insts:
        if i not in INSTRUCTIONS:
            raise bad(f"instruction '{i}' cannot be excluded (the generator can leave out: "
                      f"{', '.join(INSTRUCTIONS)})")
    feats = strings("exclude_features")
    for f in feats:
        if f not in FEATURES:
            raise bad(f"unknown feature '{f}' (known: {', '.join(FEATURES)})")
    multiple = data.get("work_group_size_multiple", 1)
    if not isinstance(multiple, int) or isinstance(multiple, bool) or multiple < 1:
        raise bad("'work_group_size_multiple' must be a positive integer")
    spellings = data.get("spellings", {})
    if not isinstance(spellings, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v and set(v) <= _MNEMONIC_CHARS
            for k, v in spellings.items()):
        raise bad("'spellings' must map mnemonics to spellings made of [a-z0-9_.]")
    why = data.get("why", {})
    if not isinstance(why, dict) or not all(isinstance(v, str) for v in why.values()):
        raise bad("'why' must map each excluded construct to one line of text")
    constructs = types + insts + feats + (["work_group_size"] if multiple > 1 else [])
    missing = [c for c in constructs if not why.get(c, "").strip()]
    if missing:
        raise bad(f"say why in 'why' for: {', '.join(missing)}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise bad("'description' must be a string")
    lang = data.get("lang")
    if lang not in (None, "v0.3", "v0.4"):
        raise bad("'lang' must be \"v0.3\" or \"v0.4\"")
    sizes = data.get("subgroup_sizes")
    if sizes is not None:
        if not isinstance(sizes, list) or not sizes or not all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
            raise bad("'subgroup_sizes' must be a non-empty list of positive integers")
        if not why.get("subgroup_size", "").strip():
            raise bad("say why in 'why' for: subgroup_size")
        sizes = tuple(sizes)
    return Profile(name, description, frozenset(spelled[t] for t in types), frozenset(insts),
                   frozenset(feats), multiple, dict(spellings), dict(why), lang, sizes)
