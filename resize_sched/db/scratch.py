"""Scratch databases: created under a unique name, dropped when done.

For the functional tests and the benchmark (and for trying a schema change
by hand); the services never use it. On MariaDB/MySQL and PostgreSQL,
``<prefix><hex>`` is created on the server the URL points at (the database
named in the URL is only used to connect); a ``sqlite`` URL gets a file of
that name in a directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import sqlalchemy as sa

from resize_sched.db import engines

SERVER_BACKENDS = ("mysql", "mariadb", "postgresql")


class ScratchDatabase:
    """A new, uniquely named database.

    :param server_url: SQLAlchemy URL of the server (or any ``sqlite`` URL).
    :param prefix: the start of the database's name.
    :param directory: where a SQLite file goes (a temporary one when None).
    :param sqlite: allow ``sqlite`` URLs.
    :raises ValueError: a backend it cannot make databases on.
    """

    def __init__(
        self,
        server_url: str,
        *,
        prefix: str = "rs_scratch_",
        directory: str | None = None,
        sqlite: bool = True,
    ) -> None:
        self.server_url = engines.normalize_url(server_url)
        self.backend = self.server_url.get_backend_name()
        allowed = (*SERVER_BACKENDS, "sqlite") if sqlite else SERVER_BACKENDS
        if self.backend not in allowed:
            raise ValueError(f"cannot make a scratch database on {self.backend}")
        self.name = f"{prefix}{uuid.uuid4().hex[:12]}"
        self._directory = directory
        self._own_dir: str | None = None
        self._created = False
        self.url = ""
        if self.backend != "sqlite":
            url = self.server_url.set(database=self.name)
            self.url = url.render_as_string(hide_password=False)

    def _admin_engine(self) -> sa.Engine:
        return sa.create_engine(
            self.server_url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
        )

    def _quoted(self) -> str:
        return f'"{self.name}"' if self.backend == "postgresql" else f"`{self.name}`"

    def create(self) -> str:
        """Create the database.

        :returns: its URL (password included).
        :raises sqlalchemy.exc.OperationalError: the server cannot be reached.
        """
        if self.backend == "sqlite":
            if self._directory is None:
                self._own_dir = self._directory = tempfile.mkdtemp(prefix=self.name)
            self.url = f"sqlite:///{os.path.join(self._directory, self.name)}.sqlite"
            self._created = True
            return self.url
        charset = "" if self.backend == "postgresql" else " CHARACTER SET utf8mb4"
        self._execute(f"CREATE DATABASE {self._quoted()}{charset}")
        self._created = True
        return self.url

    def drop(self) -> None:
        """Drop the database (or remove the file); safe to call twice."""
        if not self._created:
            return
        self._created = False
        if self.backend == "sqlite":
            if self._own_dir:
                shutil.rmtree(self._own_dir, ignore_errors=True)
                return
            for suffix in ("", "-wal", "-shm", "-journal"):
                path = os.path.join(self._directory or "", f"{self.name}.sqlite{suffix}")
                if os.path.exists(path):
                    os.unlink(path)
            return
        # NOTE: FORCE (PostgreSQL 13+) ends the sessions still attached.
        force = " WITH (FORCE)" if self.backend == "postgresql" else ""
        self._execute(f"DROP DATABASE IF EXISTS {self._quoted()}{force}")

    def _execute(self, statement: str) -> None:
        engine = self._admin_engine()
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql(statement)
        finally:
            engine.dispose()

    def __enter__(self) -> ScratchDatabase:
        self.create()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.drop()
