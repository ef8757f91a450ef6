"""``resize-sched-status upgrade check`` against a real Placement and database.

The command runs in-process through :func:`resize_sched.cmd.status.main` (the
in-process Placement fixture is reachable only from this process), with a
config file pointing ``[database]`` at a SQLite database and ``[placement]``
at the embedded Placement. Most tests ask for ``--json`` and read each
check's result from it; one reads the table an operator sees.
"""

import datetime
import json
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from oslo_limit import fixture as limit_fixture

from resize_sched.cmd import status
from resize_sched.db import migration, models
from resize_sched.db.api import Database
from resize_sched.placement.client import ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from resize_sched.quota import unified_limits
from tests.functional.fixtures.database import fresh_sqlite_database, sqlite_url
from tests.functional.fixtures.placement import PlacementInProcess

SUCCESS, WARNING, FAILURE = 0, 1, 2
CHECKS = (
    "Database schema",
    "Placement API",
    "Compute host providers",
    "Stuck migrations",
    "Claim strategy",
    "Flavor extra specs",
    "Pinned CPUs",
    "Policy file",
    "Quota limits",
)
FLAVOR = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


@dataclass
class Deployment:
    """A database and a Placement with one host, and a config file naming them."""

    db: Database
    placement: PlacementInProcess
    host_rp: str
    config: Path
    capsys: pytest.CaptureFixture[str]

    def write_config(self, *, endpoint: str | None = None, extra: str = "") -> None:
        """(Re)write the config file; ``extra`` is appended verbatim."""
        url = self.db.engine.url.render_as_string(hide_password=False)
        self.config.write_text(
            f"[database]\nconnection = {url}\n\n"
            "[placement]\nauth_type = admin_token\n"
            f"endpoint = {endpoint or self.placement.endpoint}\n"
            "token = admin\nconnect_retries = 0\nconnect_retry_delay = 0.001\n\n" + extra
        )

    def run(self, *args: str) -> tuple[int, str, str]:
        """Run the command; return (exit code, stdout, stderr)."""
        self.capsys.readouterr()
        # NOTE: the command sets up logging to the captured stderr; give the
        # root logger its handlers back so later tests do not log to a closed
        # stream.
        handlers, level = logging.root.handlers[:], logging.root.level
        try:
            code = status.main(list(args))
        finally:
            logging.root.handlers[:], logging.root.level = handlers, level
        out, err = self.capsys.readouterr()
        return code, out, err

    def check(self) -> tuple[int, dict[str, tuple[int, str]]]:
        """Run ``upgrade check --json``: (exit code, check name -> (code, details))."""
        code, out, err = self.run("--config-file", str(self.config), "upgrade", "check", "--json")
        assert out, err
        results = json.loads(out)
        return code, {c["check"]: (c["result"], c["details"]) for c in results["checks"]}

    def server(self, host: str = "host1", rp_uuid: str | None = None) -> Any:
        """An ACTIVE server of ours on ``host`` (no allocation: not needed here)."""
        flavor = self.db.flavor_create(f"f-{len(self.db.server_list())}", 1, 512, 1)
        return self.db.server_create(
            name="vm",
            project_id="p",
            user_id="u",
            flavor=flavor,
            status=models.STATUS_ACTIVE,
            vm_state="active",
            task_state=None,
            host=host,
            rp_uuid=rp_uuid or self.host_rp,
        )


@pytest.fixture
def deployment(
    placement: PlacementInProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Deployment]:
    db = fresh_sqlite_database(tmp_path / "db")
    rp = placement.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=40)
    dep = Deployment(db, placement, rp, tmp_path / "status.conf", capsys)
    dep.write_config()
    yield dep
    db.dispose()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _age(db: Database, uuid: str, seconds: int) -> None:
    """Make a migration look unchanged for ``seconds``."""
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    with db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Migration)
            .where(models.Migration.uuid == uuid)
            .values(created_at=then, updated_at=then)
        )


def _migration(db: Database, server: Any, rp: str, status_: str) -> Any:
    return db.migration_create(
        server_uuid=server.uuid,
        source_host=server.host,
        source_node=None,
        source_rp_uuid=rp,
        old_flavor=dict(server.flavor),
        new_flavor=dict(server.flavor),
        old_resources=FLAVOR,
        new_resources=FLAVOR,
        claim_strategy="max_flavor",
        project_id="p",
        user_id="u",
        status=status_,
    )


# -- healthy -------------------------------------------------------------------------


