"""Regenerate and re-verify the conformance corpus.

    python -m corpus.generate            # rewrite corpus/{valid,invalid,undefined}, then verify
    python -m corpus.generate --check    # verify the files on disk without writing

Every expected result comes from the NumPy reference written for its case in corpus/cases/;
verification then demands that (1) the files on disk are exactly what the cases produce,
(2) the checker accepts every valid and undefined-behaviour kernel, (3) the reference
interpreter agrees with every expected result (exact, or within the fuzz.oracle bound for float
collectives), (4) the checker rejects every invalid program with a diagnostic whose range is
the text the case blames, and (5) the interpreter reports the recorded kind for every
undefined-behaviour kernel. Exit status 0 iff everything verifies.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from corpus.cases import (
    InvalidCase,
    UndefinedCase,
    ValidCase,
    all_invalid,
    all_undefined,
    all_valid,
)

ROOT = Path(__file__).resolve().parent
KINDS = ("valid", "invalid", "undefined")


# --- writing -------------------------------------------------------------------------------

def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An .npz whose bytes depend only on the arrays (fixed zip timestamps), so that
    regenerating an unchanged corpus changes no file."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[key]), allow_pickle=False)
            z.writestr(info, member.getvalue())
    return buf.getvalue()


def json_text(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def files_of(case) -> dict[str, bytes]:
    """Relative path -> content for one case."""
    base = case.id
    out = {f"{base}.tl": case.source.encode()}
    if isinstance(case, ValidCase):
        out[f"{base}.args.npz"] = npz_bytes(case.args)
        out[f"{base}.expected.npz"] = npz_bytes(case.expected)
        meta = {"func": case.func, "groups": case.groups, "tags": case.tags}
        if case.warns:
            meta["warning"] = {"range": case.warning_range(), "message": case.warning}
    elif isinstance(case, InvalidCase):
        meta = {"rule": case.rule, "message": case.message, "range": case.blame_range(),
                "exit": 2}
        if case.restriction:
            meta["restriction"] = case.restriction
    else:
        out[f"{base}.args.npz"] = npz_bytes(case.args)
        meta = {"kind": case.kind, "func": case.func, "groups": case.groups, "exit": 1,
                "tags": case.tags}
    if case.lang != "v0.3":
        meta["lang"] = case.lang
    out[f"{base}.json"] = json_text(meta).encode()
    return out


def write_files(files: dict[str, bytes]) -> None:
    """Write what changed and delete stale files (never the whole tree: a concurrent
    tlconform run keeps seeing every unchanged case)."""
    for rel, content in files.items():
        path = ROOT / rel
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    for kind in KINDS:
        for path in sorted((ROOT / kind).rglob("*")):
            if path.is_file() and path.relative_to(ROOT).as_posix() not in files:
                path.unlink()


# --- verification --------------------------------------------------------------------------

def _parse_check(case, warnings=None):
    import tlinterp

    # the corpus is v0.3 unless a case says otherwise (`%a: f16` is a v0.3 syntax error)
    program = tlinterp.parse(case.source, filename=f"{case.id}.tl",
                             lang=case.lang)
    return tlinterp.check(program, warnings)


def adopt_warning(case: ValidCase) -> list[str]:
    """Fill in `case.warning` from the checker; a valid case warns exactly where it says."""
    from tlinterp import TLError

    found: list = []
    try:
        _parse_check(case, found)
    except TLError:
        return []  # verify_valid reports it
    got = [(str(d.span), d.message) for d in found]
    want = case.warning_range() if case.warns else None
    if want is None:
        return [f"{case.id}: unexpected warning at {r}: {m}" for r, m in got]
    for r, m in got:
        if r == want:
            case.warning = m
    if not case.warning or len(got) != 1:
        said = "; ".join(f"{r}: {m}" for r, m in got) or "nothing"
        return [f"{case.id}: expected one warning at {want} ({case.warns!r}); got {said}"]
    return []


def verify_valid(case: ValidCase) -> list[str]:
    from fuzz.oracle import compare_outputs
    from tlinterp import TLError
    from tlinterp.interp import run

    try:
        program = _parse_check(case)
        actual = run(program, case.args, func=case.func, groups=case.groups)
    except TLError as e:
        return [f"{case.id}: the reference failed: {e.format()}"]
    except Exception as e:  # noqa: BLE001 - a crashing reference is a problem to report
        return [f"{case.id}: the reference crashed: {type(e).__name__}: {e}"]
    mismatches = compare_outputs(program, case.func, case.args, case.expected, actual,
                         groups=case.groups)
    return [f"{case.id}: interpreter disagrees with the NumPy reference: {m}"
            for m in mismatches[:5]]


def diagnostics_of(case: InvalidCase):
    """The checker's diagnostics for an invalid program ([] if it was accepted)."""
    from tlinterp import SourceError

    try:
        _parse_check(case)
    except SourceError as e:
        return e.diagnostics
    return []


