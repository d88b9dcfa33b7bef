"""Tensor language v0.3 (with the v0.2 spellings): grammar, parser and printer."""
