"""The example database a campaign shares with other machines, and what happens when it is lost.

`example_database(spec, local)` gives Hypothesis a directory database for a path, and for a
`redis://` URL a `SharedDatabase`: every example is written to the local directory as well as
to Redis, and read from Redis while it answers. The first time Redis does not answer (the
server stopped, the network went away), this process stops asking it and goes on with the
local directory alone; `lost()` then says why, so that the campaign can say so once. A search
never fails because a shared server went away.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from typing import Optional

from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    InMemoryExampleDatabase,
)

__all__ = ["SharedDatabase", "example_database", "lost", "is_url", "check_reachable"]

# why the shared database of this process stopped answering (None: it has not)
_LOST: Optional[str] = None
TIMEOUT = 5.0  # seconds for a Redis connect or reply before it counts as gone


def is_url(spec: str) -> bool:
    return spec.startswith(("redis://", "rediss://", "unix://"))


def lost() -> Optional[str]:
    """Why this process's shared database stopped answering, or None."""
    return _LOST


def _client(url: str):
    from redis import Redis

    return Redis.from_url(url, socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT)


def check_reachable(url: str) -> Optional[str]:
    """Why the Redis server at `url` cannot be used now (a bad URL, no answer), or None."""
    try:
        from redis.exceptions import RedisError
    except ImportError:
        return "needs the 'redis' package (pip install redis)"
    try:
        client = _client(url)
    except (RedisError, OSError, ValueError) as e:  # a bad URL
        return f"cannot reach {url}: {_why(e)}"
    try:
        return _round_trip(client, url)
    except (RedisError, OSError) as e:
        return f"cannot reach {url}: {_why(e)}"
    except Exception as e:  # noqa: BLE001 - redis-py's parser on a server that is no Redis
        # (a bytes reply where a map belongs: AttributeError; nested arrays: RecursionError)
        return f"{url} does not speak the Redis protocol: {_why(e)}"
    finally:
        client.close()


def _round_trip(client, url: str) -> Optional[str]:
    """Why the server behind `client` is no usable Redis, or None: a value written under a
    fresh key must read back, so a server that answers anything to everything is refused."""
    key = f"tlfuzz-probe-{os.getpid()}-{secrets.token_hex(8)}"
    value = secrets.token_bytes(16)
    if client.set(key, value, ex=60) is not True:
        return f"{url} does not answer as Redis does (SET was not acknowledged)"
    got = client.get(key)
    client.delete(key)
    if got != value:
        return f"{url} does not answer as Redis does (a value written did not read back)"
    return None


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


class SharedDatabase(ExampleDatabase):
    """Redis while it answers, the local directory always (see the module docstring)."""

    def __init__(self, url: str, local_dir: Optional[str]):
        super().__init__()
        from hypothesis.extra.redis import RedisExampleDatabase

        self.url = url
        self.local = (DirectoryBasedExampleDatabase(local_dir) if local_dir
                      else InMemoryExampleDatabase())
        self.remote = None if _LOST else RedisExampleDatabase(_client(url))

    def __repr__(self) -> str:
        return f"SharedDatabase({self.url!r}, {self.local!r})"

    def _remote(self, method: str, *args):
        """`method` of the Redis database; None once it has not answered."""
        global _LOST
        from redis.exceptions import RedisError

        if self.remote is None:
            return None
        try:
            result = getattr(self.remote, method)(*args)
            return list(result) if method == "fetch" else True
        except (RedisError, OSError) as e:
            why = _why(e)
        except Exception as e:  # noqa: BLE001 - redis-py's parser on a server gone wrong
            why = f"it answered outside the Redis protocol ({_why(e)})"
        _LOST = _LOST or why
        self.remote = None
        return None

    def fetch(self, key: bytes) -> Iterable[bytes]:
        remote = self._remote("fetch", key)
        seen = set(remote or ())
        yield from remote or ()
        yield from (v for v in self.local.fetch(key) if v not in seen)

    def save(self, key: bytes, value: bytes) -> None:
        self.local.save(key, value)
        self._remote("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.local.delete(key, value)
        self._remote("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.local.move(src, dest, value)
        self._remote("move", src, dest, value)

    # change listeners (Hypothesis' live dashboards) are not offered: no pub/sub on a server
    # that may go away
    def _start_listening(self) -> None:
        pass

    def _stop_listening(self) -> None:
        pass


def example_database(spec: str, local_dir: Optional[str] = None) -> ExampleDatabase:
    """A directory (shared filesystems work: several machines may use one), or a Redis URL
    shared with other machines, mirrored in `local_dir` (None: in memory)."""
    if is_url(spec):
        return SharedDatabase(spec, local_dir)
    return DirectoryBasedExampleDatabase(spec)