def adopt_message(case: InvalidCase) -> list[str]:
    """Fill in `case.message` from the diagnostic that covers the blamed text."""
    diags = diagnostics_of(case)
    if not diags:
        return [f"{case.id}: accepted, but it breaks the rule '{case.rule}'"]
    want = case.blame_range()
    for d in diags:
        if str(d.span) == want:
            case.message = d.message
            return []
    got = "; ".join(f"{d.span}: {d.message}" for d in diags)
    return [f"{case.id}: no diagnostic at {want} ({case.blame!r}); the checker said: {got}"]


def verify_undefined(case: UndefinedCase) -> list[str]:
    from tlinterp import TLError, UndefinedBehaviour
    from tlinterp.interp import run

    try:
        program = _parse_check(case)
        run(program, case.args, func=case.func, groups=case.groups)
    except UndefinedBehaviour as e:
        kinds = {r.kind for r in e.reports}
        if case.kind in kinds:
            return []
        return [f"{case.id}: expected a '{case.kind}' report, got {sorted(kinds)}"]
    except TLError as e:
        return [f"{case.id}: expected undefined behaviour '{case.kind}', got: {e.format()}"]
    except Exception as e:  # noqa: BLE001
        return [f"{case.id}: the reference crashed: {type(e).__name__}: {e}"]
    return [f"{case.id}: expected undefined behaviour '{case.kind}', the run succeeded"]


def compare_files(expected: dict[str, bytes]) -> list[str]:
    """Differences between the generated files and those on disk (both directions)."""
    problems = []
    for rel, content in expected.items():
        path = ROOT / rel
        if not path.exists():
            problems.append(f"{rel}: missing (run python -m corpus.generate)")
        elif path.read_bytes() != content:
            problems.append(f"{rel}: differs from what its case generates")
    for kind in KINDS:
        for path in sorted((ROOT / kind).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and rel not in expected:
                problems.append(f"{rel}: not produced by any case (stale)")
    return problems


# --- driver --------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corpus.generate", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="verify the corpus on disk without writing anything")
    ap.add_argument("--filter", default="*", help="only verify cases whose id matches (glob)")
    opts = ap.parse_args(argv)

    valid, invalid, undefined = all_valid(), all_invalid(), all_undefined()
    problems: list[str] = []
    for c in invalid:
        problems += adopt_message(c)
    for c in valid:
        problems += adopt_warning(c)
    files: dict[str, bytes] = {}
    for c in (*valid, *invalid, *undefined):
        files.update(files_of(c))
    if opts.check:
        problems += compare_files(files)
    else:
        write_files(files)
    selected = lambda c: fnmatch.fnmatch(c.id, opts.filter)  # noqa: E731
    for c in filter(selected, valid):
        problems += verify_valid(c)
    for c in filter(selected, undefined):
        problems += verify_undefined(c)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(valid)} valid, {len(invalid)} invalid, {len(undefined)} undefined cases; "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
