"""Hostile inputs that used to end in an internal error (exit 3, a traceback): v0.4 nesting as
deep as the parser accepts through every later pass, absurd coopmatrix shapes and strides,
Redis servers that speak the protocol wrongly, a profile of the other language. Each case ends
with its documented exit status and a clear message."""

from __future__ import annotations

import json
import re
import socketserver
import sys
import threading
import time

import numpy as np
import pytest

import tlinterp
from fuzz.campaign import sharedb
from fuzz.campaign.cli import main as tlfuzz
from fuzz.conform.cli import main as tlconform
from tlinterp.checker import v04 as checker_v04
from tlinterp.cli import tlrun as cli
from tlinterp.front import migrate
from tlinterp.lang.v03.parser import MAX_NESTING

SECONDS = 60  # generous for a loaded 2-core machine


def run_tool(main, argv: list, capsys) -> tuple[int, str]:
    """A tool's `main` in-process: (exit status, stdout + stderr), with no traceback, no
    internal error and bounded time."""
    start = time.perf_counter()
    rc = main([str(a) for a in argv])
    seconds = time.perf_counter() - start
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc in (0, 1, 2, 130), text[-2000:]
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    return rc, text


# --- v0.4 nesting as deep as the parser accepts -------------------------------------------------


def nested_v04(levels: int) -> str:
    return "\n".join(["func @f(%A: memref<i32x4>) {", "    %c = constant true : bool"]
                     + ["if %c {"] * levels
                     + ["    %z = constant 7 : i32", "    %i = constant 0 : index",
                        "    store %z, %A[%i]"]
                     + ["}"] * levels + ["}"]) + "\n"


def nested_v03(levels: int) -> str:
    return "\n".join(["func @f(%x: memref<f32x4>) {", "  %c = cmp.lt 0, 1 : index"]
                     + ["if %c {"] * levels + ["store 1.0, %x[0] : memref<f32x4>"]
                     + ["}"] * levels + ["}"]) + "\n"


DEEPEST = MAX_NESTING - 1  # the function body is the first level


@pytest.mark.parametrize("mode", ["check", "emit-v04", "emit-v03", "run"])
def test_deepest_v04_nesting_passes_every_tlrun_mode(mode, tmp_path, capsys):
    k = tmp_path / "deep.tl"
    k.write_text(nested_v04(DEEPEST))
    np.savez(tmp_path / "a.npz", A=np.zeros(4, np.int32))
    extra = {"check": ["--check"], "emit-v04": ["--emit", "ir"],
             "emit-v03": ["--emit", "ir", "--lang", "v0.3"],
             "run": ["--args", tmp_path / "a.npz", "--out", tmp_path / "o.npz"]}[mode]
    rc, text = run_tool(cli.main, [k, *extra], capsys)
    assert rc == 0, text[-2000:]
    if mode == "run":
        assert np.load(tmp_path / "o.npz")["A"].tolist() == [7, 0, 0, 0]
    if mode.startswith("emit"):
        lang = mode[-3:].replace("v0", "v0.")
        emitted = text.split("@f:")[0]
        assert tlinterp.parse(emitted, lang=lang).lang == lang
        assert emitted.count("if ") == DEEPEST


def test_deepest_v03_nesting_migrates_to_v04(tmp_path, capsys):
    k = tmp_path / "deep.tl"
    k.write_text(nested_v03(DEEPEST))
    rc, text = run_tool(cli.main, [k, "--emit", "ir", "--lang", "v0.4"], capsys)
    assert rc == 0
    assert tlinterp.parse(text, lang="v0.4").lang == "v0.4" and text.count("if ") == DEEPEST


def test_deep_passes_nest_inside_each_other():
    """The migration to v0.4 runs the v0.4 checker on its result: a deep pass inside a deep
    pass (one thread, one lock) neither deadlocks nor runs out of stack."""
    v04 = migrate.to_v04(tlinterp.parse(nested_v03(DEEPEST)))
    assert checker_v04.check(v04) is v04


IDENTITY = "import sys\nsys.stdout.write(open(sys.argv[1]).read())\n"


@pytest.mark.parametrize("impl", ["interp", "ir"])
def test_a_deep_corpus_case_passes_tlconform(impl, tmp_path, capsys):
    """A deep v0.4 case, run by the interpreter and through an `ir:` pass that answers the
    same deep program: both pass (they crashed with a RecursionError and a 2,000-line
    traceback in the report)."""
    case = tmp_path / "corpus" / "valid" / "deep"
    case.mkdir(parents=True)
    for kind in ("invalid", "undefined"):
        (tmp_path / "corpus" / kind).mkdir()
    (case / "deep.tl").write_text(nested_v04(DEEPEST))
    np.savez(case / "deep.args.npz", A=np.zeros(4, np.int32))
    np.savez(case / "deep.expected.npz", A=np.array([7, 0, 0, 0], np.int32))
    (case / "deep.json").write_text(json.dumps({"func": None, "groups": None,
                                                "lang": "v0.4", "tags": {}}))
    script = tmp_path / "identity.py"
    script.write_text(IDENTITY)
    spec = "interp" if impl == "interp" else f"ir:{sys.executable} {script} {{tl}}"
    rc, text = run_tool(tlconform, ["--corpus", tmp_path / "corpus", "--impl", spec], capsys)
    assert rc == 0 and "1 passed, 0 failed" in text, text[-3000:]


# --- absurd sizes: coopmatrix shapes, strides ---------------------------------------------------


