"""``resize-sched-manage`` run in process against a test cloud's database and
the real Placement it uses."""

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resize_sched.cmd import manage
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.placement import PlacementInProcess

Run = Callable[..., tuple[int, list[str], str]]


@pytest.fixture
def run(placement: PlacementInProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """``run(cloud, deployment=None)(*args)`` -> (exit code, stdout lines,
    stderr) of one command, configured for ``cloud``'s database and, when
    given, ``[placement] deployment_name``."""

    def bind(cloud: Cloud, deployment: str | None = None) -> Run:
        url = cloud.db.engine.url.render_as_string(hide_password=False)
        config = tmp_path / "manage.conf"
        name = f"deployment_name = {deployment}\n" if deployment else ""
        config.write_text(
            f"[database]\nconnection = {url}\n\n"
            f"[placement]\n{name}auth_type = admin_token\nendpoint = {placement.endpoint}\n"
            "token = admin\nconnect_retry_delay = 0.001\n"
        )

        def command(*args: str) -> tuple[int, list[str], str]:
            capsys.readouterr()
            # NOTE: main() sets up logging to the captured stderr; give the
            # root logger its handlers back so later tests do not log to a
            # closed stream.
            handlers, level = logging.root.handlers[:], logging.root.level
            try:
                code = manage.main(["--config-file", str(config), *args])
            finally:
                logging.root.handlers[:], logging.root.level = handlers, level
            out, err = capsys.readouterr()
            return code, out.splitlines(), err

        return command

    return bind
