"""The lowering of what tensor language v0.4 adds: its scalar types (`lowp`: f16/bf16,
`complexnum`: c32/c64), control flow and memory instructions (`controlflow`, `cumsum`,
`atomics`), and SPMD code (`spmd`: parallel regions and sub-group builtins, `subgroups`:
sub-group operations per device strategy, `coopmatrix`: cooperative matrices). Each module's
rules are registered in `tlgpu/lowering/function.py`'s LOWER table."""
