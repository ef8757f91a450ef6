"""A filter installed by entry point, outside the tree, is loaded by name.

A tiny distribution (a module and its ``entry_points.txt``) is made in a
temporary directory put on ``sys.path``, as ``pip install`` of a plug-in
would leave it; ``[filter_scheduler] enabled_filters`` names it.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from stevedore import extension

from resize_sched import exception
from resize_sched.scheduler import plugins
from resize_sched.scheduler.filters import FilterChain
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from tests.unit.scheduler.test_filters import _conf

MODULE = '''
from resize_sched.scheduler.filters import BaseHostFilter


class EvenHostFilter(BaseHostFilter):
    """Only hosts whose name ends in an even digit."""

    run_filter_once_per_request = True

    def host_passes(self, host_state, request):
        return int(host_state.host[-1]) % 2 == 0


class NotAFilter:
    pass
'''


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "even_filter.py").write_text(textwrap.dedent(MODULE))
    info = tmp_path / "even_filter-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: even-filter\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[resize_sched.scheduler.filters]\n"
        "EvenHostFilter = even_filter:EvenHostFilter\n"
        "NotAFilter = even_filter:NotAFilter\n"
        "BrokenFilter = no_such_module:Nothing\n"
    )
    sys.path.insert(0, str(tmp_path))
    extension.ExtensionManager.ENTRY_POINT_CACHE.clear()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("even_filter", None)
        extension.ExtensionManager.ENTRY_POINT_CACHE.clear()


def test_a_third_party_filter_is_loaded_and_run(installed: Path) -> None:
    assert "EvenHostFilter" in plugins.installed(plugins.FILTERS)
    chain = FilterChain(_conf(), ["ComputeFilter", "EvenHostFilter"])
    hosts = [HostState(f"rp{i}", f"h{i}") for i in range(5)]
    kept, removed = chain.run(hosts, SchedulingRequest(destination_request={"VCPU": 1}))
    assert [h.host for h in kept] == ["h0", "h2", "h4"]
    assert removed == [("EvenHostFilter", 2)]


def test_without_it_the_name_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(exception.SchedulerPluginNotFound, match="EvenHostFilter"):
        FilterChain(_conf(), ["EvenHostFilter"])


@pytest.mark.parametrize(
    "name, why", [("NotAFilter", "not a BaseHostFilter"), ("BrokenFilter", "failed to import")]
)
def test_a_bad_plug_in_is_refused_by_name(installed: Path, name: str, why: str) -> None:
    with pytest.raises(exception.SchedulerPluginLoadFailed, match=why) as caught:
        FilterChain(_conf(), [name])
    assert name in str(caught.value)
