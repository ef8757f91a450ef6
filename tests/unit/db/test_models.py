"""Model helpers: UTC timestamps, flavor snapshots, status constants."""

import datetime

import pytest
from sqlalchemy.dialects import mysql, postgresql, sqlite

from resize_sched import resources
from resize_sched.db import models

CET = datetime.timezone(datetime.timedelta(hours=1))
NOON_CET = datetime.datetime(2030, 1, 1, 12, 0, tzinfo=CET)
ELEVEN_UTC = datetime.datetime(2030, 1, 1, 11, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize("dialect", [sqlite.dialect(), mysql.dialect()])
def test_utc_datetime_stores_naive_utc_without_native_timezones(dialect) -> None:
    kind = models.UTCDateTime()
    assert kind.process_bind_param(NOON_CET, dialect) == ELEVEN_UTC.replace(tzinfo=None)
    # A naive value is taken as UTC.
    assert kind.process_bind_param(ELEVEN_UTC.replace(tzinfo=None), dialect) == (
        ELEVEN_UTC.replace(tzinfo=None)
    )
    loaded = kind.process_result_value(ELEVEN_UTC.replace(tzinfo=None), dialect)
    assert loaded == ELEVEN_UTC and loaded.tzinfo is datetime.UTC


def test_utc_datetime_on_postgresql_keeps_the_zone() -> None:
    kind = models.UTCDateTime()
    dialect = postgresql.dialect()
    assert kind.process_bind_param(NOON_CET, dialect) == ELEVEN_UTC
    assert kind.process_bind_param(NOON_CET, dialect).tzinfo is datetime.UTC
    assert kind.process_result_value(NOON_CET, dialect).tzinfo is datetime.UTC
    assert kind.process_bind_param(None, dialect) is None
    assert kind.process_result_value(None, dialect) is None


def test_mysql_timestamps_keep_microseconds() -> None:
    impl = models.UTCDateTime().load_dialect_impl(mysql.dialect())
    assert isinstance(impl, mysql.DATETIME) and impl.fsp == 6


def test_flavor_snapshot_feeds_flavor_request() -> None:
    flavor = models.Flavor(
        flavorid="abc",
        name="m1",
        vcpus=2,
        memory_mb=1024,
        root_gb=10,
        ephemeral_gb=0,
        swap=512,
        extra_specs={"resources:VCPU": "0", "resources:PCPU": "2"},
    )
    snapshot = flavor.to_snapshot()
    assert snapshot == {
        "id": "abc",
        "name": "m1",
        "vcpus": 2,
        "memory_mb": 1024,
        "root_gb": 10,
        "ephemeral_gb": 0,
        "swap": 512,
        "extra_specs": {"resources:VCPU": "0", "resources:PCPU": "2"},
    }
    assert resources.flavor_request(snapshot).resources == {
        "PCPU": 2,
        "MEMORY_MB": 1024,
        "DISK_GB": 11,
    }


def test_status_sets() -> None:
    assert set(models.IN_FLIGHT_STATUSES) | set(models.FINAL_STATUSES) == set(
        models.MIGRATION_STATUSES
    )
    assert not set(models.IN_FLIGHT_STATUSES) & set(models.FINAL_STATUSES)
    assert "VERIFY_RESIZE" in models.SERVER_STATUSES
    assert models.ERROR_KINDS == ("deferred", "infeasible", "failed")


def test_every_filtered_column_is_indexed() -> None:
    def indexed(table) -> set[str]:
        first = {idx.columns[0].name for idx in table.indexes}
        first |= {c.columns[0].name for c in table.constraints if c.columns}
        return first

    assert {"project_id", "host", "deleted_at"} <= indexed(models.Server.__table__)
    assert {"server_uuid", "status", "uuid"} <= indexed(models.Migration.__table__)
    assert {"migration_uuid", "state"} <= indexed(models.JournalEntry.__table__)
