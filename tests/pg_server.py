"""A PostgreSQL server for the tests: the one named by ``FEEDMD_TEST_POSTGRES``, else a
throwaway cluster started here in a temporary folder and stopped at the end of the session.

Each test gets its own database (``fresh_database``): a copy of a template, empty or
already migrated, made by ``CREATE DATABASE ... TEMPLATE`` (a file copy on the server, far
cheaper than migrating each time), dropped when the test ends.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

ENV = "FEEDMD_TEST_POSTGRES"
INSTALL_HINT = (
    "the PostgreSQL tests need a server: install PostgreSQL (Debian / Ubuntu: "
    "apt-get install postgresql; the tests then start a throwaway cluster themselves) or set "
    f"{ENV}=postgresql://USER@HOST:PORT/DB to a server where USER may create databases"
)


class PostgresUnavailable(RuntimeError):
    """No server is named and none can be started here."""


def _bin_dir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise PostgresUnavailable(f"no initdb found; {INSTALL_HINT}")


def _as_postgres(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a server command, as the postgres user when this process is root."""
    if os.geteuid() == 0:  # the server refuses to run as root
        command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(map(_quote, args))]
    else:
        command = args
    # from /: the postgres user may not enter the test's working folder
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A throwaway PostgreSQL cluster in a temporary folder, run as the ``postgres`` user
    when this process is root (the server refuses to run as root); ``stop`` removes it."""

    def __init__(self) -> None:
        bin_dir = _bin_dir()
        # under /tmp, not pytest's 0700 folder: the server runs as the postgres user
        self._folder = Path(tempfile.mkdtemp(prefix="feedmd-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self._folder, "postgres")
        self._data = self._folder / "data"
        self._pg_ctl = bin_dir / "pg_ctl"
        done = _as_postgres(
            [str(bin_dir / "initdb"), "-D", str(self._data), "-A", "trust", "-U", "postgres"]
        )
        if done.returncode:
            self._remove()
            raise PostgresUnavailable(f"initdb failed: {done.stderr.strip()}; {INSTALL_HINT}")
        port = _free_port()
        # fsync off: a throwaway test cluster, lost on a crash by design
        options = f"-p {port} -k {self._folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = self._folder / "server.log"
        done = _as_postgres(
            [str(self._pg_ctl), "-D", str(self._data), "-o", options, "-l", str(log), "-w", "start"]
        )
        if done.returncode:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            self._remove()
            raise PostgresUnavailable(f"pg_ctl start failed: {done.stderr.strip()}\n{tail}")
        self.admin_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        _as_postgres([str(self._pg_ctl), "-D", str(self._data), "-m", "fast", "stop"])
        self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)


class PostgresServer:
    """A running server, the admin URL of its ``postgres`` database, and fresh databases.

    The server is the one named by ``FEEDMD_TEST_POSTGRES`` (set by hand, or by the
    pytest-xdist controller for all its workers, ``conftest.py``), else a ``Cluster`` of
    this process's own."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._copies: dict[str, str] = {}  # SQLite store -> the database holding its copy
        # per process: parallel sessions (xdist workers) on one named server do not collide
        self._empty = f"feedmd_tpl_{os.getpid()}_empty"
        self._migrated = f"feedmd_tpl_{os.getpid()}_migrated"
        named = os.environ.get(ENV, "").strip()
        self._cluster = None if named else Cluster()
        self.admin_url = named or self._cluster.admin_url  # type: ignore[union-attr]
        self._prepare_templates()

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(self.admin_url, autocommit=True)

    def _prepare_templates(self) -> None:
        from feedmd.store import open_store

        with self._admin() as conn:
            for name in (self._empty, self._migrated):
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {name} TEMPLATE template0")
        open_store(self.url(self._migrated)).close()

    def url(self, name: str) -> str:
        """The URL of database ``name`` on this server."""
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{name}"

    def fresh_database(self, migrated: bool = False) -> str:
        """Create a new database (empty, or with every migration applied); its URL."""
        name = f"feedmd_test_{os.getpid()}_{next(self._counter)}"
        with self._admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(
                f"CREATE DATABASE {name} TEMPLATE {self._migrated if migrated else self._empty}"
            )
        return self.url(name)

    def clone_of_sqlite(self, source: str | Path) -> str:
        """A new database holding the rows of the SQLite store ``source``: copied once per
        session (``feedmd store copy``), then cloned by CREATE DATABASE ... TEMPLATE."""
        from feedmd.store.copy import copy_store

        key = str(source)
        if key not in self._copies:
            url = self.fresh_database()
            copy_store(source, url)
            self._copies[key] = url.rpartition("/")[2]
        name = f"feedmd_test_{os.getpid()}_{next(self._counter)}"
        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {self._copies[key]}")
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop a database made by ``fresh_database`` (connections still open are ended)."""
        name = url.rpartition("/")[2]
        with self._admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the cluster this object started; on a named server, drop the databases this
        process made there (its templates and its copies of SQLite stores)."""
        if self._cluster is not None:
            self._cluster.stop()
            return
        for name in (self._empty, self._migrated, *self._copies.values()):
            self.drop(self.url(name))


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"
