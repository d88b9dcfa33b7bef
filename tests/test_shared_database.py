"""A campaign over several machines, on a real Redis server: two campaigns with different seeds
share one example database (`tlfuzz --database redis://...`), a finding of one replays in the
other, and a campaign whose server goes away goes on with its local database and says so once.

Needs Debian's `redis-server` and the `redis` package (the dev extra); without them the test
is skipped, except under CI=true, where it fails."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# a `python:` implementation with a planted bug: every result one too large
PLANTED = '''
import tlinterp


def off_by_one(source, args, func=None, groups=None):
    out = tlinterp.run(tlinterp.parse(source), args, func=func, groups=groups)
    return {k: (v + 1 if v.dtype.kind in "fiu" else v) for k, v in out.items()}
'''


def _needed() -> None:
    """Skip without a Redis server or client; under CI their absence is a failure."""
    missing = [what for what, here in (("redis-server", shutil.which("redis-server")),
                                       ("the redis package", _has_client())) if not here]
    if missing:
        why = f"needs {' and '.join(missing)} (apt-get install redis-server; the dev extra)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def _has_client() -> bool:
    try:
        import redis  # noqa: F401
    except ImportError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server on a free loopback port, nothing persisted, stopped afterwards."""
    _needed()
    from redis import Redis
    from redis.exceptions import RedisError

    data = tmp_path / "redis"
    data.mkdir()
    port = _free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(data)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = Redis.from_url(url, socket_timeout=2)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except RedisError:
                if proc.poll() is not None:
                    pytest.fail(f"redis-server exited with status {proc.returncode}")
                time.sleep(0.1)
        else:
            pytest.fail("redis-server did not answer within 10 s")
        yield url, proc, client
    finally:
        client.close()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(10)


def _campaign(tmp_path: Path, url: str, out: str, seed: int, seconds: int) -> list[str]:
    return [sys.executable, "-m", "fuzz.campaign.cli", "--impl", "python:planted:off_by_one",
            "--database", url, "--out", str(tmp_path / out), "--seed", str(seed),
            "--time", str(seconds), "-j", "1", "-q", "--rounds", "5", "--batch", "2",
            "--shrink-time", "2", "--triage-time", "0"]


def _env(tmp_path: Path) -> dict:
    (tmp_path / "planted.py").write_text(PLANTED)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
            "COLUMNS": "200"}


def _findings(directory: Path) -> set[str]:
    return {p.name for p in directory.glob("mismatch-*.tl")}


@pytest.mark.slow
def test_two_campaigns_share_a_redis_database_and_survive_its_loss(tmp_path, redis_server):
    url, server, client = redis_server
    env = _env(tmp_path)

    # machine 1 finds the planted bug; its example goes to the shared database
    a = subprocess.run(_campaign(tmp_path, url, "a", seed=1, seconds=8), env=env,
                       capture_output=True, text=True, timeout=300)
    assert a.returncode == 1, a.stderr
    assert _findings(tmp_path / "a")
    assert client.keys("hypothesis-example:*"), "nothing reached the shared database"

    # machine 2, another seed: what it shares with machine 1 is the replayed example (--time
    # counts the replay too, and the start of its worker processes: a few seconds)
    b = subprocess.run(_campaign(tmp_path, url, "b", seed=2, seconds=8), env=env,
                       capture_output=True, text=True, timeout=300)
    assert b.returncode == 1, b.stderr
    assert _findings(tmp_path / "b") & _findings(tmp_path / "a")

    # machine 3 loses the server mid-campaign: it goes on locally and says so once
    c = subprocess.Popen(_campaign(tmp_path, url, "c", seed=3, seconds=12), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not _findings(tmp_path / "c") and time.time() < deadline and c.poll() is None:
            time.sleep(0.2)
        assert _findings(tmp_path / "c"), "the campaign found nothing before the server went"
        server.kill()
        server.wait(10)
        out, err = c.communicate(timeout=300)
    finally:
        if c.poll() is None:
            c.kill()
            c.communicate()
    assert c.returncode == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.count("stopped answering") == 1, err
    assert f"the shared example database {url} stopped answering" in err
    assert "the campaign goes on with the local one" in err
    assert any((tmp_path / "c" / "hypothesis-db").rglob("*")), "nothing saved locally"


def test_a_server_that_does_not_answer_is_a_usage_error(tmp_path, capsys):
    """Up front, before anything is created: a URL with no server behind it is exit 2."""
    pytest.importorskip("redis")
    from fuzz.campaign.cli import main

    url = f"redis://127.0.0.1:{_free_port()}"
    assert main(["--database", url, "--out", str(tmp_path / "out"), "--time", "1"]) == 2
    err = capsys.readouterr().err
    assert f"--database {url}: cannot reach {url}" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
