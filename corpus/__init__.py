"""The conformance corpus: data under valid/, invalid/, undefined/; cases and generator as code."""
