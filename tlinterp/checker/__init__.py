"""The static rules: `v03.check` (the entry for both versions; it sends v0.4 programs to
`v04`), and the rules both versions state in one place (`layout`, `blas_shapes`)."""
