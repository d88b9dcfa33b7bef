"""Reading the conformance corpus from disk (layout: docs/conformance.md).

    valid/<category>/<name>.tl (or .ir)  .args.npz  .expected.npz  .json {func, groups, tags}
    invalid/<name>.tl  .json {rule, message, range, exit}
    undefined/<name>.tl  .args.npz  .json {kind, func, groups, exit, tags}
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from tlinterp.front.detect import VERSIONS
from tlinterp.io.args import Groups, groups_text, load_npz
from tlinterp.io.boundedread import MAX_SOURCE_BYTES, RefusedFile, read_bounded

KINDS = ("valid", "invalid", "undefined")


class CorpusError(Exception):
    """The corpus directory is missing or malformed (a usage error, exit 2)."""


@dataclass
class Case:
    kind: str  # valid | invalid | undefined
    id: str  # e.g. valid/blas/gemm_f32_canonical_v0 (path without suffix)
    kernel: Path
    meta: dict
    args_path: Optional[Path] = None
    expected_path: Optional[Path] = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def category(self) -> str:
        parts = self.id.split("/")
        return parts[1] if self.kind == "valid" and len(parts) > 2 else self.kind

    @property
    def name(self) -> str:
        return self.id.rsplit("/", 1)[-1]

    @property
    def func(self) -> Optional[str]:
        return self.meta.get("func")

    @property
    def groups(self) -> Optional[Groups]:
        """The work-group count, or a v0.4 grid (x, y, z) (a list of three in the .json)."""
        g = self.meta.get("groups")
        return tuple(g) if isinstance(g, list) else g

    @property
    def lang(self) -> str:
        """The tensor-language version of the kernel: the case's "lang", else v0.3 (the corpus
        was written in v0.3; a kernel such as `%a: f16` is a v0.3 error, not a v0.4 program)."""
        return self.meta.get("lang", "v0.3")

    @property
    def tags(self) -> dict[str, list[str]]:
        return self.meta.get("tags") or {}

    def source(self) -> str:
        if "source" not in self._cache:
            self._cache["source"] = _source(self.kernel)
        return self._cache["source"]

    def args(self) -> dict[str, np.ndarray]:
        if self.args_path is None:
            return {}
        return load_npz(str(self.args_path))

    def expected(self) -> dict[str, np.ndarray]:
        return load_npz(str(self.expected_path)) if self.expected_path else {}

    def reproduce(self) -> str:
        """The tlrun command that reproduces this case with the reference."""
        cmd = ["tlrun", shown(self.kernel)]
        if self.args_path is not None:
            cmd += ["--args", shown(self.args_path)]
        if self.func:
            cmd += ["--func", self.func]
        if self.groups is not None:
            cmd += ["--groups", groups_text(self.groups)]
        return shlex.join(cmd)


def shown(path: Path) -> str:
    """The path relative to the working directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def default_corpus() -> Path:
    """The installed `corpus` package's data (a wheel ships it as package data; in a source
    checkout that is the repository's corpus/), else ./corpus."""
    try:
        import corpus
    except ImportError:
        return Path("corpus")
    return Path(corpus.__file__).resolve().parent


def matches(case_id: str, pattern: Optional[str]) -> bool:
    """A glob when the pattern has * ? or [, else a substring test."""
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatch(case_id, pattern)
    return pattern in case_id


SOURCE_SUFFIXES = (".tl", ".ir")  # .ir: the name the Tiny Tensor Compiler's tools use


def _kernels(directory: Path) -> list[Path]:
    """Kernel sources below `directory`, sorted; one case may not have both suffixes."""
    found: dict[Path, Path] = {}
    for suffix in SOURCE_SUFFIXES:
        for kernel in directory.rglob("*" + suffix):
            stem = kernel.with_suffix("")
            if stem in found:
                raise CorpusError(f"{stem}: both {found[stem].name} and {kernel.name}; keep "
                                  "one source per case")
            found[stem] = kernel
    return [found[s] for s in sorted(found)]


# a case description: far beyond any real one (a few hundred bytes)
MAX_META_BYTES = 1 << 20


