"""Front-end fuzzing: random token mutations of generated programs (in the case's language,
v0.3 or v0.4) must only ever produce diagnostics. Parsing, checking and (when both pass)
running the mutant may raise any `TLError`; any other exception is a finding. The same
mutants feed the differential front-end campaign (fuzz/campaign/frontdiff.py)."""

from __future__ import annotations

import re
from typing import Optional

from hypothesis import strategies as st

from tlinterp.lang.diagnostics import TLError

TOKEN = re.compile(r"%[A-Za-z0-9_]+|@[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_.]*|-?\d+\.\d*(?:e-?\d+)?"
                   r"|-?\d+|->|\S")
VOCABULARY = ["%", "@", "?", ":", ",", "x", "[", "]", "{", "}", "(", ")", "->", "=", "0", "-1",
              "1.0", "nan", "9223372036854775808", "1e999", "memref<f32x?>", "group<", "i1",
              "f64", "index", "yield", "if", "else", "for", "foreach", "gemm.n.t", "store",
              "load", "subview", "expand", "fuse", "alloca", "barrier", "strided<", ">", ";",
              "\n", "%0", "func", "arith.div", "cast", "u8", "offset:"]

# v0.4's own words on top (types, instructions, attributes, the SPMD layer)
VOCABULARY_V04 = VOCABULARY + [
    "constant", "bool", "f16", "bf16", "c32", "c64", "i32", "true", "false", "0x1p+0", "add",
    "mul", "less_than", "init", "attributes", "alignment", "64", "local", "global",
    "parallel", "subgroup_local_id", "subgroup_size", "work_group_size", "group_id.x",
    "num_groups.z", "cooperative_matrix_load", "coopmatrix<", "matrix_a", "matrix_acc",
    "foreach_tile", "atomic_add", "cumsum", "associated", "lifetime_stop", "memref<f32x?>",
    "group<memref<f32x4>,2>", "barrier.local", "math.exp", "exp", "!calc", "$n"]

__all__ = ["mutants", "mutate", "frontend_problem", "VOCABULARY", "VOCABULARY_V04"]


def mutate(text: str, draw, min_edits: int = 1, vocabulary: Optional[list[str]] = None
           ) -> str:
    """`min_edits`-4 token edits: delete, duplicate, swap, replace by vocabulary or by another
    token (0 edits: the program itself). The text between tokens stays as it was (a token
    put in gets one space before it): a mutant differs from its program by the edits only,
    not by a layout one front end reads differently (v0.4's `memref<` is one word)."""
    spans = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    if not spans:
        return text
    tokens = [text[a:b] for a, b in spans]
    # gaps[i]: the text before tokens[i]; the tail after the last token
    gaps = [text[(spans[i - 1][1] if i else 0):a] for i, (a, _) in enumerate(spans)]
    tail = text[spans[-1][1]:]
    words = vocabulary or VOCABULARY
    edits = draw(st.integers(min_edits, 4))
    if edits == 0:
        return text
    for _ in range(edits):
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "vocab", "copy"]))
        if op == "delete" and len(tokens) > 1:
            del tokens[i]
            gap = gaps.pop(i)
            if i == 0:
                gaps[0] = gap  # the text before the first token stays first
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
            gaps.insert(i + 1, " ")
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "vocab":
            tokens[i] = draw(st.sampled_from(words))
        else:
            tokens[i] = tokens[draw(st.integers(0, len(tokens) - 1))]
    out: list[str] = []
    for gap, token in zip(gaps, tokens):
        if not gap and out and _glues(out[-1], token):
            gap = " "  # two tokens that would read as one word (`%a` `func` -> `%afunc`)
        out += [gap, token]
    return "".join(out) + tail


def _glues(left: str, right: str) -> bool:
    word = str.isalnum
    return bool(left) and bool(right) and (word(left[-1]) or left[-1] in "_.%@") and \
        (word(right[0]) or right[0] in "_.%@-")


@st.composite
def mutants(draw, min_edits: int = 1, **params):
    """(mutated source, the original case) from a generated kernel; with `min_edits` 0 the
    unchanged program is among them (and what shrinking reaches first)."""
    from fuzz.strategies import kernels

    case = draw(kernels(**params))
    lang = lang_of(case)
    return mutate(case.source, draw, min_edits,
                  VOCABULARY_V04 if lang == "v0.4" else VOCABULARY), case


def lang_of(case) -> str:
    """The language a generated case is written in (v0.3 for a generator without v0.4)."""
    return getattr(case, "lang", None) or "v0.3"


def frontend_problem(text: str, args: dict, groups, max_steps: int = 20000,
                     lang: str = "v0.3", run_it: bool = True) -> Optional[str]:
    """None when parse/check(/run) ended in success or a TLError; else a description."""
    import tlinterp
    from tlinterp.interp import run

    try:
        program = tlinterp.parse(text, "<mutant>", lang=lang)  # mutants of text in `lang`
        tlinterp.check(program)
        if run_it and len(program.functions) == 1:
            run(program, args, groups=groups, max_steps=max_steps)
    except TLError:
        return None
    except RecursionError:
        return "RecursionError (deeply nested input must be a diagnostic)"
    except Exception as e:  # noqa: BLE001 - anything else is exactly what we look for
        return f"{type(e).__name__}: {e}"
    return None
