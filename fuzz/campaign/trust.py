"""Whether `tlfuzz reproduce NAME` / `tlfuzz triage NAME` may run the implementation a
finding's NAME.txt names.

The first line of NAME.txt is a command line, and its `--impl` may name any command
(`'mycc {kernel}'`, `ir:...`, `opencl-c:...`, `spirv:...`) or Python code (`python:...`):
a finding received from someone else, or edited by anyone who could write the directory,
would run whatever they put there.  The line is never given to a shell (it is split into
words and parsed as our own flags), and an implementation that runs something other than
this package's own code (`interp`, `opencl`) runs only when

- the line is ours: tlfuzz signed it when it saved the finding (a `signature:` line under it,
  an HMAC of the first line with a key of this user's, `finding_key()`), or
- `--impl` on the command line names the implementation (the user chose it), or
- the user says yes when asked (a terminal only; elsewhere it is a usage error, exit 2).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
from typing import Optional

from tlinterp.io.boundedread import MAX_LINE_BYTES, read_first_line

SIGNATURE = "signature: "  # the start of the line under the command
# this package's own implementations: they run no code a finding can choose
_OURS = ("interp", "tlinterp", "opencl", "tlgpu")


def key_path() -> str:
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "tensor-language", "finding-key")


def finding_key(create: bool = False) -> Optional[bytes]:
    """This user's key for signing saved lines (made, readable by the user alone, when
    `create`); None when there is none (or it cannot be made: the lines go unsigned)."""
    path = key_path()
    try:
        with open(path, "rb") as f:
            key = f.read(64)
        if len(key) >= 32:
            return key
    except OSError:
        pass
    if not create:
        return None
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another campaign made it meanwhile
        return finding_key(create=False)
    except OSError:
        return None
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _mac(key: bytes, line: str) -> str:
    return hmac.new(key, line.strip().encode(), hashlib.sha256).hexdigest()


def signature_line(command: str) -> str:
    """The line saved under `command` (the first line of NAME.txt) that shows tlfuzz wrote
    it, with its newline; "" when no key can be made."""
    key = finding_key(create=True)
    return f"{SIGNATURE}{_mac(key, command)}\n" if key else ""


def is_signed(txt: str, command: str) -> bool:
    """Whether NAME.txt holds our signature of `command`, its first line."""
    key = finding_key()
    if key is None:
        return False
    try:
        with open(txt, "rb") as f:
            head = f.read(MAX_LINE_BYTES * 4).decode("utf-8", errors="replace")
    except OSError:
        return False
    want = _mac(key, command)
    return any(hmac.compare_digest(line[len(SIGNATURE):].strip(), want)
               for line in head.splitlines()[1:8] if line.startswith(SIGNATURE))


def runs_chosen_code(spec: str) -> bool:
    """Whether the implementation `spec` runs a command or code that its text chooses."""
    return spec.partition(":")[0] not in _OURS or "{" in spec


def check_saved_impl(txt: str, spec: str, error) -> None:
    """Raise `error` (an exception class) unless the implementation `spec` from the first
    line of `txt` may run (see the module's docstring); asks on a terminal."""
    if not runs_chosen_code(spec):
        return
    command = read_first_line(txt, MAX_LINE_BYTES, "a finding's command file")
    if is_signed(txt, command):
        return
    what = (f"{txt} was not saved by your tlfuzz (its first line carries no signature of "
            f"yours) and names the implementation\n    {spec}\nwhich runs a command or code "
            "of its own choosing")
    if sys.stdin.isatty() and sys.stderr.isatty():
        print(f"{what}. Run it? [y/N] ", end="", file=sys.stderr, flush=True)
        try:
            if sys.stdin.readline().strip().lower() in ("y", "yes"):
                return
        except (OSError, ValueError):
            pass
    raise error(f"{what}; not run. Read it, then give it with --impl on the command line "
                "(or answer yes in a terminal)")


__all__ = ["SIGNATURE", "key_path", "finding_key", "signature_line", "is_signed",
           "runs_chosen_code", "check_saved_impl"]
