"""Ending `tlconform` and `tlfuzz` in order, whatever stops them: tlinterp/impl/shutdown.py, which
tlrun uses too (tlinterp never imports fuzz, so the one copy lives there)."""

from tlinterp.impl.shutdown import *  # noqa: F401,F403 - this module's interface, declared there
from tlinterp.impl.shutdown import __all__  # noqa: F401
