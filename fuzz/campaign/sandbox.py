"""Run differential batches in a child process, so that a crashing or hanging OpenCL
compiler/driver becomes a finding instead of killing the campaign.

The child (spawned, never forked: OpenCL state must not be inherited) keeps its OpenCL
context and program cache between batches; it is restarted after a crash or a hang.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
import warnings
from typing import Optional

from fuzz.campaign.harness import Finding, combine, differential
from fuzz.strategies import FuzzCase

__all__ = ["Sandbox", "quiet_child", "serve"]


def quiet_child() -> None:
    """Set up a child that runs OpenCL work for a parent: the parent decides when to stop
    (SIGINT ignored), and the OpenCL compiler's warnings, written straight to fd 2, are
    noise (build errors come back as exceptions); the child talks to its parent through a
    pipe or queue only."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.filterwarnings("ignore")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.dup2(devnull, 1)  # pocl reports its own compiler trouble on stdout ("dumped CFG")


def serve(conn, handle) -> None:
    """Answer each message on `conn` with `handle(message)` until the parent closes it or
    sends None."""
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        conn.send(handle(msg))


def _child(conn, mutation: Optional[str], impl=None) -> None:
    quiet_child()
    # some drivers drop debug files (pocl: broken.dot) into the working directory; it goes
    # with the child (and under a campaign's scratch directory, fuzz.shutdown, if killed)
    if impl is not None and not hasattr(impl, "differential"):  # (spec, ImplOptions) (a
        # suite, campaign/suites.py, resolves its own): resolved here, where it runs, before
        # the chdir (a python: plug-in is imported from the working directory)
        from tlinterp.impl import resolve

        impl = resolve(*impl)
    scratch = tempfile.mkdtemp(prefix="tlfuzz-sandbox-")
    os.chdir(scratch)
    try:
        _serve_batches(conn, mutation, impl)
    finally:
        os.chdir(os.path.dirname(scratch))
        shutil.rmtree(scratch, ignore_errors=True)


def _serve_batches(conn, mutation: Optional[str], impl) -> None:
    # the planted bug's counter: a lowering mutation's, or a v0.4 mutant plug-in's
    # (mutations_v04 counts there too)
    from fuzz.mutants.lowering_v03 import HITS as hits
    from fuzz.mutants.registry import apply

    if mutation:
        apply(mutation)

    def batch(msg):
        cases, config, device, timeout, deadline = msg
        done = [len(cases)]
        found = differential(cases, config=config, device=device, impl=impl, timeout=timeout,
                             deadline=deadline, done=done)
        return found, hits[0], done[0]

    serve(conn, batch)


