"""The tags of a v0.4 corpus kernel, read from its text: the v0.4 instructions it uses and the
layouts of its memref (and group member) parameters. The v0.4 instruction names are those of
the v0.4 reference (docs/language.md "v0.4 syntax by example"); tests/test_corpus_v04.py
checks that the corpus uses every one."""

from __future__ import annotations

import re

INSTRUCTIONS = tuple("""
alloca associated atomic_load atomic_store atomic_add atomic_max atomic_min axpby barrier cast
constant cumsum expand fuse for foreach foreach_tile gemm gemv ger hadamard if load parallel
size store subview sum yield add sub mul div rem shl shr and or xor min max abs neg not conj im
re group_id num_groups num_subgroups subgroup_size subgroup_id subgroup_linear_id
subgroup_local_id equal not_equal greater_than greater_than_equal less_than less_than_equal
cos sin exp exp2 log log2 native_cos native_sin native_exp native_exp2 native_log native_log2
subgroup_broadcast subgroup_exclusive_scan_add subgroup_exclusive_scan_max
subgroup_exclusive_scan_min subgroup_inclusive_scan_add subgroup_inclusive_scan_max
subgroup_inclusive_scan_min subgroup_reduce_add subgroup_reduce_max subgroup_reduce_min
cooperative_matrix_apply cooperative_matrix_atomic_add cooperative_matrix_atomic_load
cooperative_matrix_atomic_max cooperative_matrix_atomic_min cooperative_matrix_atomic_store
cooperative_matrix_construct cooperative_matrix_extract cooperative_matrix_insert
cooperative_matrix_load cooperative_matrix_mul_add cooperative_matrix_prefetch
cooperative_matrix_reduce_add cooperative_matrix_reduce_max cooperative_matrix_reduce_min
cooperative_matrix_scale cooperative_matrix_store
""".split())

# a mnemonic: not a value (%x), function (@k) or modifier (.t) name, followed by a space, a
# modifier or the end of the line
_WORD = re.compile(r"(?<![%@\w.$])([a-z][a-z_0-9]*)(?=[ .\n])")
_MEMREF = re.compile(r"memref<([^<>]*(?:<[^<>]*>[^<>]*)*)>")


def instructions_of(source: str) -> list[str]:
    """The v0.4 instructions `source` uses (comments left out), sorted."""
    code = re.sub(r";[^\n]*", "", source)
    return sorted(set(_WORD.findall(code)) & set(INSTRUCTIONS))


def _parameters(source: str) -> str:
    """The parameter lists of the functions in `source`."""
    return "".join(m.group(1) for m in re.finditer(r"func\s+@\w+\s*\((.*?)\)\s*(?:attributes|\{)",
                                                   source, re.S))


def layouts_of(source: str) -> list[str]:
    """canonical / strided (static non-canonical strides) / dynshape (a `?` size) / dynstride
    (a `?` stride) of every memref among the parameters (group members too), sorted."""
    found = set()
    for m in _MEMREF.finditer(_parameters(source)):
        parts = [p.strip() for p in re.split(r",(?![^<]*>)", m.group(1))]
        shape = [d.strip() for d in parts[0].split(" x ")[1:]]
        strided = next((p for p in parts[1:] if p.startswith("strided<")), None)
        kinds = set()
        if "?" in shape:
            kinds.add("dynshape")
        if strided is not None:
            strides = [s.strip() for s in strided[len("strided<"):-1].split(",")]
            if "?" in strides:
                kinds.add("dynstride")
            elif strides != _canonical(shape):
                kinds.add("strided")
        found |= kinds or {"canonical"}
    return sorted(found)


def _canonical(shape: list[str]) -> list[str]:
    out, s = [], 1
    for d in shape:
        out.append("?" if s is None else str(s))
        s = None if s is None or d == "?" else s * int(d)
    return out