def test_healthy_deployment_passes_every_check(deployment: Deployment) -> None:
    deployment.server()
    # A host of ours without servers counts as known too.
    deployment.placement.add_host("host2", vcpus=4, memory_mb=4096, disk_gb=40)
    code, results = deployment.check()
    assert code == SUCCESS, results
    assert tuple(results) == CHECKS
    assert {name: r[0] for name, r in results.items()} == dict.fromkeys(CHECKS, SUCCESS)
    assert migration.head_revision() in results["Database schema"][1]
    assert "needed: 1.35" in results["Placement API"][1]
    assert results["Compute host providers"][1].startswith("2 compute host(s), 1 with servers")
    assert "'max_flavor' is installed" in results["Claim strategy"][1]


def test_table_output_names_each_check_and_result(deployment: Deployment) -> None:
    code, out, _err = deployment.run("--config-file", str(deployment.config), "upgrade", "check")
    assert code == SUCCESS
    assert "Upgrade Check Results" in out
    for name in CHECKS:
        assert f"Check: {name}" in out
    assert out.count("Result: Success") == len(CHECKS)


def test_no_host_registered_yet_is_fine(deployment: Deployment, tmp_path: Path) -> None:
    # A Placement that has never seen our owner trait: no host is no problem.
    with PlacementInProcess(str(tmp_path / "empty-placement")) as empty:
        deployment.write_config(endpoint=empty.endpoint)
        code, results = deployment.check()
    assert code == SUCCESS, results
    assert results["Compute host providers"][1].startswith("0 compute host(s)")


# -- failures ----------------------------------------------------------------------------


def test_schema_behind_fails_naming_both_revisions(deployment: Deployment, tmp_path: Path) -> None:
    old = Database(sqlite_url(tmp_path / "old-db"))
    old.sync("0001")
    deployment.db.dispose()
    deployment.db = old
    deployment.write_config()
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Database schema"]
    assert result == FAILURE
    assert "at revision 0001" in details
    assert f"needs revision {migration.head_revision()}" in details
    assert "resize-sched-manage db sync" in details
    # The checks that read the database were not run on the old schema.
    assert results["Stuck migrations"][0] == WARNING
    assert results["Stuck migrations"][1].startswith("Not checked")
    assert results["Compute host providers"][1].startswith("Not checked")
    assert results["Placement API"][0] == SUCCESS


def test_empty_database_fails(deployment: Deployment, tmp_path: Path) -> None:
    empty = Database(sqlite_url(tmp_path / "empty-db"))
    with empty.engine.connect():  # the file exists, without a schema
        pass
    deployment.db.dispose()
    deployment.db = empty
    deployment.write_config()
    code, results = deployment.check()
    assert code == FAILURE
    assert "has no schema" in results["Database schema"][1]


