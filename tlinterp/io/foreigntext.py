"""Text from another program (an implementation's messages and output, its name, a device's
name) made safe to show: control characters (terminal escape codes among them) spelled as
`\\x1b`, so a report never moves the cursor, recolours or clears a terminal, and never holds
characters an XML report cannot; and, for rich, its markup brackets escaped, so `[/]` or
`[/usr/include/foo]` is shown as written instead of ending the report in a MarkupError.
Every report of the three tools passes foreign text through `shown` (plain text) or
`for_rich` (a rich string) - one place for the rule."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F: 8-bit CSI and friends),
# as a str.translate table: a regex with a callback per match took a minute on 16 MiB of NULs
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0b, 0x20),
                                         *range(0x7f, 0xa0))}


def shown(text: object) -> str:
    """`text` (str() of it) with every control character but tab and newline as `\\xNN`."""
    return str(text).translate(_CONTROL)


def for_rich(text: object) -> str:
    """`shown(text)` with rich's markup escaped: safe inside a string rich renders."""
    from rich.markup import escape

    return escape(shown(text))


# terminal control sequences (colours, titles, cursor moves: CSI, OSC and two-byte escapes)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def printable(text: str) -> str:
    """An implementation's captured output as it may appear in a report, a log or a terminal:
    colour and other terminal control sequences removed (a coloured `FILE:LINE.COL-COL:
    message` still reads as one), every other control character but tab and newline shown as
    `\\xNN` (`shown`)."""
    return shown(_ESCAPES.sub("", text.replace("\r\n", "\n")))


# What a report or log keeps of one case's foreign text: an implementation printing 100 MB
# made a 16.8 MB report and a 50 MB log of one failing case.
MAX_KEPT = 64 << 10  # characters of its output
MAX_LINE_KEPT = 2000  # characters of a one-line detail


def clipped(text: str, limit: int = MAX_KEPT) -> str:
    """`text` cut to about `limit` characters (its start and its end, where diagnostics and
    the last words of a crash are), saying where and how much was cut."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit * 3 // 4], text[-(limit // 4):]
    return (f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut here: a report "
            f"keeps {limit} per case ...]\n{tail}")
