"""The services end to end, in one process: openstacksdk -> API -> RPC ->
conductor -> Placement, and conductor <-> compute hosts, on the in-memory
transport. Placement's actual state is checked after every step.
"""

import json
import pathlib
import queue
import time

import pytest

OLD = dict(vcpus=1, ram=1024, disk=10)
NEW = dict(vcpus=2, ram=2048, disk=20)
OLD_RES = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW_RES = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def _flavors(d):
    return d.flavor("old", **OLD), d.flavor("new", **NEW)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_resize_other_host_through_the_api(deploy, decision):
    d = deploy("[resize]\nallow_same_host = false\nclaim_strategy = max_flavor\n")
    f_old, f_new = _flavors(d)
    server = d.boot("vm", f_old)
    source = server.compute_host
    d.conn.compute.resize_server(server, f_new.id)
    server = d.wait(server, "VERIFY_RESIZE")
    d.check()
    dest = server.compute_host
    assert dest != source
    assert d.holds(server.id) == {d.hosts[dest]: NEW_RES}
    migration = d.migration(server)
    assert (migration.status, migration.source_compute, migration.dest_compute) == (
        "finished",
        source,
        dest,
    )
    assert d.usage(source) == OLD_RES  # held by the migration consumer
    if decision == "confirm":
        d.conn.compute.confirm_server_resize(server)
        server = d.wait(server, "ACTIVE")
        assert d.holds(server.id) == {d.hosts[dest]: NEW_RES}
        assert d.usage(source) == {}
    else:
        d.conn.compute.revert_server_resize(server)
        server = d.wait(server, "ACTIVE")
        assert server.compute_host == source
        assert d.holds(server.id) == {d.hosts[source]: OLD_RES}
        assert d.usage(dest) == {}
    d.check()


@pytest.mark.parametrize("strategy", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_bug_1790204_through_the_api(deploy, strategy):
    d = deploy(f"[resize]\nclaim_strategy = {strategy}\n", hosts="host1:2:8192:1028")
    f_old = d.flavor("old", vcpus=1, ram=1024, disk=1028)
    f_new = d.flavor("new", vcpus=2, ram=2048, disk=1028)
    server = d.boot("vm", f_old)
    d.conn.compute.resize_server(server, f_new.id)
    server = d.wait(server, "VERIFY_RESIZE", "ACTIVE")
    d.check()
    migration = d.migration(server)
    old = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028}
    new = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}
    if strategy == "legacy":
        assert server.status == "ACTIVE"
        assert migration.status == "error"
        assert d.holds(server.id) == {d.hosts["host1"]: old}
        return
    assert server.status == "VERIFY_RESIZE"
    assert d.usage("host1") == new
    d.conn.compute.confirm_server_resize(server)
    server = d.wait(server, "ACTIVE")
    d.check()
    assert d.holds(server.id) == {d.hosts["host1"]: new}


def test_prep_resize_failure_is_rescheduled(deploy):
    d = deploy(
        "[resize]\nallow_same_host = false\n[fake_driver]\nfail_on = host2:prep_resize\n",
        # Spread by free RAM: boots on host1, resize tries host2 first.
        hosts="host1:8:32768:200,host2:8:24576:200,host3:8:16384:200",
    )
    f_old, f_new = _flavors(d)
    server = d.boot("vm", f_old)
    assert server.compute_host == "host1"
    d.conn.compute.resize_server(server, f_new.id)
    server = d.wait(server, "VERIFY_RESIZE", "ACTIVE", "ERROR")
    d.check()
    assert server.status == "VERIFY_RESIZE"
    assert server.compute_host == "host3"
    assert d.usage("host2") == {}
    assert d.holds(server.id) == {d.hosts["host3"]: NEW_RES}
    migration = d.migration(server)
    assert (migration.source_compute, migration.dest_compute) == ("host1", "host3")


def test_finish_resize_failure_leaves_error_and_no_leak(deploy):
    d = deploy(
        "[resize]\nallow_same_host = false\n[fake_driver]\n"
        "fail_on = host1:finish_resize,host2:finish_resize\n"
    )
    f_old, f_new = _flavors(d)
    server = d.boot("vm", f_old)
    source = server.compute_host
    d.conn.compute.resize_server(server, f_new.id)
    server = d.wait(server, "ERROR")
    d.check()
    assert server.compute_host == source
    assert d.holds(server.id) == {d.hosts[source]: OLD_RES}
    other = "host2" if source == "host1" else "host1"
    assert d.usage(other) == {}
    assert d.migration(server).status == "error"