def test_missing_sqlite_database_is_reported_not_created(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Without --config-file the default [database] connection is a SQLite file
    under state_path; the check, which changes nothing, must not create it (nor
    its directory). The config comes from --config-dir, so no file is given."""
    state = tmp_path / "state"
    conf_dir = tmp_path / "conf.d"
    conf_dir.mkdir()
    (conf_dir / "state.conf").write_text(
        f"[DEFAULT]\nstate_path = {state}\n\n"
        "[placement]\nauth_type = admin_token\n"
        f"endpoint = {deployment.placement.endpoint}\ntoken = admin\n"
    )
    code, out, _err = deployment.run("--config-dir", str(conf_dir), "upgrade", "check", "--json")
    results = {c["check"]: (c["result"], c["details"]) for c in json.loads(out)["checks"]}
    assert code == FAILURE
    result, details = results["Database schema"]
    assert result == FAILURE
    assert f"Database file {state / 'resize_sched.sqlite'} does not exist" in details
    assert migration.head_revision() in details
    assert results["Placement API"][0] == SUCCESS
    assert not state.exists()


def test_placement_down_fails_with_its_url(deployment: Deployment) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    deployment.write_config(endpoint=url)
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Placement API"]
    assert result == FAILURE
    assert f"Placement at {url}" in details
    assert "cannot be reached" in details
    assert results["Compute host providers"][1].startswith("Not checked")
    assert results["Database schema"][0] == SUCCESS


def test_server_on_missing_provider_fails(deployment: Deployment) -> None:
    gone = "7b7cc9d2-2a4f-4c3c-9b77-0f5a0c0e2b11"
    deployment.server()
    deployment.server(host="ghost", rp_uuid=gone)
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Compute host providers"]
    assert result == FAILURE
    assert f"host ghost (provider {gone})" in details
    assert "host1" not in details


def test_unknown_strategy_fails_naming_installed_ones(deployment: Deployment) -> None:
    deployment.write_config(extra="[resize]\nclaim_strategy = no_such_strategy\n")
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Claim strategy"]
    assert result == FAILURE
    assert "'no_such_strategy' is not installed" in details
    assert "drop_and_reclaim, legacy, max_flavor" in details


def test_policy_file_that_does_not_parse_fails_naming_it(
    deployment: Deployment, tmp_path: Path
) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"os_compute_api:servers:index": "role:reader"\n  bad: [indent\n')
    deployment.write_config(extra=f"[oslo_policy]\npolicy_file = {policy_file}\n")
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Policy file"]
    assert result == FAILURE
    assert f"{policy_file}:" in details
    assert "line 2" in details  # the parser's own message, with where it failed


# -- warnings ----------------------------------------------------------------------------


def test_policy_file_naming_unknown_rules_warns(deployment: Deployment, tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        '"os_compute_api:servers:resise": "rule:context_is_admin"\n'
        '"os_compute_api:servers:delete": "rule:no_such_base_rule"\n'
        '"os_compute_api:servers:create": "rule:project_member_or_admin"\n'
    )
    deployment.write_config(extra=f"[oslo_policy]\npolicy_file = {policy_file}\n")
    code, results = deployment.check()
    assert code == WARNING
    result, details = results["Policy file"]
    assert result == WARNING
    assert "'os_compute_api:servers:resise' is not a rule of this API" in details
    assert "rule:no_such_base_rule, which does not exist" in details
    assert "servers:create" not in details


def test_stuck_migration_warns(deployment: Deployment) -> None:
    server = deployment.server()
    stuck = _migration(deployment.db, server, deployment.host_rp, models.MIGRATION_MIGRATING)
    fresh = _migration(deployment.db, server, deployment.host_rp, models.MIGRATION_PRE_MIGRATING)
    waiting = _migration(deployment.db, server, deployment.host_rp, models.MIGRATION_FINISHED)
    _age(deployment.db, stuck.uuid, 3600)
    _age(deployment.db, waiting.uuid, 3600)  # waits for the user's confirm: not stuck
    code, results = deployment.check()
    assert code == WARNING, results
    result, details = results["Stuck migrations"]
    assert result == WARNING
    assert "(300 s)" in details
    assert f"{stuck.uuid} of server {server.uuid} (migrating for" in details
    assert fresh.uuid not in details and waiting.uuid not in details

    # A longer [conductor] stuck_after: nothing is stuck yet.
    deployment.write_config(extra="[conductor]\nstuck_after = 7200\n")
    code, results = deployment.check()
    assert code == SUCCESS, results


def test_provider_without_owner_trait_warns(deployment: Deployment) -> None:
    foreign = deployment.placement.add_host("host9", 4, 4096, 40, owner=None)
    deployment.server(host="host9", rp_uuid=foreign)
    code, results = deployment.check()
    assert code == WARNING, results
    result, details = results["Compute host providers"]
    assert result == WARNING
    assert f"host host9 (provider {foreign})" in details
    assert DEFAULT_OWNER_TRAIT in details


# -- usage -----------------------------------------------------------------------------


def test_help_is_readable(deployment: Deployment) -> None:
    code, out, _err = deployment.run("--help")
    assert code == 0
    assert out.startswith("usage: resize-sched-status ")
    assert "{upgrade}" in out
    assert "Exit codes: 0 all passed; 1 a warning; 2 a failure" in " ".join(out.split())
    code, out, _err = deployment.run("upgrade", "--help")
    assert code == 0
    assert out.startswith("usage: resize-sched-status upgrade [-h] [--json] check")
    assert "--json" in out


def test_usage_error_exits_nonzero(deployment: Deployment) -> None:
    code, _out, err = deployment.run("downgrade")
    assert code == 2
    assert "invalid choice" in err


def _store_numa_specs(db: Database, flavorid: str | None, server_uuid: str | None) -> None:
    """Write ``hw:numa_nodes=3`` on a 1-vCPU flavor and/or a server's stored
    flavor behind the API's back, as a flavor saved before that spec was
    checked would hold it."""
    bad = {"hw:numa_nodes": "3"}
    with db.engine.begin() as conn:
        if flavorid is not None:
            conn.execute(
                sa.update(models.Flavor)
                .where(models.Flavor.flavorid == flavorid)
                .values(extra_specs=bad)
            )
        if server_uuid is not None:
            flavor = conn.execute(
                sa.select(models.Server.flavor).where(models.Server.uuid == server_uuid)
            ).scalar_one()
            conn.execute(
                sa.update(models.Server)
                .where(models.Server.uuid == server_uuid)
                .values(flavor={**flavor, "extra_specs": bad})
            )


def test_refused_extra_specs_warn_naming_the_flavor_and_the_server(
    deployment: Deployment,
) -> None:
    server = deployment.server()
    deployment.server()
    flavorid = deployment.db.flavor_create("old-numa", 1, 512, 1).flavorid
    _store_numa_specs(deployment.db, flavorid, server.uuid)
    code, results = deployment.check()
    assert code == WARNING
    result, details = results["Flavor extra specs"]
    assert result == WARNING
    assert f"flavor {flavorid} (old-numa)" in details
    assert f"server {server.uuid}" in details
    assert "hw:numa_nodes=3" in details
    assert "2 flavor(s) or server(s)" in details
    assert "openstack flavor set" in details


def test_accepted_extra_specs_pass(deployment: Deployment) -> None:
    deployment.server()
    _, results = deployment.check()
    assert results["Flavor extra specs"][0] == SUCCESS


def test_a_server_pinned_before_the_translation_warns(deployment: Deployment) -> None:
    """A server built when hw:cpu_policy=dedicated was ignored holds VCPU."""
    flavor = deployment.db.flavor_create(
        "pinned", 1, 512, 1, extra_specs={"hw:cpu_policy": "dedicated"}
    )
    old = deployment.server()
    pinned = deployment.db.server_create(
        name="vm",
        project_id="p",
        user_id="u",
        flavor=flavor,
        status=models.STATUS_ACTIVE,
        vm_state="active",
        task_state=None,
        host="host1",
        rp_uuid=deployment.host_rp,
    )
    client = deployment.placement.client()
    for server in (old, pinned):
        write = ConsumerWrite({deployment.host_rp: FLAVOR}, "p", "u", None)
        client.put_allocations(server.uuid, write)
    code, results = deployment.check()
    assert code == WARNING
    result, details = results["Pinned CPUs"]
    assert result == WARNING
    assert f"server {pinned.uuid} (vm) holds DISK_GB:1,MEMORY_MB:512,VCPU:1" in details
    assert "asks for DISK_GB:1,MEMORY_MB:512,PCPU:1" in details
    assert str(old.uuid) not in details
    assert results["Flavor extra specs"][0] == SUCCESS


# -- quota limits (unified limits) -----------------------------------------------------------

_UNIFIED = "[quota]\ndriver = unified_limits\n[oslo_limit]\nendpoint_id = ours\n"


def test_unified_limits_all_registered_pass(deployment: Deployment) -> None:
    deployment.write_config(extra=_UNIFIED)
    registered = dict.fromkeys(unified_limits.KEYSTONE_NAMES.values(), 10)
    with limit_fixture.LimitFixture(registered, {}):
        _code, results = deployment.check()
    assert results["Quota limits"] == (
        SUCCESS,
        "Keystone has a registered limit for each of the 10 resources.",
    )


def test_unified_limits_missing_a_registered_limit_warns_naming_it(
    deployment: Deployment,
) -> None:
    deployment.write_config(extra=_UNIFIED)
    registered = dict.fromkeys(unified_limits.KEYSTONE_NAMES.values(), 10)
    del registered["class:MEMORY_MB"], registered["server_groups"]
    with limit_fixture.LimitFixture(registered, {}):
        code, results = deployment.check()
    assert code == WARNING
    result, details = results["Quota limits"]
    assert result == WARNING
    assert details.startswith(
        "Keystone has no registered limit for class:MEMORY_MB; server_groups on our endpoint"
    )


def test_unified_limits_keystone_unreachable_fails(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oslo_limit import limit

    deployment.write_config(
        extra=_UNIFIED + f"auth_type = password\nauth_url = http://127.0.0.1:{_closed_port()}/v3\n"
        "username = u\npassword = p\nuser_domain_id = default\nsystem_scope = all\n"
    )
    monkeypatch.setattr(limit, "_SDK_CONNECTION", None)
    code, results = deployment.check()
    assert code == FAILURE
    result, details = results["Quota limits"]
    assert result == FAILURE
    assert details.startswith("Keystone's limits could not be read: ")
    assert "check [oslo_limit]" in details
