"""The Tempest harness's own parts, without Tempest or backends: reading a
subunit stream into results, the closing line, tempest.conf from the
template, the environment of another cloud and the exclude list."""

from __future__ import annotations

import io
import re

import pytest

from tests.tempest import config, results, run
from tests.tempest.cloud import ENABLED_FILTERS, FLAVORS

_CLS = "tempest.api.compute.servers.test_server_actions.ServerActionsTestJSON"
#: The placeholders the local cloud gives (LocalCloud.start) and run.main adds.
_LOCAL = {
    "auth_url": "http://127.0.0.1:5000/v3",
    "admin_username": "admin",
    "admin_password": "pw",
    "admin_project_name": "admin",
    "image_ref": "img-1",
    "image_ref_alt": "img-2",
    "flavor_ref": FLAVORS[0][0],
    "flavor_ref_alt": FLAVORS[1][0],
    "log_file": "/tmp/t.log",
    "lock_path": "/tmp/locks",
}


def _stream() -> io.BytesIO:
    subunit = pytest.importorskip("subunit")
    out = io.BytesIO()
    writer = subunit.StreamResultToBytes(out)

    def test(test_id: str, status: str, **files: bytes) -> None:
        writer.status(test_id=test_id, test_status="inprogress")
        for name, data in files.items():
            writer.status(test_id=test_id, file_name=name, file_bytes=data, mime_type="text/plain")
        writer.status(test_id=test_id, test_status=status)

    test(f"{_CLS}.test_resize_server_confirm[id-1234,smoke]", "success")
    test(
        f"{_CLS}.test_resize_server_revert[id-5678]",
        "fail",
        traceback=b"Traceback (most recent call last):\n  x\n"
        b"tempest.lib.exceptions.BadRequest: no\nDetails: {'a': 1}\n",
    )
    test(f"{_CLS}.test_pause_unpause_server[id-9]", "skip", reason=b"Pause is not available.")
    test("setUpClass (tempest.api.compute.admin.test_hypervisor.HypervisorAdminV228Test)", "skip")
    out.seek(0)
    return out


def test_read_gives_each_test_its_status_reason_and_class() -> None:
    found = results.read(_stream())
    assert [(r.name, r.status) for r in found] == [
        ("setUpClass", results.SKIPPED),
        ("test_pause_unpause_server", results.SKIPPED),
        ("test_resize_server_confirm", results.PASSED),
        ("test_resize_server_revert", results.FAILED),
    ]
    assert found[0].cls.endswith("HypervisorAdminV228Test")
    assert found[1].reason == "Pause is not available."
    assert found[3].reason == "tempest.lib.exceptions.BadRequest: no Details: {'a': 1}"
    assert {r.cls for r in found[1:]} == {_CLS}


def test_closing_line_counts_and_names_skipped_only_when_any() -> None:
    found = [
        results.Result("a.B.test_1", results.PASSED),
        results.Result("a.B.test_2", results.FAILED),
        results.Result("a.B.test_3", results.PASSED),
    ]
    assert results.closing_line(found) == "2 passed, 1 failed"
    found.append(results.Result("a.C.test_4", results.SKIPPED, "off"))
    assert results.closing_line(found) == "2 passed, 1 failed, 1 skipped"


def test_report_tallies_each_class() -> None:
    found = [
        results.Result("a.B.test_1", results.PASSED),
        results.Result("a.B.test_2", results.SKIPPED, "not here"),
        results.Result("a.C.test_3", results.FAILED, "Boom"),
    ]
    out = io.StringIO()
    results.report(found, out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "a.B: 1 passed, 0 failed, 1 skipped"
    assert "  skip test_2  (not here)" in lines
    assert "a.C: 0 passed, 1 failed, 0 skipped" in lines
    assert "  FAIL test_3  (Boom)" in lines


def test_rst_table_has_a_row_per_class() -> None:
    found = [
        results.Result("tempest.api.compute.a.B.test_1", results.PASSED),
        results.Result("tempest.api.compute.a.B.test_2", results.SKIPPED),
        results.Result("setUpClass (tempest.api.compute.a.C)", results.FAILED),
    ]
    lines = results.rst_table(found).splitlines()
    assert lines[lines.index("   * - ``a.B``") + 1 :][:3] == ["     - 1", "     - 0", "     - 1"]
    assert lines[lines.index("   * - ``a.C``") + 1 :][:3] == ["     - 0", "     - 1", "     - 0"]


def test_template_is_filled_in_completely_for_the_local_cloud() -> None:
    text = config.render(_LOCAL)
    assert "${" not in text and "$" not in text
    assert "uri_v3 = http://127.0.0.1:5000/v3" in text
    assert "resize = True" in text
    assert f"flavor_ref_alt = {FLAVORS[1][0]}" in text


def test_template_declares_the_filters_the_local_cloud_enables() -> None:
    text = config.render(_LOCAL)
    declared = re.search(r"^scheduler_enabled_filters = (.*)$", text, re.M)
    assert declared is not None
    assert tuple(declared.group(1).split(",")) == ENABLED_FILTERS


def test_render_names_every_missing_placeholder() -> None:
    values = {k: v for k, v in _LOCAL.items() if k not in ("image_ref", "auth_url")}
    with pytest.raises(config.ConfigError, match="auth_url, image_ref$"):
        config.render(values)


def test_another_cloud_from_openrc_and_tempest_variables() -> None:
    values = config.from_environment(
        {
            "OS_AUTH_URL": "https://keystone.example:5000/",
            "OS_USERNAME": "ops",
            "OS_PASSWORD": "pw",
            "OS_PROJECT_NAME": "admin",
            "OS_PROJECT_DOMAIN_NAME": "Ops",
            "TEMPEST_IMAGE_REF": "i1",
            "TEMPEST_IMAGE_REF_ALT": "i2",
            "TEMPEST_FLAVOR_REF": "f1",
            "TEMPEST_FLAVOR_REF_ALT": "f2",
            "UNRELATED": "x",
        }
    )
    assert values["auth_url"] == "https://keystone.example:5000/v3"
    assert values["admin_domain_name"] == "Ops"
    text = config.render({**values, "log_file": "l", "lock_path": "p"})
    assert "admin_username = ops" in text and "image_ref_alt = i2" in text


def test_every_exclusion_is_a_regex_within_the_selection() -> None:
    lines = [
        line.split("#", 1)[0].strip()
        for line in run.EXCLUDE.read_text().splitlines()
        if line.split("#", 1)[0].strip()
    ]
    assert lines
    selection = re.compile(run.REGEX)
    for line in lines:
        pattern = re.compile(line)
        module = pattern.pattern.split(r"\.\w+")[0].replace("\\", "")
        assert selection.match(module + "."), line


def test_all_runs_the_whole_package_and_waits_longer() -> None:
    whole = run.parse_args(["--all"])
    assert whole.regex == run.ALL_REGEX and whole.timeout == 5400.0
    assert re.match(whole.regex, "tempest.api.compute.keypairs.test_keypairs.KeyPairsV2TestJSON")
    default = run.parse_args([])
    assert default.regex == run.REGEX and default.timeout == 900.0
    assert not re.match(default.regex, "tempest.api.compute.volumes.test_volumes_get.V")
    assert run.parse_args(["--all", "--timeout", "60"]).timeout == 60.0
    with pytest.raises(SystemExit):
        run.parse_args(["--all", "--regex", "x"])