def test_delete_during_verify_resize_releases_everything(deploy):
    d = deploy("[resize]\nallow_same_host = false\n")
    f_old, f_new = _flavors(d)
    server = d.boot("vm", f_old)
    d.conn.compute.resize_server(server, f_new.id)
    server = d.wait(server, "VERIFY_RESIZE")
    d.conn.compute.delete_server(server)
    d.conn.compute.wait_for_delete(server, wait=30, interval=0.05)
    d.check()
    assert d.usage("host1") == {} and d.usage("host2") == {}


def test_restart_on_the_same_state_path_recovers_a_resize_in_flight(tmp_path):
    """Stop the all-in-one while a resize is with a compute host (its report
    back is lost with the old process), start it again on the same state:
    Placement and the database are as they were, and recovery takes the
    resize on to VERIFY_RESIZE."""
    from resize_sched import conf as rs_conf
    from resize_sched.all_in_one import AllInOne
    from tests.functional.services.conftest import Deployment

    config = tmp_path / "aio.conf"
    config.write_text(
        "[api]\nbind_host = 127.0.0.1\nbind_port = 0\nauth_strategy = noauth2\n"
        "[all_in_one]\nplacement_port = 0\nhosts = host1:8:16384:200,host2:8:8192:200\n"
        f"state_path = {tmp_path / 'state'}\n"
        "[compute]\nupdate_interval = 0\n[fake_driver]\ndelay_s = 0.5\n"
        "[resize]\nallow_same_host = false\n"
    )

    def start() -> Deployment:
        conf = rs_conf.new_conf()
        rs_conf.parse_args(conf, ["--config-file", str(config)])
        aio = AllInOne(conf)
        aio.start()
        return Deployment(aio)

    d = start()
    try:
        f_old, f_new = _flavors(d)
        server = d.boot("vm", f_old)
        assert server.compute_host == "host1"
        d.conn.compute.resize_server(server, f_new.id)
        deadline = time.monotonic() + 30
        while d.aio.db.migration_get_in_progress_for_server(server.id).status != "migrating":
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        d.aio.stop()

    d = start()
    try:
        report = d.aio.conductor.recovery_report
        assert report is not None and report.found == 1
        migration_uuid = next(iter(report.resumed))
        # NOTE: the old process stopped before or after host2's 'prepared'
        # report reached the conductor: the step re-sent is the one due.
        assert report.resumed[migration_uuid] in (
            "prep_resize sent again to host2",
            "resize sent again to host1",
        )
        server = d.wait(server, "VERIFY_RESIZE")
        d.check()
        assert server.compute_host == "host2"
        assert d.holds(server.id) == {d.hosts["host2"]: NEW_RES}
        migration = d.aio.db.migration_get(migration_uuid)
        assert d.holds(migration.uuid) == {d.hosts["host1"]: OLD_RES}
        d.conn.compute.confirm_server_resize(server)
        d.wait(server, "ACTIVE")
        d.check()
        assert d.usage("host1") == {}
    finally:
        d.aio.stop()


# -- what a newcomer meets: the console script itself ------------------------------------


def test_a_missing_module_names_the_extra_that_installs_it(tmp_path, monkeypatch, capsys):
    """Without oslo.db the command says which extra to install, not a traceback;
    and that extra exists in pyproject.toml and installs every module needed."""
    import sys
    import tomllib

    from resize_sched import all_in_one
    from resize_sched.cmd import all_in_one as cmd

    monkeypatch.setitem(sys.modules, "oslo_db", None)  # import oslo_db now fails
    state = tmp_path / "state"
    config = tmp_path / "aio.conf"
    config.write_text(f"[all_in_one]\nstate_path = {state}\n")
    assert cmd.main(["--config-file", str(config)]) == 1
    err = capsys.readouterr().err
    assert "oslo.db (module(s) oslo_db not found)" in err
    assert "pip install 'resize_sched[all-in-one]'" in err
    assert not state.exists()  # nothing started

    root = pathlib.Path(__file__).resolve().parents[3]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"][all_in_one.EXTRA]
    declared = {req.split(">")[0].split("=")[0].strip().lower() for req in extra}
    assert {d.lower() for d in all_in_one.REQUIRED_MODULES.values()} <= declared


