"""The schema: migrations create exactly what the models describe, idempotently."""

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from resize_sched.db import migration, models
from resize_sched.db.api import Database


def test_models_and_migrations_agree(synced_db: Database) -> None:
    with synced_db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        diff = compare_metadata(context, models.Base.metadata)
    assert diff == [], f"models and migrations differ; add a migration: {diff}"


def test_sync_empty_then_again(empty_url: str) -> None:
    with Database(empty_url) as db:
        assert db.version() is None
        db.sync()
        assert db.version() == migration.head_revision()
        db.sync()
        assert db.version() == migration.head_revision()
        # Usable straight away.
        assert db.flavor_list() == []


def test_downgrade_to_base_and_back(empty_url: str) -> None:
    with Database(empty_url) as db:
        db.sync()
        with db.engine.begin() as conn:
            command.downgrade(migration.alembic_config(conn), "base")
        assert db.version() is None
        db.sync()
        assert db.flavor_create("m1", 1, 512, 1).name == "m1"


def test_unknown_revision(empty_url: str) -> None:
    from alembic.util import CommandError

    with Database(empty_url) as db, pytest.raises(CommandError, match="9999"):
        db.sync("9999")
