"""The conventions `tlrun`, `tlconform` and `tlfuzz` (and its subcommands) share, in one place.

    p, g = tool_parser("tlrun", "Run a tensor-language kernel ...", EXAMPLES, EXIT_STATUSES)
    g.run.add_argument(...)            # g.implementation, g.run, g.output, g.general
    add_verbosity(g.output, verbose="...", quiet="...")

Every `--help` then reads alike: the one-line purpose, usage, the option groups in the order
of SECTIONS (a group with no option is left out), "examples:" and "exit status:" (every
status the tool can return, one per line). `--version` reads the installed package's
metadata, else the version the source tree declares. `wrote` is the one line a tool prints
after writing a file the user asked for, and `default_findings_dir` is where findings go when
no `--out` is given."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tlinterp.impl.flags import whole_number

__all__ = ["SECTIONS", "Groups", "tool_parser", "add_impl_choice", "print_impls", "add_verbosity",
           "add_jobs", "hidden_alias", "positive_int", "version", "wrote", "default_findings_dir",
           "DISTRIBUTION"]

DISTRIBUTION = "tensor-language-reference"

# the option groups of every --help, in this order
SECTIONS = ("implementation options", "run options", "output options", "general options")


def version() -> str:
    """The installed distribution's version (package metadata); from a source tree that is
    not installed, the version its pyproject.toml declares."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return _declared_version() or "unknown"


def _declared_version() -> Optional[str]:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:  # an installed wheel has no pyproject.toml beside its packages
        return None
    if f'name = "{DISTRIBUTION}"' not in text:
        return None
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return m.group(1) if m else None


@dataclass
class Groups:
    """The option groups of a tool's parser, in SECTIONS order."""

    implementation: argparse._ArgumentGroup
    run: argparse._ArgumentGroup
    output: argparse._ArgumentGroup
    general: argparse._ArgumentGroup


def epilog(examples: Sequence[tuple[str, str]], exit_statuses: Sequence[tuple[int, str]],
           notes: str = "") -> str:
    """The text after the options: notes, "examples:" and "exit status:"."""
    width = max(len(cmd) for cmd, _ in examples) + 2
    lines = [notes.rstrip() + "\n"] if notes else []
    lines.append("examples:")
    for cmd, what in examples:
        lines.append(f"  {cmd:{width}}{what}" if what else f"  {cmd}")
    lines.append("")
    lines.append("exit status:")
    for status, what in exit_statuses:
        lines.append(f"  {status:<4} {what}")
    return "\n".join(lines) + "\n"


def tool_parser(prog: str, purpose: str, examples: Sequence[tuple[str, str]],
                exit_statuses: Sequence[tuple[int, str]], *, notes: str = "",
                usage: Optional[str] = None, parser_class: type = argparse.ArgumentParser,
                help_action: Optional[type] = None) -> tuple[argparse.ArgumentParser, Groups]:
    """A parser with the shared layout: `purpose` (one line), the groups of SECTIONS, -h and
    --version under "general options", and the examples and exit statuses after them."""
    if "\n" in purpose.strip():
        raise ValueError("the purpose is one line")
    p = parser_class(prog=prog, description=purpose.strip(), usage=usage, add_help=False,
                     epilog=epilog(examples, exit_statuses, notes),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = Groups(*(p.add_argument_group(title) for title in SECTIONS))
    groups.general.add_argument("-h", "--help", action=help_action or "help",
                                help="show this help and exit")
    groups.general.add_argument("--version", action="version",
                                version=f"{prog.split()[0]} {version()}",
                                help="show the version and exit")
    return p, groups


IMPL_KINDS = ("'opencl-c:COMMAND {tl}', python:MODULE:FUNCTION, a command template, ... "
              "(see --list-impls)")


def add_impl_choice(group: argparse._ArgumentGroup, *, default: Optional[str], first: str,
                    old: Sequence[str] = ("--backend",), list_impls: bool = True) -> None:
    """--impl NAME (`first` lists the usual names, the default first), the old spellings
    `old` as hidden aliases, and --list-impls."""
    group.add_argument("--impl", dest="impl", default=default, metavar="NAME",
                       help=f"implementation: {first}, {IMPL_KINDS}")
    for flag in old:
        hidden_alias(group, flag, "impl", metavar="NAME")
    if list_impls:
        group.add_argument("--list-impls", action="store_true",
                           help="list the implementations --impl accepts, then exit")


LANGS = ("v0.3", "v0.4")  # the tensor-language versions every tool reads


def add_lang(group: argparse._ArgumentGroup, *, default: Optional[str], help: str) -> None:
    """--lang v0.3|v0.4 (what it selects is the tool's `help`)."""
    group.add_argument("--lang", choices=list(LANGS), default=default, help=help)


def grid_arg(text: str):
    """argparse type of `--groups N` (an int) or `--groups X,Y[,Z]` (a grid of 3; the rule is
    tlinterp.io.args.parse_groups)."""
    from tlinterp.io.args import parse_groups

    try:
        return parse_groups(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def print_impls(out=None) -> int:
    """The registry's implementations, one a line (--list-impls); exit status 0."""
    from tlinterp.impl import available

    for name, doc in available():
        print(f"{name:12} {doc}", file=out or sys.stdout)
    return 0


def add_verbosity(group: argparse._ArgumentGroup, *, verbose: Optional[str] = None,
                  quiet: Optional[str] = None) -> None:
    """-v/--verbose and -q/--quiet, with what each means for this tool."""
    if verbose is not None:
        group.add_argument("-v", "--verbose", action="store_true", help=verbose)
    if quiet is not None:
        group.add_argument("-q", "--quiet", action="store_true", help=quiet)


def add_jobs(group: argparse._ArgumentGroup, *, default: int, help: str) -> None:
    """-j/--jobs N (N >= 1: argparse names the flag in its usage error)."""
    group.add_argument("-j", "--jobs", type=positive_int, default=default, metavar="N",
                       help=help)


# argparse type: a whole number >= 1 (the one rule: tlinterp/impl/flags.whole_number)
positive_int = whole_number(1)


def hidden_alias(parser_or_group, flag: str, dest: str, **kwargs) -> None:
    """An old spelling of a flag, still accepted, no longer shown in --help."""
    parser_or_group.add_argument(flag, dest=dest, help=argparse.SUPPRESS, **kwargs)


def wrote(tool: str, path: str, what: str) -> None:
    """The one line after writing a file the user asked for: `TOOL: wrote PATH (WHAT)`."""
    print(f"{tool}: wrote {path} ({what})", file=sys.stderr, flush=True)


def default_findings_dir() -> str:
    """Where `tlfuzz` saves findings without `--out`: the per-user cache directory
    (platformdirs: `$XDG_CACHE_HOME/tensor-language/findings`, else
    `~/.cache/tensor-language/findings` on Linux), never the current directory."""
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # pragma: no cover - platformdirs comes with pyopencl (pytools)
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "tensor-language", "findings")
    return os.path.join(user_cache_dir("tensor-language", appauthor=False), "findings")
