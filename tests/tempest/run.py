"""Run Tempest's Compute API tests against resize_sched (``tox -e tempest``).

    python -m tests.tempest.run [--cloud] [--concurrency N] [--all | --regex R] [--keep]

Without ``--cloud``: brings up :class:`tests.tempest.cloud.LocalCloud` (a real
Keystone, Placement, two computes, the conductor and the API as processes,
on RESIZE_SCHED_TEST_RABBIT_URL and RESIZE_SCHED_TEST_MYSQL_URL). With
``--cloud``: uses the deployment the ``OS_*`` and ``TEMPEST_*`` environment
variables name (:mod:`tests.tempest.config`). Then writes ``tempest.conf``
from the template, ``tempest init``\\ s a workspace, runs the selection of
:data:`TESTS` (with ``--all``: the whole ``tempest.api.compute`` package) less
``exclude.txt``, prints the results class by class and the
closing ``N passed, N failed[, N skipped]`` line.

Exit codes: 0 nothing failed; 1 a test failed; 2 the harness could not run
(a backend missing, a daemon that did not start, Tempest timed out); 130
interrupted. Every process, database and virtual host it made is gone on
every exit, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import FrameType

from tests.chaos.stack import HarnessError
from tests.tempest import config, results
from tests.tempest.cloud import LocalCloud

EXIT_OK, EXIT_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 130
HERE = pathlib.Path(__file__).resolve().parent
EXCLUDE = HERE / "exclude.txt"
#: The modules and packages of tempest.api.compute that are run.
TESTS = (
    "servers.test_server_actions",
    "servers.test_create_server",
    "servers.test_list_server_filters",
    "servers.test_instance_actions",
    "servers.test_server_group",
    "admin.test_migrations",
    "admin.test_live_migration_negative",
    "admin.test_servers_on_multinodes",
    "admin.test_hypervisor",
    "admin.test_services",
    "admin.test_simple_tenant_usage",
    "admin.test_simple_tenant_usage_negative",
    "admin.test_delete_server",
    # NOTE: Tempest 47 ships no positive admin.test_aggregates module.
    "admin.test_aggregates_negative",
    "admin.test_availability_zone",
    "admin.test_availability_zone_negative",
    "servers.test_availability_zone",
    "flavors",
    "test_quotas",
    "admin.test_quotas",
    "admin.test_quotas_negative",
    "limits",
    "keypairs",
    "admin.test_keypairs_v210",
    "admin.test_flavors_access",
    "admin.test_flavors_access_negative",
    "admin.test_servers_negative",
    "admin.test_flavors",
    "admin.test_flavors_extra_specs_negative",
    "admin.test_hosts",
    "admin.test_hosts_negative",
    "admin.test_hypervisor_negative",
    "admin.test_services_negative",
)
REGEX = r"^tempest\.api\.compute\.(" + "|".join(t.replace(".", r"\.") for t in TESTS) + r")\."
#: The whole package (``--all``): the yardstick of doc/tempest.rst, too long for CI.
ALL_REGEX = r"^tempest\.api\.compute\."


class Interrupted(BaseException):
    """SIGTERM (raised in the main thread, like Ctrl-C's KeyboardInterrupt)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Interrupted()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.tempest.run",
        description="Run Tempest's Compute API tests against resize_sched behind a real "
        "Keystone. See doc/tempest.rst.",
    )
    parser.add_argument(
        "--cloud",
        action="store_true",
        help="test the deployment OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME "
        "and TEMPEST_IMAGE_REF(_ALT), TEMPEST_FLAVOR_REF(_ALT) name, instead of bringing one up",
    )
    parser.add_argument(
        "--concurrency", type=int, default=2, help="Tempest's worker processes (2)"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--regex", default=REGEX, help="the tests to run (default: the selection of TESTS)"
    )
    which.add_argument(
        "--all",
        dest="regex",
        action="store_const",
        const=ALL_REGEX,
        help="run the whole tempest.api.compute package (long: see doc/tempest.rst)",
    )
    parser.add_argument(
        "--exclude-list",
        default=str(EXCLUDE),
        help="a file of regular expressions of tests not to run ('' for none; "
        "default: tests/tempest/exclude.txt)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds Tempest may run before it is stopped (900; 5400 with --all)",
    )
    parser.add_argument(
        "--workdir", type=pathlib.Path, default=None, help="where configs and logs go"
    )
    parser.add_argument(
        "--rst",
        type=pathlib.Path,
        default=None,
        help="also write the class tallies to this file as a reStructuredText table",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work directory (kept anyway on failure)"
    )
    args = parser.parse_args(argv)
    if args.timeout is None:
        args.timeout = 5400.0 if args.regex == ALL_REGEX else 900.0
    return args


