"""The syntax of the BLAS collectives in both versions, written from the classes' declarations.

Each `ir.Blas` subclass declares its keyword, its '.n'/'.t' flags (the roles' `trans`), its
operands (alpha, the inputs, beta, the output) and v0.3's older spellings; from these come the
grammar rules both parsers append before loading their grammar (`rules`), the words of their
syntax errors (`words`), and the instruction built from a parse node (`build`).  The versions
differ only in what is declared here as version-specific:

- v0.3: `KW .n|.t per flag [.atomic] [,] alpha, inputs..., beta, out : scalar, memrefs...,
  scalar, memref` (every flag written; the comma only where `COMMA_AFTER_MODIFIERS`);
- v0.4: `KW [.atomic] [.n|.t per flag, trailing ones optional] alpha, inputs..., beta, out`
  (no types: the parser looks them up in its scope).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Optional

from tlinterp.lang import ir

# a keyword's end, then white space and comments (both grammars' tokens end so)
TOKEN_END = r"(?![A-Za-z0-9_])[ \t\r\n]*(?:;[^\n]*[ \t\r\n]*)*"
RULE = "blas_instruction"  # the one alternative of `instruction` both grammars name


def _rule(cls: type, lang: str) -> str:
    return f"{cls.keyword(lang)}_instruction"


def _token(cls: type, lang: str) -> str:
    return cls.keyword(lang).upper()


def rules(lang: str) -> str:
    """The grammar rules of every BLAS class in `lang`, with `blas_instruction` choosing one."""
    out = [f"{RULE} = " + " / ".join(_rule(c, lang) for c in ir.BLAS)]
    for cls in ir.BLAS:
        n_in = len(cls.inputs())
        if lang == "v0.3":
            operands = " COMMA ".join(["const_or_val"] + ["local_identifier"] * n_in
                                      + ["const_or_val", "local_identifier"])
            types = " COMMA ".join(["scalar_type"] + ["memref_type"] * n_in
                                   + ["scalar_type", "memref_type"])
            flags = " transpose" * len(cls.flags())
            comma = " COMMA?" if cls.COMMA_AFTER_MODIFIERS else ""
            body = f"{flags} ATOMIC?{comma} {operands} COLON {types}"
            spellings = (cls.MNEMONIC, *cls.V03_ALIASES)
        else:
            flags = " transpose?" * len(cls.flags())
            operands = " COMMA ".join(["local_identifier"] * (n_in + 3))
            body = f" ATOMIC?{flags} {operands}"
            spellings = (cls.keyword(lang),)
        out.append(f"{_rule(cls, lang)} = {_token(cls, lang)}{body}")
        # longest first: a keyword may be the start of another spelling (hadamard_product)
        words = "|".join(re.escape(w) for w in sorted(spellings, key=len, reverse=True))
        out.append(f'{_token(cls, lang)} = ~r"(?:{words}){TOKEN_END}"')
    return "\n".join(out) + "\n"


def words(lang: str) -> dict[str, list[str]]:
    """The keyword tokens' words in syntax errors ('hadamard_product', not its pattern)."""
    return {_token(c, lang): [f"'{c.keyword(lang)}'"] for c in ir.BLAS}


CLASSES: dict[str, dict[str, type]] = {
    lang: {_rule(c, lang): c for c in ir.BLAS} for lang in ("v0.3", "v0.4")}


def build(node: Any, lang: str, span: Optional[ir.Span], is_t: Callable[[Any], bool],
          operand: Callable[[Any], tuple], scalar_type: Callable[[Any], Any],
          memref_type: Callable[[Any], Any]) -> ir.Blas:
    """The instruction a `blas_instruction` node of `lang` holds.  `operand(node)` gives
    (operand, type or None); `scalar_type`/`memref_type` read a v0.3 written type."""
    chosen = node.children[0]
    cls = CLASSES[lang][chosen.expr.name]
    ch = chosen.children[1:]  # after the keyword
    n_flags = len(cls.flags())
    kw: dict[str, Any] = {}
    if lang == "v0.3":
        flag_nodes, ch = ch[:n_flags], ch[n_flags:]
        atomic, ch = ch[0], ch[1 + cls.COMMA_AFTER_MODIFIERS:]
        fields = cls.operand_fields()
        ops = ch[0:2 * len(fields):2]
        written = ch[2 * len(fields)::2]
        for f, op_node, t_node in zip(fields, ops, written):
            kw[f] = operand(op_node)[0]
            read = scalar_type if f in ("alpha", "beta") else memref_type
            kw[f + "_type"] = read(t_node)
        flags = [is_t(n) for n in flag_nodes]
    else:
        atomic, flag_nodes, ch = ch[0], ch[1:1 + n_flags], ch[1 + n_flags:]
        for f, op_node in zip(cls.operand_fields(), ch[0::2]):
            kw[f], kw[f + "_type"] = operand(op_node)
        flags = [bool(n.children) and is_t(n.children[0]) for n in flag_nodes]
    kw.update(zip(cls.flags(), flags))
    return cls(atomic=bool(atomic.children), span=span, **kw)


__all__ = ["TOKEN_END", "RULE", "CLASSES", "rules", "words", "build"]
