"""Tensor language v0.4 spellings of the IR's operations: the one table the v0.4 parser,
printer, checker and migration read.

v0.4 writes its scalar operations without the v0.3 prefixes (`add`, not `arith.add`; `equal`,
not `cmp.eq`) and adds operations v0.3 lacks (`min`, `max`, `abs`, `conj`, `re`, `im`, the math
functions).  All are op names of the existing classes ir.Arith / ir.ArithUnary / ir.Compare;
the sets below are v0.4's spellings; the operations tlinterp/lang/ops.py does not declare yet (the
v0.4-only unary and math operations) are what the interpreter cannot run and v0.3 cannot
print.  They are kept here, in one place, to fold into ops.py's table.
"""

from __future__ import annotations

import re

from tlinterp.lang import ir, ops

# v0.4 spelling -> IR op name (ir.Arith.op); v0.4 adds min and max
ARITH_BINARY = {o: o for o in ("add", "sub", "mul", "div", "rem", "max", "min", "shl", "shr",
                               "and", "or", "xor")}
# v0.4 spelling -> IR op name (ir.ArithUnary.op); abs ... native_log2 are v0.4 only
ARITH_UNARY = {o: o for o in ("abs", "neg", "not", "conj", "im", "re")}
MATH_UNARY = {o: o for o in ("cos", "sin", "exp", "exp2", "log", "log2", "native_cos",
                             "native_sin", "native_exp", "native_exp2", "native_log",
                             "native_log2")}
UNARY = {**ARITH_UNARY, **MATH_UNARY}
# v0.4 spelling -> IR condition (ir.Compare.cond)
COMPARE = {"equal": "eq", "not_equal": "ne", "greater_than": "gt", "greater_than_equal": "ge",
           "less_than": "lt", "less_than_equal": "le"}
COMPARE_SPELLING = {v: k for k, v in COMPARE.items()}

# IR op names the scalar-operation table (tlinterp/lang/ops.py) does not declare: no v0.3 spelling
# (not even as an extension) and no interpreter semantics yet
V04_ONLY_BINARY = frozenset(ARITH_BINARY) - frozenset(ops.names(ops.BINARY))
V04_ONLY_UNARY = frozenset(UNARY) - frozenset(ops.names(ops.UNARY))

BUILTINS_XYZ = ("group_id", "num_groups", "num_subgroups", "subgroup_id")
BUILTINS_PLAIN = ("subgroup_size", "subgroup_linear_id", "subgroup_local_id")
SPMD_BUILTINS = frozenset({"subgroup_id", "subgroup_linear_id", "subgroup_local_id"})
SUBGROUP_OPS = tuple(f"{k}_{o}" for k in ("exclusive_scan", "inclusive_scan", "reduce")
                     for o in ("add", "max", "min"))
MEMORY_SCOPES = ("cross_device", "device", "work_group", "subgroup")
MEMORY_SEMANTICS = ("relaxed", "acquire", "release", "acquire_release",
                    "sequentially_consistent")
CHECKED_FLAGS = ("rows", "cols", "both")

# mnemonic of each v0.4-only instruction class (messages: "not yet executable: cumsum ...")
MNEMONICS: dict[type, str] = {
    ir.Constant: "constant", ir.Builtin: "builtin", ir.Associated: "associated",
    ir.AtomicLoad: "atomic_load", ir.AtomicStore: "atomic_store",
    ir.AtomicUpdate: "atomic_update", ir.Cumsum: "cumsum", ir.Parallel: "parallel",
    ir.ForeachNd: "foreach", ir.ForeachTile: "foreach_tile",
    ir.SubgroupBroadcast: "subgroup_broadcast", ir.SubgroupOp: "subgroup operation",
    ir.CoopApply: "cooperative_matrix_apply", ir.CoopLoad: "cooperative_matrix_load",
    ir.CoopStore: "cooperative_matrix_store",
    ir.CoopAtomicUpdate: "cooperative_matrix_atomic_update",
    ir.CoopConstruct: "cooperative_matrix_construct",
    ir.CoopExtract: "cooperative_matrix_extract", ir.CoopInsert: "cooperative_matrix_insert",
    ir.CoopMulAdd: "cooperative_matrix_mul_add", ir.CoopPrefetch: "cooperative_matrix_prefetch",
    ir.CoopReduce: "cooperative_matrix_reduce", ir.CoopScale: "cooperative_matrix_scale",
}


# v0.4-only instruction classes the interpreter executes (tlinterp/front/migrate.py lets them
# through a run; the rest are "not yet executable").  Builtins: only the grid ones (SPMD ones
# need lanes).
EXECUTABLE: tuple[type, ...] = (ir.Associated, ir.AtomicLoad, ir.AtomicStore, ir.AtomicUpdate,
                                ir.Cumsum, ir.ForeachNd, ir.Builtin)
GRID_BUILTINS = frozenset({"group_id", "num_groups"})


def executable(inst: ir.Instruction) -> bool:
    """The interpreter runs this v0.4-only instruction."""
    if isinstance(inst, ir.Builtin):
        return inst.name in GRID_BUILTINS
    return isinstance(inst, EXECUTABLE)


def v04_words(message: str) -> str:
    """A message in v0.4's words: the IR's i1 is spelled `bool` (types print as in the IR)."""
    return re.sub(r"(?<![\w%])i1(?!\w)", "bool", message)


def construct(inst: ir.Instruction) -> str:
    """A short name of what `inst` is, for messages."""
    if isinstance(inst, ir.Builtin):
        return inst.name + (f".{inst.comp}" if inst.comp else "")
    if isinstance(inst, ir.SubgroupOp):
        return "subgroup_" + inst.op
    if isinstance(inst, (ir.AtomicUpdate, ir.CoopAtomicUpdate)):
        return MNEMONICS[type(inst)].replace("update", inst.op)
    if isinstance(inst, ir.CoopReduce):
        return f"cooperative_matrix_reduce_{inst.op}"
    if isinstance(inst, (ir.CoopLoad, ir.CoopStore)) and inst.atomic:
        return MNEMONICS[type(inst)].replace("matrix_", "matrix_atomic_")
    return MNEMONICS.get(type(inst), type(inst).__name__.lower())


__all__ = ["ARITH_BINARY", "ARITH_UNARY", "MATH_UNARY", "UNARY", "COMPARE", "COMPARE_SPELLING",
           "V04_ONLY_BINARY", "V04_ONLY_UNARY", "BUILTINS_XYZ", "BUILTINS_PLAIN",
           "SPMD_BUILTINS", "SUBGROUP_OPS", "MEMORY_SCOPES", "MEMORY_SEMANTICS",
           "CHECKED_FLAGS", "MNEMONICS", "EXECUTABLE", "GRID_BUILTINS", "executable",
           "construct", "v04_words"]
