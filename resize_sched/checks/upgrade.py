"""The checks of ``resize-sched-status upgrade check``: is this deployment
ready to run, or to be upgraded? They read and change nothing.

The checks, in the order they run:

Database schema
    The database's Alembic revision is the newest this code ships. Behind
    (or never created, or unreadable) is a failure; ``resize-sched-manage db
    sync`` fixes it. A SQLite database file that does not exist is reported
    as missing, never created (nor its directory): run without
    ``--config-file``, the command would otherwise leave an empty database
    under the default ``state_path``.
Placement API
    Placement answers at ``[placement]`` and supports :data:`REQUIRED_VERSION`
    (every scheduler query uses ``root_required``). Unreachable or too old
    is a failure.
Compute host providers
    The compute hosts we know are the hosts of our live servers (their
    ``rp_uuid``) plus the resource providers with our owner trait. A server
    whose provider is gone from Placement is a failure (its allocations,
    resizes and heals cannot work); one whose provider lacks the owner trait
    is a warning (the scheduler, heal and audit do not see that host until its
    compute service marks it again, which it does at start).
Stuck migrations
    No migration has stayed in an in-flight status longer than ``[conductor]
    stuck_after``. A ``finished`` resize is left out: it waits for the user to
    confirm or revert, as the conductor's sweep also assumes. A warning: the
    conductor's sweep should take them on, so one that is listed here usually
    means no conductor runs, or the sweep fails (see its log).
Claim strategy
    ``[resize] claim_strategy`` names an installed strategy that loads. A
    failure otherwise, since the conductor then refuses to start.
Flavor extra specs
    Every flavor, and the flavor snapshot of every live server, is a request
    this version accepts. Before ``hw:numa_nodes`` was translated into
    request groups it was accepted and ignored whatever its value; one now
    refused (``hw:numa_nodes=3`` with 2 vCPUs) is a warning: builds and
    resizes with that flavor are refused (400), a server already running
    with it goes on as it was claimed (heal, audit and the scheduler read it
    without its NUMA specs) and is corrected by a resize to a flavor this
    version accepts.
Pinned CPUs
    No live server whose flavor asks for PCPU (``hw:cpu_policy=dedicated``
    or ``mixed``) holds none: one built before the policy was translated
    holds VCPU instead (a warning: a resize corrects it).
Policy file
    The policy file (``[oslo_policy] policy_file`` and ``policy_dirs``)
    parses: a failure otherwise, since the API then answers every request
    with a 500. A rule it names that the API does not enforce, or a
    ``rule:NAME`` it refers to that exists nowhere, is a warning: it changes
    nothing, which is seldom what was meant.
Quota limits
    With ``[quota] driver = unified_limits``: Keystone's limits can be read
    through ``[oslo_limit]`` (a failure otherwise: every create and resize
    is then a 503), and every resource name has a registered limit on our
    endpoint (a warning otherwise: a resource without one is limited to 0).
    Other drivers read no Keystone limit and pass.

The checks that read the database run only when the schema is at head, and
the provider check only when Placement answered; otherwise they report a
warning saying they were not run (the failure that stopped them is already
in the table). Exit codes are oslo.upgradecheck's: 0 every check passed,
1 a warning, 2 a failure, 255 a check could not run at all (a traceback is
printed); a usage error exits 2 as well, as argparse does.
"""

import datetime
import os
from collections.abc import Sequence

import sqlalchemy as sa
from alembic.script import ScriptDirectory
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck

from resize_sched import checks, exception, strategies
from resize_sched import resources as rs
from resize_sched.conf import placement as placement_conf
from resize_sched.db import ERRORS as DB_ERRORS
from resize_sched.db import driver_error, migration, states
from resize_sched.db.api import Database
from resize_sched.placement import client as placement_client
from resize_sched.quota import unified_limits
from resize_sched.scheduler import hosts

LOG = logging.getLogger(__name__)

PROJECT = "resize_sched"
SYNC_COMMAND = "resize-sched-manage db sync"