def _say(message: str) -> None:
    print(f"tempest: {message}", flush=True)


def _tempest() -> str:
    found = shutil.which("tempest", path=os.path.dirname(sys.executable)) or shutil.which(
        "tempest"
    )
    if found is None:
        raise HarnessError("tempest is not installed (tox -e tempest installs it)")
    return found


def _workspace(tempest: str, workdir: pathlib.Path, conf_text: str) -> pathlib.Path:
    """``tempest init`` a workspace (registered in a file of its own) with our config."""
    space = workdir / "workspace"
    subprocess.run(
        [tempest, "init", "--workspace-path", str(workdir / "workspaces.yaml"), str(space)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (space / "etc" / "tempest.conf").write_text(conf_text)
    return space


def _run_tempest(
    tempest: str, space: pathlib.Path, args: argparse.Namespace
) -> tuple[int, list[results.Result]]:
    """Run the tests; Tempest's exit code and the results of the run."""
    log_path = space.parent / "tempest-run.log"
    command = [
        tempest,
        "run",
        "--config-file",
        str(space / "etc" / "tempest.conf"),
        "--regex",
        args.regex,
        "--concurrency",
        str(args.concurrency),
    ]
    if args.exclude_list:
        command += ["--exclude-list", args.exclude_list]
    with log_path.open("wb") as log:
        # NOTE: a session of its own: on Ctrl-C we stop its whole group.
        proc = subprocess.Popen(
            command,
            cwd=space,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            raise HarnessError(
                f"Tempest ran longer than {args.timeout:.0f} s; its output: {log_path}"
            ) from None
        except BaseException:
            _stop_group(proc)
            raise
    stream = subprocess.run(
        [shutil.which("stestr", path=os.path.dirname(tempest)) or "stestr", "last", "--subunit"],
        cwd=space,
        capture_output=True,
        timeout=120,
    ).stdout
    return code, results.read(io.BytesIO(stream))


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # NOTE: Ctrl-C raises KeyboardInterrupt even where SIGINT was inherited
    # ignored (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="rs-tempest-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cloud: LocalCloud | None = None
    code = EXIT_HARNESS
    closing = ""
    try:
        tempest = _tempest()
        if args.cloud:
            values = config.from_environment(os.environ)
        else:
            rabbit = os.environ.get("RESIZE_SCHED_TEST_RABBIT_URL", "").strip()
            mysql = os.environ.get("RESIZE_SCHED_TEST_MYSQL_URL", "").strip()
            if not rabbit or not mysql:
                raise HarnessError(
                    "set RESIZE_SCHED_TEST_RABBIT_URL and RESIZE_SCHED_TEST_MYSQL_URL "
                    "(or --cloud to test another deployment)"
                )
            cloud = LocalCloud(workdir, rabbit, mysql)
            values = cloud.start(_say)
        values["log_file"] = str(workdir / "tempest.log")
        values["lock_path"] = str(workdir / "locks")
        try:
            conf_text = config.render(values)
        except config.ConfigError as exc:
            raise HarnessError(f"tempest.conf: {exc}") from exc
        space = _workspace(tempest, workdir, conf_text)
        _say(f"running Tempest (concurrency {args.concurrency}); its output: {space.parent}")
        tempest_code, found = _run_tempest(tempest, space, args)
        results.report(found, sys.stdout)
        closing = results.closing_line(found)
        if args.rst is not None:
            args.rst.write_text(results.rst_table(found))
        failed = results.counts(found)[results.FAILED]
        if not found:
            raise HarnessError(f"Tempest ran no test (exit {tempest_code}); see {workdir}")
        code = EXIT_FAILED if failed or tempest_code != 0 else EXIT_OK
    except HarnessError as exc:
        print(f"tempest: the harness could not run: {exc}", file=sys.stderr, flush=True)
        if cloud is not None:
            _say("logs: " + ", ".join(str(p) for p in cloud.logs()))
        code = EXIT_HARNESS
    except (KeyboardInterrupt, Interrupted):
        print("tempest: interrupted; tearing down", file=sys.stderr, flush=True)
        code = EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if cloud is not None:
                cloud.close()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    elapsed = time.monotonic() - started
    if code == EXIT_OK and not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        _say(f"configs and logs kept in {workdir}")
    _say(f"wall time {elapsed:.0f} s")
    if closing:
        print(closing, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
