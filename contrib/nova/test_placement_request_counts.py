# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Count the Placement requests Nova makes per resize, confirm and revert.

Not part of the patch series: contrib/nova/run.sh copies this module into
the unpacked Nova tree as nova/tests/functional/test_contrib_placement_counts.py
and runs it on patched and unpatched Nova alike. Every request of the
SchedulerReportClient is counted (the one client all Nova services use) and
attributed to the service whose code made it. The counts of each phase are
appended as JSON lines to the file named by NOVA_PLACEMENT_COUNTS_FILE.

Each test also checks the allocations after every phase, so a count is only
recorded for a resize that left Placement as it should.
"""

import collections
import json
import os
import sys

import fixtures

import nova.conf
from nova.scheduler.client import report
from nova.tests.functional import integrated_helpers

CONF = nova.conf.CONF


def _service_of_caller():
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if '/nova/compute/' in filename:
            return 'compute'
        if '/nova/conductor/' in filename:
            return 'conductor'
        if filename.endswith('/nova/scheduler/manager.py'):
            return 'scheduler'
        frame = frame.f_back
    return 'other'


class PlacementRequestCounter(fixtures.Fixture):
    """Records every Placement request made through the report client."""

    def _setUp(self):
        self.calls = []
        for method in ('get', 'post', 'put', 'delete'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova.scheduler.client.report.SchedulerReportClient.' + method,
                self._wrap(method, getattr(report.SchedulerReportClient,
                                           method))))

    def _wrap(self, method, orig):
        def wrapper(client, url, *args, **kwargs):
            self.calls.append(
                (_service_of_caller(), method.upper(), url.split('?')[0]))
            return orig(client, url, *args, **kwargs)
        return wrapper

    def take(self):
        calls, self.calls = self.calls, []
        return calls


class _PlacementRequestCountsMixin(object):
    compute_driver = 'fake.MediumFakeDriver'
    strategy = 'legacy'

    def setUp(self):
        super().setUp()
        if self.strategy != 'legacy':
            if 'resize_claim_strategy' not in CONF.scheduler:
                self.skipTest('Nova without the resize claim strategies')
            self.flags(resize_claim_strategy=self.strategy,
                       group='scheduler')
        self.flags(allow_resize_to_same_host=True)
        self.old_flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'old', 'vcpus': 1, 'ram': 1024, 'disk': 10}})
        self.new_flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'new', 'vcpus': 2, 'ram': 2048, 'disk': 20}})
        self.counter = self.useFixture(PlacementRequestCounter())

    def _record(self, scenario, phase):
        calls = self.counter.take()
        by_service = collections.Counter(service for service, _, _ in calls)
        row = {
            'strategy': self.strategy, 'scenario': scenario, 'phase': phase,
            'total': len(calls),
            'conductor_scheduler': (by_service['conductor'] +
                                    by_service['scheduler']),
            'compute': by_service['compute'],
            'other': by_service['other'],
            'calls': calls,
        }
        path = os.environ.get('NOVA_PLACEMENT_COUNTS_FILE')
        if path:
            with open(path, 'a') as f:
                f.write(json.dumps(row) + '\n')

    def _resize(self, server):
        self.api.post_server_action(
            server['id'], {'resize': {'flavorRef': self.new_flavor['id']}})
        self.notifier.wait_for_versioned_notifications(
            'instance.resize_finish.end')
        return self._wait_for_state_change(server, 'VERIFY_RESIZE')

    def _run(self, scenario, source_rp, dest_rp, dest_host):
        server = self._boot_and_check_allocations(self.old_flavor, 'host1')
        self.counter.take()

        server = self._resize(server)
        self.assertEqual(dest_host, server['OS-EXT-SRV-ATTR:host'])
        self._record(scenario, 'resize')
        if source_rp != dest_rp:
            self.assertFlavorMatchesAllocation(
                self.new_flavor, server['id'], dest_rp)
        elif self.strategy == 'max_flavor':
            # The new flavor is larger in every class: the node holds it
            # alone (the migration the old flavor, the server the rest).
            self.assertFlavorMatchesUsage(dest_rp, self.new_flavor)
        else:
            self.assertFlavorMatchesUsage(
                dest_rp, self.old_flavor, self.new_flavor)

        self._revert_resize(server)
        self._record(scenario, 'revert')
        self.assertFlavorMatchesUsage(source_rp, self.old_flavor)
        self.assertFlavorMatchesAllocation(
            self.old_flavor, server['id'], source_rp)

        server = self._resize(server)
        self.counter.take()
        self._confirm_resize(server)
        self._record(scenario, 'confirm')
        self.assertFlavorMatchesUsage(dest_rp, self.new_flavor)
        self.assertFlavorMatchesAllocation(
            self.new_flavor, server['id'], dest_rp)

    def test_same_host(self):
        self._start_compute('host1')
        rp1 = self._get_provider_uuid_by_host('host1')
        self._run('same_host', rp1, rp1, 'host1')

    def test_other_host(self):
        self._start_compute('host1')
        self._start_compute('host2')
        rp1 = self._get_provider_uuid_by_host('host1')
        rp2 = self._get_provider_uuid_by_host('host2')
        # host2 has more free memory once the server runs on host1, so the
        # scheduler weighs it first.
        self._run('other_host', rp1, rp2, 'host2')


class LegacyPlacementRequestCounts(
    _PlacementRequestCountsMixin,
    integrated_helpers.ProviderUsageBaseTestCase,
):
    strategy = 'legacy'


class MaxFlavorPlacementRequestCounts(
    _PlacementRequestCountsMixin,
    integrated_helpers.ProviderUsageBaseTestCase,
):
    strategy = 'max_flavor'
