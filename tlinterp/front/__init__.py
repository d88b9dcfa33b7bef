"""From source text to IR: `pipeline` (the front door: preprocess, detect the version, parse,
check, one stage after another), `preprocess` (v0.4's `$name` and `!calc`), `detect` (each
version's markers), `migrate` (the IR in the form each version can spell)."""