#: The Placement microversion this deployment needs: the client's floor, and
#: ``root_required``, which every scheduler query sends.
REQUIRED_VERSION = max(placement_client.MIN_VERSION, placement_client.ROOT_REQUIRED_VERSION)

#: Migration statuses a stuck migration may be in: those the conductor's
#: sweep takes on (``finished`` waits for the user, not for us).
# NOTE: a finished resize waits for its owner, a done evacuation for its
# source host to come back: neither is stuck.
STUCK_STATUSES = tuple(
    s
    for s in states.IN_FLIGHT_STATUSES
    if s not in (states.MIGRATION_FINISHED, states.MIGRATION_DONE)
)

#: At most this many names are listed in one check's details.
MAX_LISTED = 20

Result = upgradecheck.Result
Code = upgradecheck.Code


def _listed(items: Sequence[str]) -> str:
    """``items`` joined with "; ", cut after :data:`MAX_LISTED` with a count of the rest."""
    shown = "; ".join(items[:MAX_LISTED])
    rest = len(items) - MAX_LISTED
    return f"{shown}; and {rest} more" if rest > 0 else shown


def _mv(version: tuple[int, int]) -> str:
    """``(1, 35)`` -> ``"1.35"``."""
    return f"{version[0]}.{version[1]}"


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (a database error: the driver's)."""
    exc = driver_error(exc)
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``resize-sched-status upgrade check``.

    :param conf: the parsed configuration; read when the checks run.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._db: Database | None = None
        self._schema_ok = False
        self._client: placement_client.PlacementClient | None = None
        self._placement_url = "(unknown)"
        self._placement_ok = False

    def check(self) -> Code:
        """Run every check, print the table and return the worst code."""
        # NOTE: upgradecheck.main parses the command line but sets up no
        # logging; do it here, once the config is read.
        logging.setup(self.conf, PROJECT)
        try:
            return super().check()
        finally:
            if self._db is not None:
                self._db.dispose()

    # -- plumbing --------------------------------------------------------------

    def _database(self) -> Database:
        if self._db is None:
            self._db = Database.from_conf(self.conf)
        return self._db

    def _db_url(self) -> str:
        try:
            url = sa.engine.make_url(self.conf.database.connection)
        except sa.exc.ArgumentError:
            return "(malformed [database] connection)"
        return url.render_as_string(hide_password=True)

    def _placement(self) -> placement_client.PlacementClient:
        """The client, built as :meth:`PlacementClient.from_conf` does, keeping its URL."""
        if self._client is None:
            group = placement_conf.GROUP_NAME
            auth = ks_loading.load_auth_from_conf_options(self.conf, group)
            session = ks_loading.load_session_from_conf_options(self.conf, group, auth=auth)
            adapter = ks_loading.load_adapter_from_conf_options(
                self.conf, group, session=session, auth=auth, raise_exc=False
            )
            try:
                self._placement_url = adapter.get_endpoint() or self._placement_url
            except ks_exc.ClientException as exc:
                self._placement_url = f"(no endpoint: {one_line(exc)})"
            self._client = placement_client.PlacementClient(adapter)
        return self._client

    @staticmethod
    def _not_run(what: str) -> Result:
        return Result(Code.WARNING, f"Not checked: {what}; see the failure above.")

    # -- the checks -------------------------------------------------------------

    def _missing_sqlite_file(self) -> str | None:
        """The path of a SQLite database file that does not exist, if ours is one.

        Opening it would create it (and its directory), and this command
        changes nothing.
        """
        try:
            url = sa.engine.make_url(self.conf.database.connection)
        except sa.exc.ArgumentError:
            return None
        if url.get_backend_name() != "sqlite" or url.query.get("mode") == "memory":
            return None
        if url.database in (None, "", ":memory:"):
            return None
        path = os.path.expanduser(url.database)
        return None if os.path.exists(path) else path

    def _check_schema(self) -> Result:
        """The database's schema revision is the newest this code ships."""
        head = migration.head_revision()
        missing = self._missing_sqlite_file()
        if missing is not None:
            given = (
                ""
                if self.conf.config_file or self.conf.config_dir
                else " No config file was found or given: pass the deployment's with "
                "--config-file."
            )
            return Result(
                Code.FAILURE,
                f"Database file {missing} does not exist (left uncreated: this command "
                f"changes nothing); this code needs revision {head}. Check [database] "
                f"connection, or run '{SYNC_COMMAND}' to create it.{given}",
            )
        try:
            current = self._database().version()
        except (*DB_ERRORS, exception.ResizeSchedException) as exc:
            return Result(
                Code.FAILURE,
                f"Cannot read the schema revision of database {self._db_url()}: "
                f"{one_line(exc)}. Check [database] connection.",
            )
        if current == head:
            self._schema_ok = True
            return Result(Code.SUCCESS, f"Schema at revision {head}.")
        if current is None:
            return Result(
                Code.FAILURE,
                f"Database {self._db_url()} has no schema; this code needs revision "
                f"{head}. Run '{SYNC_COMMAND}'.",
            )
        script = ScriptDirectory.from_config(migration.alembic_config())
        try:
            known = script.get_revision(current) is not None
        except Exception:  # alembic raises several kinds for a revision it lacks
            known = False
        if not known:
            return Result(
                Code.FAILURE,
                f"Database {self._db_url()} is at revision {current}, which this code "
                f"does not know (its newest is {head}): newer code has upgraded it. Run "
                "the code that matches the database.",
            )
        return Result(
            Code.FAILURE,
            f"Database {self._db_url()} is at revision {current}; this code needs "
            f"revision {head}. Run '{SYNC_COMMAND}'.",
        )

    def _check_placement(self) -> Result:
        """Placement answers and supports :data:`REQUIRED_VERSION`."""
        needed = _mv(REQUIRED_VERSION)
        try:
            client = self._placement()
            max_version = client.max_version
        except exception.PlacementVersionUnsupported as exc:
            return Result(Code.FAILURE, f"{exc} Upgrade Placement.")
        except (exception.ResizeSchedException, ks_exc.ClientException) as exc:
            return Result(
                Code.FAILURE,
                f"Placement at {self._placement_url} cannot be reached: {one_line(exc)}. "
                "Check the [placement] options and that Placement is running.",
            )
        if max_version < REQUIRED_VERSION:
            return Result(
                Code.FAILURE,
                f"Placement at {self._placement_url} supports microversions up to "
                f"{_mv(max_version)}; resize_sched needs at least "
                f"{needed}. Upgrade Placement.",
            )
        self._placement_ok = True
        return Result(
            Code.SUCCESS,
            f"Placement at {self._placement_url} supports microversion "
            f"{_mv(max_version)} (needed: {needed}).",
        )

    def _check_providers(self) -> Result:
        """Each live server's provider exists and carries our owner trait."""
        if not self._schema_ok:
            return self._not_run("the database schema is not at head")
        if not self._placement_ok:
            return self._not_run("Placement did not answer")
        owner = placement_client.owner_trait(self.conf.placement.deployment_name)
        client = self._placement()
        try:
            servers = self._database().server_list()
            owned = {rp["uuid"]: rp["name"] for rp in hosts.list_owned(client, owner)}
            by_rp: dict[str, set[str]] = {}
            for server in servers:
                if server.rp_uuid:
                    by_rp.setdefault(server.rp_uuid, set()).add(server.host or "?")
            missing, unmarked = [], []
            for rp_uuid in sorted(set(by_rp) - set(owned)):
                names = ", ".join(sorted(by_rp[rp_uuid]))
                try:
                    client.get_resource_provider(rp_uuid)
                except exception.PlacementNotFound:
                    missing.append(f"host {names} (provider {rp_uuid})")
                else:
                    unmarked.append(f"host {names} (provider {rp_uuid})")
        except (*DB_ERRORS, exception.ResizeSchedException) as exc:
            return Result(Code.FAILURE, f"Cannot compare servers with Placement: {one_line(exc)}")
        known = len(set(by_rp) | set(owned))
        if missing:
            detail = (
                f"{len(missing)} compute host(s) with servers have no resource provider in "
                f"Placement: {_listed(missing)}. Start their compute services (which "
                "register them) or move their servers elsewhere."
            )
            if unmarked:
                detail += f" Also without the owner trait {owner}: {_listed(unmarked)}."
            return Result(Code.FAILURE, detail)
        if unmarked:
            return Result(
                Code.WARNING,
                f"{len(unmarked)} compute host(s) with servers have a provider without "
                f"this deployment's owner trait {owner}, so the scheduler, heal and audit "
                f"ignore them: {_listed(unmarked)}. Restart their compute services (which "
                "mark them), and check [placement] deployment_name matches everywhere.",
            )
        return Result(
            Code.SUCCESS,
            f"{known} compute host(s), {len(by_rp)} with servers; every provider is "
            f"present and has the owner trait {owner}.",
        )

    def _check_stuck_migrations(self) -> Result:
        """No migration sits in an in-flight status longer than ``stuck_after``."""
        if not self._schema_ok:
            return self._not_run("the database schema is not at head")
        stuck_after = self.conf.conductor.stuck_after
        now = datetime.datetime.now(datetime.UTC)
        try:
            in_flight = self._database().migration_list(statuses=STUCK_STATUSES)
        except DB_ERRORS as exc:
            return Result(Code.FAILURE, f"Cannot list migrations: {one_line(exc)}")
        stuck = []
        for row in in_flight:
            changed = row.updated_at or row.created_at
            idle = (now - changed).total_seconds()
            if idle >= stuck_after:
                stuck.append(
                    f"{row.uuid} of server {row.server_uuid} ({row.status} for {int(idle)} s, "
                    f"from {row.source_host} to {row.dest_host or 'an unchosen host'})"
                )
        if stuck:
            return Result(
                Code.WARNING,
                f"{len(stuck)} migration(s) have not moved for over [conductor] stuck_after "
                f"({stuck_after} s): {_listed(stuck)}. A running conductor's sweep takes "
                "them on; check that one runs and what its log says about them.",
            )
        return Result(
            Code.SUCCESS,
            f"No migration in flight for over {stuck_after} s ({len(in_flight)} in flight).",
        )

    def _check_claim_strategy(self) -> Result:
        """``[resize] claim_strategy`` is installed and loads."""
        name = self.conf.resize.claim_strategy
        try:
            strategies.load(name)
        except exception.StrategyNotFound:
            return Result(
                Code.FAILURE,
                f"[resize] claim_strategy '{name}' is not installed; installed: "
                f"{', '.join(strategies.installed()) or 'none'}. The conductor will not "
                "start until it names one of them.",
            )
        except exception.ConfigurationError as exc:
            return Result(Code.FAILURE, f"{exc}. The conductor will not start with it.")
        return Result(Code.SUCCESS, f"[resize] claim_strategy '{name}' is installed.")

    def _check_extra_specs(self) -> Result:
        """Every flavor and live server's flavor is a request this version accepts."""
        if not self._schema_ok:
            return self._not_run("the database schema is not at head")
        try:
            db = self._database()
            flavors = db.flavor_list()
            servers = db.server_list()
        except DB_ERRORS as exc:
            return Result(Code.FAILURE, f"Cannot list flavors and servers: {one_line(exc)}")
        refused = checks.refused_extra_specs(flavors, servers)
        if refused:
            return Result(
                Code.WARNING,
                f"{len(refused)} flavor(s) or server(s) have extra specs this version refuses "
                f"(hw:numa_nodes, hw:numa_cpus.X, hw:numa_mem.X and the CPU policy are now "
                "checked, and a key this service does not honour is refused): "
                f"{_listed(refused)}. Builds and resizes with such a flavor are refused; "
                "servers already running with one keep what they hold. Correct each "
                "flavor's extra specs (openstack flavor set --property / unset "
                "--property), then resize each listed server to a corrected flavor.",
            )
        return Result(
            Code.SUCCESS,
            f"{len(flavors)} flavor(s) and {len(servers)} live server(s): every extra "
            "spec is accepted.",
        )

    def _check_policy_file(self) -> Result:
        """The policy file parses and names only rules that exist."""
        report = checks.policy_problems(self.conf)
        if report.unparsable:
            return Result(
                Code.FAILURE,
                f"The policy file does not parse: {_listed(report.unparsable)}. The API "
                "answers every authenticated request with a 500 until it does.",
            )
        if report.unknown:
            return Result(
                Code.WARNING,
                f"The policy file names what this API does not know, so it changes "
                f"nothing: {_listed(report.unknown)}. Misspelt? The rule names are in "
                "policy.yaml.sample (oslopolicy-sample-generator --namespace resize_sched).",
            )
        if not report.files:
            return Result(Code.SUCCESS, "No policy file: every rule is at its default.")
        return Result(Code.SUCCESS, f"The policy file parses: {', '.join(report.files)}.")

    def _check_quota_limits(self) -> Result:
        """With ``unified_limits``: Keystone's limits are readable and all registered."""
        driver = self.conf.quota.driver
        if driver != "unified_limits":
            return Result(
                Code.SUCCESS, f"[quota] driver is '{driver}': no Keystone limit is read."
            )
        try:
            missing = unified_limits.missing_registered(self.conf)
        except exception.LimitsUnavailable as exc:
            return Result(
                Code.FAILURE,
                f"{exc.message}. Every server create and resize is refused with a 503 "
                "until they can be: check [oslo_limit] (the endpoint, the credentials, "
                "the user's reader role on the system) and that Keystone answers.",
            )
        if missing:
            return Result(
                Code.WARNING,
                f"Keystone has no registered limit for {_listed(missing)} on our endpoint, "
                "so nothing of these is allowed (a missing limit is 0). Register one for "
                "each: openstack registered limit create --service SERVICE --region REGION "
                "--default-limit N NAME.",
            )
        return Result(
            Code.SUCCESS,
            f"Keystone has a registered limit for each of the "
            f"{len(unified_limits.KEYSTONE_NAMES)} resources.",
        )

    def _check_pinned(self) -> Result:
        """No live server built with dedicated CPUs holds VCPU instead of PCPU."""
        if not (self._schema_ok and self._placement_ok):
            return self._not_run("the database schema is not at head or Placement did not answer")
        client = self._placement()
        try:
            held = lambda uuid: rs.total(client.get_allocations(uuid).allocations)  # noqa: E731
            found = checks.pinned_but_unpinned(self._database().server_list(), held)
        except (*DB_ERRORS, exception.ResizeSchedException) as exc:
            return Result(Code.FAILURE, f"Cannot compare servers with Placement: {one_line(exc)}")
        if not found:
            return Result(Code.SUCCESS, "Every server with dedicated CPUs holds PCPU.")
        return Result(
            Code.WARNING,
            f"{len(found)} server(s) built before hw:cpu_policy was translated hold VCPU "
            f"where their flavor asks for PCPU: {_listed(found)}. Give their hosts a "
            "[compute] cpu_dedicated_set, then resize each (a resize claims what its new "
            "flavor asks for).",
        )

    _upgrade_checks = (
        ("Database schema", _check_schema),
        ("Placement API", _check_placement),
        ("Compute host providers", _check_providers),
        ("Stuck migrations", _check_stuck_migrations),
        ("Claim strategy", _check_claim_strategy),
        ("Flavor extra specs", _check_extra_specs),
        ("Pinned CPUs", _check_pinned),
        ("Policy file", _check_policy_file),
        ("Quota limits", _check_quota_limits),
    )