def _read_until(lines: "queue.Queue[str | None]", marker: str, deadline: float) -> list[str]:
    """The lines read from the process until one starting with ``marker``."""
    seen: list[str] = []
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, "the all-in-one exited:\n" + "".join(seen)
        seen.append(line)
        if line.startswith(marker):
            return seen


def test_the_command_writes_a_config_for_the_tools_and_logs_to_a_file(tmp_path, capsys):
    """``resize-sched-all-in-one`` as an operator runs it: the banner names the
    log file and the --config-file arguments, which resize-sched-status and
    resize-sched-manage then use as printed; requests are logged to the file,
    never to stdout; SIGTERM stops it cleanly."""
    import logging
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import threading

    import requests

    from resize_sched.cmd import manage, status

    state = tmp_path / "state"
    config = tmp_path / "aio.conf"
    config.write_text(
        "[api]\nbind_port = 0\n[all_in_one]\nplacement_port = 0\n"
        f"hosts = host1:4:4096:40\nstate_path = {state}\n"
    )
    root = pathlib.Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONWARNINGS="ignore")
    proc = subprocess.Popen(
        [sys.executable, "-m", "resize_sched.cmd.all_in_one", "--config-file", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    try:
        banner = _read_until(lines, "Log:", time.monotonic() + 120)
        text = "".join(banner)
        log_file = state / "all-in-one.log"
        assert f"Log:         {log_file}\n" in text
        tool_config = state / "resize_sched.conf"
        args = ["--config-file", str(config), "--config-file", str(tool_config)]
        assert f"resize-sched-status {shlex.join(args)} upgrade check" in text
        assert f"resize-sched-manage {shlex.join(args)} placement audit" in text
        api = next(line.split()[2] for line in banner if line.startswith("Compute API:"))
        got = requests.get(f"{api}/flavors", headers={"X-Auth-Token": "admin:admin"}, timeout=30)
        assert got.status_code == 200

        handlers, level = logging.root.handlers[:], logging.root.level
        try:
            capsys.readouterr()
            assert status.main([*args, "upgrade", "check", "--json"]) == 0
            checks = json.loads(capsys.readouterr().out)["checks"]
            assert len(checks) >= 5
            assert {c["check"]: c["result"] for c in checks} == {c["check"]: 0 for c in checks}
            assert manage.main([*args, "placement", "audit"]) == 0
            assert "no orphaned allocations" in capsys.readouterr().out
        finally:
            logging.root.handlers[:], logging.root.level = handlers, level
        assert "GET '/v2.1/flavors' status: 200" in log_file.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    rest = []
    while (line := lines.get(timeout=10)) is not None:
        rest.append(line)
    assert code == 0
    # Nothing but the banner on stdout, and the line saying it stopped.
    assert rest == [f"resize-sched-all-in-one stopped on SIGTERM; its state stays in {state}.\n"]
    assert " INFO " not in text


def test_dedicated_cpus_through_the_api(deploy):
    """A host given PCPUS in [all_in_one] hosts offers PCPU; a dedicated
    flavor claims it there, and fails clearly once no host has PCPU left."""
    d = deploy(hosts="host1:2:8192:100:2,host2:2:8192:100")
    inventory = d.placement.get_inventories(d.hosts["host1"])[0]
    assert (inventory["VCPU"]["total"], inventory["PCPU"]["total"]) == (2, 2)
    assert "PCPU" not in d.placement.get_inventories(d.hosts["host2"])[0]
    flavor = d.flavor("pinned", vcpus=2, ram=1024, disk=10)
    d.conn.compute.create_flavor_extra_specs(flavor, {"hw:cpu_policy": "dedicated"})
    server = d.boot("vm1", flavor)
    assert d.holds(server.id) == d.on("host1", PCPU=2, MEMORY_MB=1024, DISK_GB=10)
    second = d.conn.compute.create_server(name="vm2", flavor_id=flavor.id)
    second = d.conn.compute.wait_for_server(second, status="ERROR", wait=30, interval=0.05)
    assert "PCPU:2" in second.fault["message"]
    assert d.holds(second.id) == {}
    d.check()
