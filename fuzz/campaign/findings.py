"""A finding of a differential run, and saving it: the kernel, its arguments and the lines
that rerun it (`tlfuzz reproduce`, `tlrun`)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from fuzz.strategies import FuzzCase
from tlinterp.io.args import save_npz
from tlinterp.io.outfile import write_text

__all__ = ["Finding", "save_finding", "save_files", "reproduce_command", "config_overrides",
           "finding_impl", "tlrun_line"]


@dataclass
class Finding:
    case: FuzzCase
    kind: str  # "mismatch" | "red-zone" | "backend-error" | "backend-crash" |
    # "oclgrind-report" | "generator" | "interp-error"
    message: str
    config: object = None  # tlgpu.LoweringConfig used
    device: Optional[str] = None
    impl: Optional[tuple] = None  # (spec, ImplOptions) of the implementation under test

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def config_overrides(config) -> list[str]:
    """`--lowering KEY=VALUE` strings for the fields that differ from the defaults."""
    if config is None:
        return []
    default = type(config)()
    out = []
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        if v != getattr(default, f.name):
            if isinstance(v, tuple):
                v = ",".join(str(x) for x in v)
            out.append(f"{f.name}={v}")
    return out


def finding_impl(finding: Finding) -> tuple:
    """(spec, ImplOptions) of the implementation a finding was found against: the one under
    test, else our OpenCL lowering with the finding's device and lowering config."""
    if finding.impl is not None:
        return finding.impl
    from tlinterp.impl import ImplOptions

    return "opencl", ImplOptions(device=finding.device or "pocl",
                                 lowering=tuple(config_overrides(finding.config)))


def reproduce_command(tl: str, npz: str, finding: Finding) -> str:
    """The interestingness test of a finding: `tlfuzz reproduce ...` with the implementation's
    flags exits 1 while the implementation's result differs from the reference (a reducer
    keeps a candidate on status 1). A generator finding is the reference's own report, which
    `tlrun` shows."""
    if finding.kind == "generator":
        return tlrun_line(tl, npz, finding)
    from fuzz.triage.reproduce import reproduce_line

    return reproduce_line(tl, npz, finding.case.func, finding.case.groups,
                          *finding_impl(finding), lang=_said_lang(finding))


def tlrun_line(tl: str, npz: str, finding: Finding) -> str:
    """`tlrun` running the finding's implementation alone (the reference for a generator
    finding), to see what it does."""
    from tlinterp.impl.base import tlrun_command

    spec, options = ("interp", None) if finding.kind == "generator" else finding_impl(finding)
    return tlrun_command(spec, options, tl, npz, finding.case.func, finding.case.groups,
                         _said_lang(finding))


def _said_lang(finding: Finding) -> Optional[str]:
    """`--lang` of the saved lines: v0.4 is said (a reader need not detect it), v0.3 is the
    tools' default reading of generated text and stays unsaid (the lines of older findings)."""
    return "v0.4" if finding.case.lang == "v0.4" else None


def save_finding(finding: Finding, out_dir: str) -> str:
    """Write NAME.tl, NAME.npz and NAME.txt (the `tlfuzz reproduce` line, the `tlrun` line,
    our signature of the first line (fuzz/campaign/trust.py), the message);
    NAME is a hash of the program and arguments, so a finding is saved once. Returns the
    path without extension."""
    from fuzz.campaign.trust import signature_line

    os.makedirs(out_dir, exist_ok=True)
    h = hashlib.sha1(finding.case.source.encode())
    for k in sorted(finding.case.args):
        h.update(k.encode())
        h.update(np.ascontiguousarray(finding.case.args[k]).tobytes())
    base = os.path.join(out_dir, f"{finding.kind}-{h.hexdigest()[:12]}")
    lines = [reproduce_command(base + ".tl", base + ".npz", finding) + "\n"]
    if finding.kind != "generator":
        lines.append(f"run it alone: {tlrun_line(base + '.tl', base + '.npz', finding)}\n")
    direct = _direct_command(finding, base)
    if direct:
        lines.append(f"the command alone: {direct}\n")
    lines.append(signature_line(lines[0]))  # the line is ours: reproduce runs it unasked
    lines.append("\n")
    if finding.kind == "red-zone":
        lines.append("(tlrun and tlfuzz reproduce do not guard buffers: `tlfuzz --out DIR` "
                     "replays this finding with red zones)\n\n")
    lines.append(finding.message + "\n")
    save_files(base, [(".tl", finding.case.source), (".npz", finding.case.args),
                      (".txt", "".join(lines))])
    return base


def save_files(base: str, parts: list) -> None:
    """Write BASE+SUFFIX for each (suffix, text or arrays), each file atomically; when one
    cannot be written (a full disk, an I/O error, a signal), the files this call created are
    removed again, so a finding is saved whole or not at all. Write failures raise
    tlinterp's ArgumentError naming the file and the reason."""
    created: list[str] = []
    try:
        for suffix, content in parts:
            path = base + suffix
            existed = os.path.exists(path)
            if isinstance(content, str):
                write_text(path, content)
            else:
                save_npz(path, content)
            if not existed:
                created.append(path)
    except BaseException:
        for path in created:
            try:
                os.unlink(path)
            except OSError:
                pass
        raise


def _direct_command(finding: Finding, base: str) -> Optional[str]:
    """A command template's own command line for the saved files (None for the others)."""
    from tlinterp.impl.registry import is_template
    from tlinterp.impl.template import Template

    if finding.impl is None or not is_template(finding.impl[0]):
        return None

    return Template(*finding.impl).reproduce(base + ".tl", base + ".npz", finding.case.func,
                                             finding.case.groups)
