"""The v0.4 cases: `core` (the instructions, the four layouts, a 3-D grid), `scalar`
(f16/bf16/c32/c64 arithmetic, math, casts), `memory`, `coop` (cooperative matrices), `folding`
(the scalar operations on constants only), `nan` (special values), `invalid` (one per rule of
the v0.4 front end, to `invalid/v04/`), `tags` (which instructions and layouts a case
exercises)."""
