"""Instance actions and events in the data API (:mod:`resize_sched.db.action_api`)
on every backend: recording is idempotent, a failure marks the action, and a
step that was not due leaves nothing behind."""

import uuid

import pytest

from resize_sched import exception
from resize_sched.db import action_api
from resize_sched.db.api import Database

RESIZE = (action_api.RESIZE,)


def _rows(db: Database, server: str, request_id: str) -> list[tuple[str, str | None, str | None]]:
    action = db.action_get_by_request_id(server, request_id)
    assert action is not None
    return [(e.event, e.result, e.host) for e in db.action_events(action.id)]


def test_action_start_is_idempotent_per_request(db: Database) -> None:
    server = str(uuid.uuid4())
    first = db.action_start(server, "req-1", "resize", user_id="u", project_id="p")
    again = db.action_start(server, "req-1", "resize", user_id="u", project_id="p")
    assert again.id == first.id
    db.action_start(server, "req-2", "confirmResize", user_id="u", project_id="p")
    assert [a.request_id for a in db.action_list(server)] == ["req-2", "req-1"]
    assert db.action_list(str(uuid.uuid4())) == []


def test_events_are_recorded_once_and_errors_mark_the_action(db: Database) -> None:
    server = str(uuid.uuid4())
    db.action_start(server, "req-1", "resize", user_id="u", project_id="p")
    assert db.action_event_start(server, "compute_prep_resize", RESIZE, host="h2") is not None
    # A duplicate start reuses the open event.
    assert db.action_event_start(server, "compute_prep_resize", RESIZE, host="h2") is None
    db.action_event_failed(server, "compute_prep_resize", RESIZE, "disk full", host="h2")
    # A duplicate report of the failure, or a late success, changes nothing.
    db.action_event_failed(server, "compute_prep_resize", RESIZE, "disk full", host="h2")
    assert _rows(db, server, "req-1") == [("compute_prep_resize", "Error", "h2")]
    action = db.action_get_by_request_id(server, "req-1")
    assert action is not None and action.message == "Error"
    (event,) = db.action_events(action.id)
    assert (event.details, event.traceback) == ("disk full", "disk full")
    # The next attempt, on another host, is an event of its own.
    db.action_event_start(server, "compute_prep_resize", RESIZE, host="h3")
    db.action_event_finish(server, "compute_prep_resize", RESIZE, host="h3")
    assert _rows(db, server, "req-1")[1:] == [("compute_prep_resize", "Success", "h3")]


def test_the_context_manager_records_success_error_and_not_due(db: Database) -> None:
    server = str(uuid.uuid4())
    db.action_start(server, "req-1", "resize", user_id="u", project_id="p")
    with db.action_event(server, "conductor_migrate_server", RESIZE, host="c1"):
        pass
    with pytest.raises(exception.StepNotDue):
        with db.action_event(server, "conductor_migrate_server", RESIZE, host="c1"):
            raise exception.StepNotDue(migration_id="m", step="schedule", reason="a duplicate")
    assert _rows(db, server, "req-1") == [("conductor_migrate_server", "Success", "c1")]
    with pytest.raises(exception.NoValidHost):
        with db.action_event(server, "conductor_migrate_server", RESIZE, host="c1"):
            raise exception.NoValidHost(kind="deferred", reason="no room on h1")
    action = db.action_get_by_request_id(server, "req-1")
    assert action is not None and action.message == "Error"
    last = db.action_events(action.id)[-1]
    assert (last.result, last.traceback) == (
        "Error",
        "No valid host was found (deferred): no room on h1",
    )
    # A step that says its failure in words records them instead.
    with pytest.raises(exception.NoValidHost):
        with db.action_event(server, "conductor_migrate_server", RESIZE, said=[]):
            raise exception.NoValidHost(kind="deferred", reason="no room")
    said = ["No room on host h1 now. Retry later."]
    with pytest.raises(exception.NoValidHost):
        with db.action_event(server, "conductor_migrate_server", RESIZE, host="c2", said=said):
            raise exception.NoValidHost(kind="deferred", reason="no room")
    last = db.action_events(action.id)[-1]
    assert (last.host, last.traceback) == ("c2", said[0])


def test_an_event_without_its_action_is_not_recorded(db: Database) -> None:
    server = str(uuid.uuid4())
    assert db.action_event_start(server, "compute_prep_resize", RESIZE) is None
    db.action_event_finish(server, "compute_prep_resize", RESIZE)
    with db.action_event(server, "conductor_migrate_server", RESIZE):
        pass
    assert db.action_list(server) == []


def test_an_event_opens_in_the_request_s_action_else_the_newest_and_touches_it(
    db: Database,
) -> None:
    server = str(uuid.uuid4())
    first = db.action_start(server, "req-1", "resize", user_id="u", project_id="p")
    second = db.action_start(server, "req-2", "resize", user_id="u", project_id="p")
    db.action_start(server, "req-3", "confirmResize", user_id="u", project_id="p")
    assert db.action_event_start(server, "ev", RESIZE, host="h1", request_id="req-1")
    assert _rows(db, server, "req-1") == [("ev", None, "h1")]
    touched = db.action_get_by_request_id(server, "req-1")
    assert touched is not None and touched.updated_at is not None
    assert first.updated_at is None
    # Without a request id: the newest resize; an open event with no host
    # is reused by any host.
    assert db.action_event_start(server, "ev", RESIZE) is not None
    assert _rows(db, server, "req-2") == [("ev", None, None)]
    assert db.action_event_start(server, "ev", RESIZE, host="h2") is None
    assert db.action_event_start(server, "ev", RESIZE, request_id="req-9") is None
    assert _rows(db, server, "req-2") == [("ev", None, None)]
    # An open event on another host is not this one.
    assert db.action_event_start(server, "ev", RESIZE, host="h2", request_id="req-1")
    assert _rows(db, server, "req-1") == [("ev", None, "h1"), ("ev", None, "h2")]
    assert second.id != first.id