def _source(kernel: Path) -> str:
    """A case's kernel source, read when the corpus is loaded, so a file that is no regular
    file (a FIFO, a link to /dev/zero), too large or not UTF-8 is a CorpusError (exit 2)
    before anything runs, not an exception in the middle of a run."""
    try:
        return read_bounded(str(kernel), MAX_SOURCE_BYTES, "a corpus kernel source"
                            ).decode("utf-8")
    except RefusedFile as e:
        raise CorpusError(str(e)) from None
    except UnicodeDecodeError as e:
        raise CorpusError(f"{kernel}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise CorpusError(f"{kernel}: cannot read ({e.strerror or e})") from None


def _opt_str(v) -> bool:
    return v is None or isinstance(v, str)


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _opt_groups(v) -> bool:
    def count(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 1

    return v is None or count(v) or (isinstance(v, list) and len(v) == 3
                                     and all(count(x) for x in v))


def _tags(v) -> bool:
    return v is None or (isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(t, list) and all(isinstance(x, str) for x in t)
        for k, t in v.items()))


def _warning(v) -> bool:
    return v is None or (isinstance(v, dict) and isinstance(v.get("range"), str)
                         and isinstance(v.get("message"), str))


def _lang(v) -> bool:
    return v is None or v in VERSIONS


def _name(v) -> bool:
    return isinstance(v, str) and v != ""


# The fields of a case description, the kinds of case that read each one, what a value must
# be, and how that is said when it is not; fields not listed are free (e.g. comments).
FIELDS = {
    "func": (KINDS, _opt_str, "a function name or null"),
    "groups": (("valid", "undefined"), _opt_groups,
               "a work-group count >= 1, a grid [x, y, z] of counts >= 1, or null"),
    "tags": (("valid", "undefined"), _tags, "an object of lists of strings"),
    "warning": (("valid",), _warning, 'an object with "range" and "message" strings'),
    "range": (("invalid",), _opt_str, "a LINE.COL-COL string"),
    "message": (("invalid",), _opt_str, "a string"),
    "kind": (("undefined",), _name, "the name of an undefined-behaviour kind"),
    "lang": (KINDS, _lang, " or ".join(f'"{v}"' for v in VERSIONS) + " (absent: v0.3)"),
}


def check_meta(path: Path, kind: str, meta) -> dict:
    """The case description, or a CorpusError naming the first field of the wrong type."""
    if not isinstance(meta, dict):
        raise CorpusError(f"{path}: a case description must be a JSON object, got "
                          f"{type(meta).__name__}")
    for key, (kinds, ok, wanted) in FIELDS.items():
        if kind in kinds and not ok(meta.get(key)):
            raise CorpusError(f"{path}: \"{key}\" must be {wanted}, got {meta.get(key)!r}")
    return meta


def load_corpus(root: Path, pattern: Optional[str] = None) -> list[Case]:
    root = Path(root)
    if not all((root / k).is_dir() for k in KINDS):
        raise CorpusError(f"{root}: not a corpus directory (needs {', '.join(KINDS)}/; "
                          "regenerate with: python -m corpus.generate)")
    cases = []
    for kind in KINDS:
        kernels = _kernels(root / kind)
        stems = {k.with_suffix("") for k in kernels}
        for orphan in sorted(root.joinpath(kind).rglob("*.json")):
            if orphan.with_suffix("") not in stems and matches(
                    orphan.with_suffix("").relative_to(root).as_posix(), pattern):
                raise CorpusError(f"{orphan}: a case description without its kernel source "
                                  f"({' or '.join(SOURCE_SUFFIXES)})")
        for kernel in kernels:
            stem = kernel.with_suffix("")
            case_id = stem.relative_to(root).as_posix()
            if not matches(case_id, pattern):
                continue
            meta_path = stem.with_suffix(".json")
            try:
                meta = json.loads(read_bounded(str(meta_path), MAX_META_BYTES,
                                               "a case description"))
            except RefusedFile as e:
                raise CorpusError(str(e)) from None
            except (OSError, ValueError) as e:
                raise CorpusError(f"{meta_path}: unreadable case description ({e})") from None
            meta = check_meta(meta_path, kind, meta)
            args = stem.parent / f"{stem.name}.args.npz"
            expected = stem.parent / f"{stem.name}.expected.npz"
            case = Case(kind, case_id, kernel, meta,
                        args if args.exists() else None,
                        expected if expected.exists() else None)
            case._cache["source"] = _source(kernel)
            if kind == "valid" and (case.args_path is None or case.expected_path is None):
                raise CorpusError(f"{case_id}: a valid case needs .args.npz and .expected.npz")
            if kind == "undefined" and case.args_path is None:
                raise CorpusError(f"{case_id}: an undefined-behaviour case needs .args.npz")
            cases.append(case)
    return cases


def apply_profile(cases: list[Case], profile) -> tuple[list[Case], list[tuple[Case, str]]]:
    """The cases to run on a target of `profile` (fuzz.profiles.Profile), their kernels in
    its spellings, and the skipped ones with the reason: those using a construct the profile
    leaves out. A kernel that does not parse or check (an invalid case) runs as it is."""
    from fuzz.profiles.check import violations
    from fuzz.profiles.respell import respell
    from tlinterp import TLError, check, parse

    if not profile.restricts and not profile.spellings:
        return list(cases), []
    run: list[Case] = []
    skipped: list[tuple[Case, str]] = []
    for case in cases:
        if profile.lang is not None and case.lang != profile.lang:
            skipped.append((case, f"outside profile {profile.name}: a {case.lang} case (the "
                                  f"target reads {profile.lang})"))
            continue
        try:
            # checked too: an invalid case's operands may not even have the kinds of types
            # the profile's rules look at (a scalar where a memref belongs)
            program = check(parse(case.source(), filename=case.kernel.name, lang=case.lang))
        except TLError:
            run.append(case)
            continue
        found = violations(program, profile)
        if found:
            v = found[0]
            more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
            skipped.append((case, f"outside profile {profile.name}: {v}{more}"))
            continue
        # the target reads its own spellings; the expected results are the same program's
        case._cache["source"] = respell(case.source(), program, profile.spellings)
        run.append(case)
    return run, skipped
