"""Tensor language v0.4: grammar, parser, printer and the table of its spellings."""
