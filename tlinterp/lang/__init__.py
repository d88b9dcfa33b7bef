"""The language both versions share: the IR, its types, the scalar-operation table, the
result-type and memory-effect rules, diagnostics; `v03/` and `v04/` each version's grammar,
parser and printer."""