class Sandbox:
    """`sandbox.run(cases, config)` -> findings, like `harness.differential`."""

    def __init__(self, device: Optional[str] = "pocl", timeout: float = 120.0,
                 mutation: Optional[str] = None, impl=None):
        self.device = device
        self.mutation = mutation  # fuzz.mutants.lowering_v03 name applied in the child (self-tests)
        self.timeout = timeout
        self.impl = impl  # (spec, tlinterp.impl.ImplOptions) of the implementation under test
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.conn = None
        self.restarts = 0
        self.mutation_hits = 0  # how often the planted mutation applied (bench: applicable?)
        # the campaign's end (time.time()): no run may last past it, and a run it cuts short
        # is neither a finding nor a case (`completed` counts the cases of the last run that
        # ran to their end)
        self.deadline: Optional[float] = None
        self.completed = 0

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_child, args=(child, self.mutation, self.impl),
                                     daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def _kill(self) -> None:
        if self.proc is not None:
            from fuzz.shutdown import kill_tree

            # with the processes it started (an implementation's, in sessions of their own)
            kill_tree(self.proc.pid)
            self.proc.join(5)
        self.proc = self.conn = None
        self.restarts += 1

    def run(self, cases: list[FuzzCase], config=None) -> list[Finding]:
        result = self._attempt(cases, config)
        if not isinstance(result, str):
            return result
        found = self._narrow(cases, config, result)
        self.completed = len(cases)  # a crash or a hang is this batch's result
        return found

    def _narrow(self, cases: list[FuzzCase], config, result: str) -> list[Finding]:
        if len(cases) == 1:
            return [_crash(cases, config, self.device, result, self.impl)]
        # a batch is one build but many launches, and the finding keeps one kernel's
        # arguments: rerun each kernel alone in a fresh child to save the one that crashes
        found: list[Finding] = []
        for k, case in enumerate(cases):
            alone = self._attempt([case], config)
            if isinstance(alone, str):
                return [_crash([case], config, self.device,
                               f"{alone} (kernel {k + 1} of a crashing batch of "
                               f"{len(cases)}, alone)", self.impl)]
            found += alone
        return found + [_crash(cases, config, self.device,
                               f"{result}; no kernel of the batch of {len(cases)} crashes "
                               "alone", self.impl)]

    def _attempt(self, cases: list[FuzzCase], config) -> list[Finding] | str:
        """The batch's findings, or what went wrong with the child (it is then restarted)."""
        self.completed = 0
        if self.deadline is not None and time.time() >= self.deadline:
            return []  # out of time: nothing runs
        if self.proc is None or not self.proc.is_alive():
            self._start()
        # another implementation runs the batch's cases one by one, each bounded by the
        # timeout itself (its compiler, its worker): wait for all of them, so that a case that
        # times out is reported as that case's timeout rather than as a hung batch
        wait = self.timeout if self.impl is None else self.timeout * len(cases) + 30
        if hasattr(self.impl, "batch_bound"):  # a suite: several runs per case
            wait = self.impl.batch_bound(len(cases))
        cut = self.deadline is not None and time.time() + wait > self.deadline
        if cut:  # the campaign ends first: wait until then (the child caps each case too)
            wait = max(self.deadline - time.time(), 0.0) + 2.0
        try:
            self.conn.send((cases, config, self.device, self.timeout, self.deadline))
            if self.conn.poll(wait):
                found, hits, self.completed = self.conn.recv()
                self.mutation_hits = max(self.mutation_hits, hits)
                return found
            if cut:  # the campaign's end, not a hang: no finding, no case
                self._kill()
                return []
            problem = f"no answer within {wait:.0f} s (hang)"
        except (EOFError, ConnectionError, OSError):
            problem = None
        self.proc.join(1)
        code = self.proc.exitcode
        self._kill()
        return problem or self._death(code)

    def _death(self, code: Optional[int]) -> str:
        """What ended the child, naming the side that runs there (a plug-in of this process
        crashes the child with it) and the signal."""
        if self.impl is None:
            side = "the OpenCL side (our lowering on the device)"
        elif hasattr(self.impl, "differential"):
            side = self.impl.name
        else:
            side = f"the implementation {self.impl[0]}"
            if self.impl[0].startswith("python:"):
                side += " (a plug-in running in the campaign's child process)"
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit status {code}"
        return f"{side} died: {how}"

    def close(self, wait: float = 5.0) -> None:
        """End the child: asked to stop, killed with its processes after `wait` seconds."""
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(wait)
            except (OSError, ConnectionError):
                pass
            if self.proc.is_alive():
                from fuzz.shutdown import kill_tree

                kill_tree(self.proc.pid)
                self.proc.join(1)
        self.proc = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _crash(cases: list[FuzzCase], config, device, problem: str, impl=None) -> Finding:
    if len(cases) == 1:
        case = cases[0]
    else:  # the whole batch was one build: keep it whole, run its first function
        program = combine(cases)
        case = FuzzCase(program, cases[0].func, cases[0].args, cases[0].groups)
    # a suite (campaign/suites.py) is no (spec, options) a reproduce line could name
    return Finding(case, "backend-crash", problem, config, device,
                   impl if isinstance(impl, tuple) else None)
