"""The systemd units in ``etc/systemd/``: one per daemon, each runs it as parsed.

Each unit's ``ExecStart`` must name a console script of ``pyproject.toml``
and pass only options the daemon's own configuration knows: the command
line is parsed exactly as the daemon parses it (its config files replaced
by empty ones), so a misspelt option or a renamed script fails here rather
than at ``systemctl start``.
"""

import configparser
import os
import shlex
import tomllib

import pytest

from resize_sched import conf as rs_conf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = os.path.join(ROOT, "etc", "systemd")
#: The long-running services; the other console scripts are commands.
DAEMONS = {"resize-sched-api", "resize-sched-conductor", "resize-sched-compute"}


def _scripts() -> dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


def _units() -> list[str]:
    return sorted(n for n in os.listdir(UNITS) if n.endswith(".service"))


def _service(name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # systemd's keys are case-sensitive
    with open(os.path.join(UNITS, name), encoding="utf-8") as f:
        # NOTE: systemd continues a line with a final backslash.
        parser.read_string(f.read().replace("\\\n", " "))
    return parser["Service"]


def test_one_unit_per_daemon() -> None:
    assert {name.removesuffix(".service") for name in _units()} == DAEMONS
    assert DAEMONS <= set(_scripts())


@pytest.mark.parametrize("name", _units())
def test_exec_start_runs_the_daemon_with_options_it_knows(name, tmp_path) -> None:
    service = _service(name)
    command, *args = shlex.split(service["ExecStart"])
    script = os.path.basename(command)
    assert script == name.removesuffix(".service")
    assert script in _scripts()
    assert os.path.isabs(command)

    files = []
    for i, arg in enumerate(args[:-1]):
        if arg == "--config-file":
            files.append(args[i + 1])
            empty = tmp_path / f"{len(files)}.conf"
            empty.write_text("")
            args[i + 1] = str(empty)
    assert files[0] == "/etc/resize_sched/resize_sched.conf"

    conf = rs_conf.new_conf()
    # NOTE: an option nothing registered makes the parser exit.
    rs_conf.parse_args(conf, args, default_config_files=[])
    assert conf.log_file == f"/var/log/resize_sched/{script}.log"
    assert os.path.dirname(conf.log_file) == "/var/log/" + service["LogsDirectory"]
    assert conf.state_path == "/var/lib/" + service["StateDirectory"]
    assert service["User"] == "resize_sched"


def test_a_misspelt_option_is_refused(tmp_path) -> None:
    # The check above can fail: the parser refuses what no daemon registers.
    conf = rs_conf.new_conf()
    with pytest.raises(SystemExit):
        rs_conf.parse_args(conf, ["--log-flie", "x.log"], default_config_files=[])
