"""The command line: `tlrun` (`tlrun.main`, also `python -m tlinterp.cli`) and the conventions
the three tools share (`conventions`)."""

from tlinterp.cli.tlrun import main

__all__ = ["main"]
