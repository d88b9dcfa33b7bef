"""Front-end fuzzing: random token mutations of generated programs must only ever produce
diagnostics. Parsing, checking and (when both pass) running the mutant may raise any
`TLError`; any other exception is a finding."""

from __future__ import annotations

import re
from typing import Optional

from hypothesis import strategies as st

from tlinterp.diagnostics import TLError

TOKEN = re.compile(r"%[A-Za-z0-9_]+|@[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_.]*|-?\d+\.\d*(?:e-?\d+)?"
                   r"|-?\d+|->|\S")
VOCABULARY = ["%", "@", "?", ":", ",", "x", "[", "]", "{", "}", "(", ")", "->", "=", "0", "-1",
              "1.0", "nan", "9223372036854775808", "1e999", "memref<f32x?>", "group<", "i1",
              "f64", "index", "yield", "if", "else", "for", "foreach", "gemm.n.t", "store",
              "load", "subview", "expand", "fuse", "alloca", "barrier", "strided<", ">", ";",
              "\n", "%0", "func", "arith.div", "cast", "u8", "offset:"]

__all__ = ["mutants", "mutate", "frontend_problem"]


def mutate(text: str, draw) -> str:
    """1-4 token edits: delete, duplicate, swap, replace by vocabulary or by another token."""
    tokens = TOKEN.findall(text)
    if not tokens:
        return text
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "vocab", "copy"]))
        if op == "delete" and len(tokens) > 1:
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "vocab":
            tokens[i] = draw(st.sampled_from(VOCABULARY))
        else:
            tokens[i] = tokens[draw(st.integers(0, len(tokens) - 1))]
    return " ".join(tokens)


@st.composite
def mutants(draw, **params):
    """(mutated source, the original case) from a generated kernel."""
    from ..strategies import kernels

    case = draw(kernels(**params))
    return mutate(case.source, draw), case


def frontend_problem(text: str, args: dict, groups: int, max_steps: int = 20000
                     ) -> Optional[str]:
    """None when parse/check/run ended in success or a TLError; else a description."""
    import tlinterp
    from tlinterp.interp import run

    try:
        program = tlinterp.parse(text, "<mutant>", lang="v0.3")  # mutants of v0.3 text
        tlinterp.check(program)
        if len(program.functions) == 1:
            run(program, args, groups=groups, max_steps=max_steps)
    except TLError:
        return None
    except RecursionError:
        return "RecursionError (deeply nested input must be a diagnostic)"
    except Exception as e:  # noqa: BLE001 - anything else is exactly what we look for
        return f"{type(e).__name__}: {e}"
    return None
