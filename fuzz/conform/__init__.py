"""The conformance tool `tlconform`: any implementation over the corpus, judged and reported."""