def coop_kernel(rows: int, cols: int) -> str:
    return (f"func @k(%C: memref<f32x32x32>) attributes{{subgroup_size=16}} {{\n"
            f"    parallel {{\n"
            f"        %c0 = constant 0 : index\n"
            f"        %z = constant 0.0 : coopmatrix<f32x{rows}x{cols}, matrix_acc>\n"
            f"        cooperative_matrix_store %z, %C[%c0, %c0]\n"
            f"    }}\n}}\n")


@pytest.mark.parametrize("shape", [(2**20, 2**20), (2**62, 32), (16, 2**62), (2**62, 2**62)],
                         ids=["2^20x2^20", "2^62-rows", "2^62-cols", "2^62x2^62"])
def test_huge_coopmatrix_shapes_are_out_of_memory_at_the_instruction(shape, tmp_path, capsys):
    """2^62 made NumPy raise ValueError ("iterator is too large"): the same message as 2^20."""
    k = tmp_path / "k.tl"
    k.write_text(coop_kernel(*shape))
    np.savez(tmp_path / "c.npz", C=np.zeros((32, 32), np.float32))
    rc, text = run_tool(cli.main, [k, "--args", tmp_path / "c.npz"], capsys)
    assert rc == 1
    assert "k.tl:4.9-" in text and ": out of memory at this constant, running 16 lane(s)" in text


MEMREF2 = ("func @m(%A: memref<f32x?x?>) {\n  %g = group_id\n"
           "  store 1.0, %A[0, 0] : memref<f32x?x?>\n}\n")


@pytest.mark.parametrize("shape", [(3, 1), (1, 1), (0, 4)])
@pytest.mark.parametrize("stride", [2**62, 2**63 - 1])
def test_huge_strides_of_modes_that_span_nothing_are_refused(shape, stride, tmp_path, capsys):
    """A stride along a mode of size 1 (or of an empty view) adds nothing to the extent, so
    the memory check let it through and the byte stride overflowed (OverflowError)."""
    a = np.zeros(shape, np.float32)
    words = f"argument 'A': stride 1 ({stride} elements of 4 bytes) is beyond 2^63 - 1 bytes"
    with pytest.raises(tlinterp.ArgumentError, match=re.escape(words)):
        tlinterp.run(MEMREF2, {"A": a, "A.strides": [1, stride]})
    (tmp_path / "m.tl").write_text(MEMREF2)
    np.savez(tmp_path / "a.npz", A=a, **{"A.strides": np.array([1, stride])})
    rc, text = run_tool(cli.main, [tmp_path / "m.tl", "--args", tmp_path / "a.npz"], capsys)
    assert rc == 2 and words in text


# --- Redis servers that speak the protocol wrongly ----------------------------------------------

GARBAGE_REPLIES = {
    "pong-to-everything": b"+PONG\r\n",
    "ok-to-everything": b"+OK\r\n",
    "100000-deep-array": b"*1\r\n" * 100_000 + b":1\r\n",
    # a well-formed handshake, every write acknowledged, nothing ever stored
    "forgets-everything": lambda request: (b"%1\r\n+proto\r\n:3\r\n" if b"HELLO" in request
                                           else b"_\r\n" if b"GET" in request else b"+OK\r\n"),
}


@pytest.fixture
def fake_redis():
    """A server on a free loopback port answering every request with fixed bytes (or what
    a function of the request gives); stopped (its socket and connections closed) after the
    test."""
    servers = []

    def start(reply) -> str:
        answer = reply if callable(reply) else lambda request: reply

        class Answer(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(10)  # bounded: a silent client ends the thread
                try:
                    while request := self.request.recv(65536):
                        self.request.sendall(answer(request))
                except OSError:
                    pass

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Answer)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"redis://127.0.0.1:{server.server_address[1]}/0"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("reply", GARBAGE_REPLIES, ids=list(GARBAGE_REPLIES))
def test_tlfuzz_refuses_a_server_that_is_no_redis(reply, fake_redis, tmp_path, capsys):
    pytest.importorskip("redis")
    url = fake_redis(GARBAGE_REPLIES[reply])
    rc, text = run_tool(tlfuzz, ["--database", url, "--out", tmp_path / "out", "--time", "1"],
                        capsys)
    assert rc == 2
    assert f"tlfuzz: --database {url}: {url} does not" in text, text
    if reply == "forgets-everything":
        assert "a value written did not read back" in text
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("reply", GARBAGE_REPLIES, ids=list(GARBAGE_REPLIES))
def test_a_shared_database_gone_wrong_leaves_the_local_one(reply, fake_redis, monkeypatch):
    """A server that passed the check and then answers garbage: the campaign goes on with
    the local database, as when the server goes away."""
    pytest.importorskip("redis")
    monkeypatch.setattr(sharedb, "_LOST", None)
    db = sharedb.SharedDatabase(fake_redis(GARBAGE_REPLIES[reply]), None)
    db.save(b"key", b"value")
    assert list(db.fetch(b"key")) == [b"value"]
    assert sharedb.lost() is not None and db.remote is None


# --- a profile of the other language ------------------------------------------------------------


@pytest.mark.parametrize("profile,lang", [("tinytc-0.3.1", "v0.4"),
                                          ("tinytc-0.3.1-new-bugs", "v0.4"),
                                          ("tinytc-0.4.0", "v0.3")])
def test_tlfuzz_refuses_a_profile_of_the_other_language(profile, lang, tmp_path, capsys):
    """Before the campaign (it ended in "internal error in a job"): a profile's language must
    match --lang."""
    rc, text = run_tool(tlfuzz, ["--lang", lang, "--profile", profile, "--impl", "interp",
                                 "--time", "5", "--out", tmp_path / "out"], capsys)
    assert rc == 2
    assert f"--profile {profile} is a v0.{7 - int(lang[-1])} profile, not {lang}" in text
    assert not (tmp_path / "out").exists()
