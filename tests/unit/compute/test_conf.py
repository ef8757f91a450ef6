"""``[compute]`` and ``[fake_driver]``: parsing, validation, the inventory they ask for."""

import pathlib

import pytest
from oslo_config import cfg

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.compute.driver.fake import FakeDriver
from resize_sched.compute.inventory import inventory_from_conf, inventory_matches
from resize_sched.conf import fake_driver


def _RATIO4(total: int, reserved: int) -> tuple[int, int, float]:
    return (total, reserved, 4.0)


def _conf(tmp_path: pathlib.Path, text: str = "") -> cfg.ConfigOpts:
    path = tmp_path / "rs.conf"
    path.write_text(text)
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(path)])
    return conf


def test_fail_on_items_for_this_host(tmp_path: pathlib.Path) -> None:
    conf = _conf(
        tmp_path,
        "[DEFAULT]\nhost = c1\n"
        "[fake_driver]\nfail_on = c1:spawn, c2:revert ,c1:finish_resize\ndelay_s = 0.5\n",
    )
    assert conf.fake_driver.fail_on == ["c1:spawn", "c2:revert", "c1:finish_resize"]
    assert fake_driver.failing_operations(conf, "c1") == {"spawn", "finish_resize"}
    assert fake_driver.failing_operations(conf, "c3") == frozenset()
    driver = FakeDriver.from_conf(conf)
    assert (driver.host, driver.delay_s, driver.fail_on) == (
        "c1",
        0.5,
        {"spawn", "finish_resize"},
    )


def test_fail_on_defaults_to_nothing(tmp_path: pathlib.Path) -> None:
    conf = _conf(tmp_path)
    assert conf.fake_driver.fail_on == []
    assert conf.fake_driver.delay_s == 0.0


@pytest.mark.parametrize(
    ("item", "complaint"),
    [
        ("c1", "not HOST:OPERATION"),
        (":spawn", "not HOST:OPERATION"),
        ("c 1:spawn", "not HOST:OPERATION"),
        ("c1:reboot", "unknown operation 'reboot'"),
        ("c1:", "unknown operation ''"),
    ],
)
def test_bad_fail_on_item_is_refused_clearly(
    tmp_path: pathlib.Path, item: str, complaint: str
) -> None:
    conf = _conf(tmp_path, f"[DEFAULT]\nhost = c1\n[fake_driver]\nfail_on = c2:spawn,{item}\n")
    with pytest.raises(ValueError, match="fail_on") as info:
        FakeDriver.from_conf(conf)
    assert complaint in str(info.value)
    assert "rs.conf" in str(info.value)  # oslo.config names the file


def test_bad_fail_on_override_is_refused_at_once() -> None:
    conf = rs_conf.new_conf()
    with pytest.raises(ValueError, match="known operations: spawn, prep_resize"):
        conf.set_override("fail_on", ["c1:nap"], group="fake_driver")


def test_inventory_from_defaults(tmp_path: pathlib.Path) -> None:
    inventory = inventory_from_conf(_conf(tmp_path))
    assert inventory == {
        "VCPU": _record(8, 0, 1.0),
        "MEMORY_MB": _record(16384, 512, 1.0),
        "DISK_GB": _record(500, 0, 1.0),
    }


def test_inventory_reserved_and_ratios(tmp_path: pathlib.Path) -> None:
    conf = _conf(
        tmp_path,
        "[compute]\nvcpus = 4\nmemory_mb = 8192\ndisk_gb = 100\nreserved_host_cpus = 1\n"
        "reserved_host_memory_mb = 1024\nreserved_host_disk_mb = 1025\n"
        "cpu_allocation_ratio = 4.0\nram_allocation_ratio = 1.5\ndisk_allocation_ratio = 2\n",
    )
    assert inventory_from_conf(conf) == {
        "VCPU": _record(4, 1, 4.0),
        "MEMORY_MB": _record(8192, 1024, 1.5),
        "DISK_GB": _record(100, 2, 2.0),  # 1025 MiB rounds up to 2 GiB
    }


def test_reserved_above_total_is_a_configuration_error(tmp_path: pathlib.Path) -> None:
    conf = _conf(tmp_path, "[compute]\nvcpus = 2\nreserved_host_cpus = 3\n")
    with pytest.raises(exception.ConfigurationError, match="reserved_host_cpus"):
        inventory_from_conf(conf)


@pytest.mark.parametrize(
    "sets, cpus",
    [
        ("", {"VCPU": _RATIO4(8, 1)}),
        ("cpu_shared_set = 0-3\n", {"VCPU": _RATIO4(4, 1)}),
        ("cpu_dedicated_set = 4-7\n", {"PCPU": (4, 0, 1.0)}),
        (
            "cpu_shared_set = 0-1\ncpu_dedicated_set = 2-7,^5\n",
            {"VCPU": _RATIO4(2, 1), "PCPU": (5, 0, 1.0)},
        ),
        (
            "cpu_shared_set = ^1,0-2\ncpu_dedicated_set = 1\n",
            {"VCPU": _RATIO4(2, 1), "PCPU": (1, 0, 1.0)},
        ),
    ],
)
def test_cpu_sets_divide_the_host_cpus_into_vcpu_and_pcpu_as_nova(
    tmp_path: pathlib.Path, sets: str, cpus: dict
) -> None:
    """Nova's libvirt driver: the shared set is VCPU (ratio, reserved), the
    dedicated set PCPU (ratio 1, nothing reserved); a dedicated set alone
    leaves no VCPU; neither set, every CPU is VCPU."""
    conf = _conf(
        tmp_path,
        "[compute]\nvcpus = 8\nreserved_host_cpus = 1\ncpu_allocation_ratio = 4.0\n" + sets,
    )
    inventory = inventory_from_conf(conf)
    assert {rc: inventory[rc] for rc in ("VCPU", "PCPU") if rc in inventory} == {
        rc: _record(*args) for rc, args in cpus.items()
    }


@pytest.mark.parametrize(
    "sets, complaint",
    [
        ("cpu_shared_set = 0-3\ncpu_dedicated_set = 3-5\n", r"CPUs \[3\] are in both"),
        ("cpu_dedicated_set = 6-9\n", r"names CPUs \[8, 9\] this host does not have"),
        ("cpu_dedicated_set = 2-x\n", "is not a CPU or range"),
        ("cpu_shared_set = 0,^0\n", "names no CPU"),
        ("cpu_shared_set = 0\nreserved_host_cpus = 2\n", "reserved_host_cpus"),
    ],
)
def test_bad_cpu_sets_stop_the_service_at_start(
    tmp_path: pathlib.Path, sets: str, complaint: str
) -> None:
    conf = _conf(tmp_path, "[compute]\nvcpus = 8\n" + sets)
    with pytest.raises(exception.ConfigurationError, match=complaint):
        inventory_from_conf(conf)


def test_inventory_matches_tolerates_single_precision_ratios() -> None:
    wanted = {"VCPU": _record(4, 0, 1.1)}
    assert inventory_matches({"VCPU": _record(4, 0, 1.100000023841858)}, wanted)
    assert not inventory_matches({"VCPU": _record(4, 0, 1.2)}, wanted)
    assert not inventory_matches({"VCPU": _record(5, 0, 1.1)}, wanted)
    assert not inventory_matches({}, wanted)
    assert not inventory_matches({**wanted, "CUSTOM_X": _record(1, 0, 1.0)}, wanted)


def _record(total: int, reserved: int, ratio: float) -> dict:
    return {
        "total": total,
        "reserved": reserved,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": ratio,
    }
