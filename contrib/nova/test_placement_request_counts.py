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

"""Count the Placement requests Nova makes per resize, confirm and revert,
and per cold migration, live migration and evacuation.

Not part of the patch series: contrib/nova/run.sh copies this module into
the unpacked Nova tree as nova/tests/functional/test_contrib_placement_counts.py
and runs it on patched and unpatched Nova alike. Every request of the
SchedulerReportClient is counted (the one client all Nova services use) and
attributed to the service whose code made it. The counts of each phase are
appended as JSON lines to the file named by NOVA_PLACEMENT_COUNTS_FILE.

Each test also checks the allocations after every phase, so a count is only
recorded for a move that left Placement as it should.
"""

import collections
import json
import os
import sys
import time

import fixtures

import nova.conf
from nova import context as nova_context
from nova.db.main import api as nova_db
from nova.scheduler.client import report
from nova.tests.functional import integrated_helpers
from nova.virt import fake

CONF = nova.conf.CONF


#: The compute manager's clean-up of the servers evacuated from its host,
#: run when its service starts again.
EVACUATION_CLEAN_UP = '_destroy_evacuated_instances'


def _in_evacuation_clean_up():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == EVACUATION_CLEAN_UP:
            return True
        frame = frame.f_back
    return False


def _service_of_caller():
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.endswith('/nova/compute/api.py'):
            # nova-api's checks (a cold migration reads the source's traits).
            return 'api'
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
        #: the indexes in calls of the requests made by the evacuation
        #: clean-up of a restarting compute service
        self.clean_up = set()
        for method in ('get', 'post', 'put', 'delete'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova.scheduler.client.report.SchedulerReportClient.' + method,
                self._wrap(method, getattr(report.SchedulerReportClient,
                                           method))))

    def _wrap(self, method, orig):
        def wrapper(client, url, *args, **kwargs):
            if _in_evacuation_clean_up():
                self.clean_up.add(len(self.calls))
            self.calls.append(
                (_service_of_caller(), method.upper(), url.split('?')[0]))
            return orig(client, url, *args, **kwargs)
        return wrapper

    def take(self):
        calls, self.calls = self.calls, []
        self.clean_up = set()
        return calls

    def take_split(self):
        """(the requests of the evacuation clean-up, the others)."""
        clean_up = self.clean_up
        calls = self.take()
        return ([c for i, c in enumerate(calls) if i in clean_up],
                [c for i, c in enumerate(calls) if i not in clean_up])

    def settle(self, quiet=1.0, timeout=20.0):
        """Wait until no request has been made for ``quiet`` seconds: what
        a move's last casts do after the state the test waited for."""
        deadline = time.monotonic() + timeout
        seen, since = len(self.calls), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if len(self.calls) != seen:
                seen, since = len(self.calls), time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
        raise AssertionError('Placement requests did not stop')


class _RecordingMixin(object):
    """Appends the requests of a phase to NOVA_PLACEMENT_COUNTS_FILE."""

    def _record(self, scenario, phase, calls=None, **extra):
        if calls is None:
            calls = self.counter.take()
        by_service = collections.Counter(service for service, _, _ in calls)
        row = {
            'strategy': self.strategy, 'scenario': scenario, 'phase': phase,
            'total': len(calls),
            'conductor_scheduler': (by_service['conductor'] +
                                    by_service['scheduler']),
            'compute': by_service['compute'],
            'api': by_service['api'],
            'other': by_service['other'],
            'calls': calls,
        }
        row.update(extra)
        path = os.environ.get('NOVA_PLACEMENT_COUNTS_FILE')
        if path:
            with open(path, 'a') as f:
                f.write(json.dumps(row) + '\n')


class _PlacementRequestCountsMixin(_RecordingMixin):
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


_NO_USAGE = {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}


class _MoveRequestCountsMixin(_RecordingMixin):
    """A cold migration (migrate, confirm, revert), a live migration (to the
    hand-over, then its completion, or a rollback from the source driver's
    failure) and an evacuation (its source compute forced down, then started
    again) of a server from host1 to host2, with Nova's fake driver: the
    Placement requests of each phase.

    A phase is counted from the API call until the state the test waits for
    and then until no request has been made for a second (what the move's
    last casts still do).
    """
    compute_driver = 'fake.MediumFakeDriver'
    strategy = 'legacy'

    def setUp(self):
        super().setUp()
        if self.strategy != 'legacy':
            if 'resize_claim_strategy' not in CONF.scheduler:
                self.skipTest('Nova without the resize claim strategies')
            self.flags(resize_claim_strategy=self.strategy,
                       group='scheduler')
        self.flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'move', 'vcpus': 1, 'ram': 1024, 'disk': 10}})
        self._start_compute('host1')
        self._start_compute('host2')
        self.rp1 = self._get_provider_uuid_by_host('host1')
        self.rp2 = self._get_provider_uuid_by_host('host2')
        self.counter = self.useFixture(PlacementRequestCounter())

    def _boot(self):
        server = self._boot_and_check_allocations(self.flavor, 'host1')
        self.counter.settle()
        self.counter.take()
        return server

    def _assert_on(self, consumer, rp):
        """``consumer`` holds the flavor on ``rp`` and nothing elsewhere."""
        allocations = self._get_allocations_by_server_uuid(consumer)
        self.assertEqual([rp], list(allocations))
        self.assertFlavorMatchesAllocation(self.flavor, consumer, rp)

    def _assert_usage(self, rp_with_server, rp_without):
        self.assertFlavorMatchesUsage(rp_with_server, self.flavor)
        self.assertRequestMatchesUsage(_NO_USAGE, rp_without)

    def _wait_for_allocations(self, consumer, rps):
        """Wait until ``consumer`` holds something on ``rps`` alone (read
        straight from Placement, not through the counted client)."""
        for _ in range(100):
            if set(self._get_allocations_by_server_uuid(consumer)) == set(rps):
                return
            time.sleep(0.1)
        self.fail('%s holds %s, expected %s' % (
            consumer, self._get_allocations_by_server_uuid(consumer), rps))

    def _migration_uuid(self, server):
        ctxt = nova_context.get_admin_context()
        migrations = nova_db.migration_get_all_by_filters(
            ctxt, {'instance_uuid': server['id']})
        return max(migrations, key=lambda m: m.id).uuid

    # -- cold migration -------------------------------------------------

    def _migrate(self, server, nth):
        self.api.post_server_action(server['id'], {'migrate': None})
        self.notifier.wait_for_versioned_notifications(
            'instance.resize_finish.end', n_events=nth)
        server = self._wait_for_state_change(server, 'VERIFY_RESIZE')
        self.counter.settle()
        return server

    def test_cold_migration(self):
        server = self._boot()

        server = self._migrate(server, 1)
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        self._record('cold_migration', 'migrate')
        # The migration holds the source, the server the destination.
        self._assert_on(server['id'], self.rp2)
        self._assert_on(self._migration_uuid(server), self.rp1)

        self._revert_resize(server)
        self.counter.settle()
        self._record('cold_migration', 'revert')
        self._assert_on(server['id'], self.rp1)
        self.assertEqual({}, self._get_allocations_by_server_uuid(
            self._migration_uuid(server)))
        self._assert_usage(self.rp1, self.rp2)

        server = self._migrate(server, 2)
        self.counter.take()
        self._confirm_resize(server)
        self.counter.settle()
        self._record('cold_migration', 'confirm')
        self._assert_on(server['id'], self.rp2)
        self.assertEqual({}, self._get_allocations_by_server_uuid(
            self._migration_uuid(server)))
        self._assert_usage(self.rp2, self.rp1)

    # -- live migration -------------------------------------------------

    def _live_migrate(self, server):
        self.api.post_server_action(server['id'], {'os-migrateLive': {
            'host': None, 'block_migration': 'auto'}})

    def test_live_migration(self):
        server = self._boot()
        test = self
        handed_over = []
        real = fake.FakeDriver.live_migration

        def live_migration(driver, *args, **kwargs):
            # The destination is claimed and prepared: the hand-over starts.
            handed_over.append(test.counter.take())
            return real(driver, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.FakeDriver.live_migration', live_migration))
        self._live_migrate(server)
        migration = self._wait_for_migration_status(server, ['completed'])
        self._wait_for_server_parameter(
            server, {'OS-EXT-SRV-ATTR:host': 'host2', 'status': 'ACTIVE'})
        # The source's allocation (the migration's) is deleted after the
        # migration is marked completed.
        self._wait_for_allocations(migration['uuid'], [])
        self.counter.settle()
        self.assertEqual(1, len(handed_over))
        self._record('live_migration', 'to_handover', calls=handed_over[0])
        self._record('live_migration', 'completion')
        self._assert_on(server['id'], self.rp2)
        self._assert_usage(self.rp2, self.rp1)

    def test_live_migration_rollback(self):
        server = self._boot()
        test = self
        claimed = []

        def live_migration(driver, context, instance, dest, post_method,
                           recover_method, block_migration=False,
                           migrate_data=None):
            # The destination is claimed and prepared; the hand-over fails
            # as a driver reports it, through the rollback callback.
            claimed.append(test.counter.take())
            recover_method(context, instance, dest, migrate_data)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.FakeDriver.live_migration', live_migration))
        self._live_migrate(server)
        migration = self._wait_for_migration_status(server, ['failed'])
        self._wait_for_server_parameter(
            server, {'OS-EXT-SRV-ATTR:host': 'host1', 'status': 'ACTIVE'})
        self._wait_for_allocations(migration['uuid'], [])
        self._wait_for_allocations(server['id'], [self.rp1])
        self.counter.settle()
        self.assertEqual(1, len(claimed))
        self._record('live_migration', 'to_failure', calls=claimed[0])
        self._record('live_migration', 'rollback')
        self._assert_on(server['id'], self.rp1)
        self._assert_usage(self.rp1, self.rp2)

    # -- evacuation -----------------------------------------------------

    def test_evacuation(self):
        server = self._boot()
        service = self.admin_api.get_services(
            host='host1', binary='nova-compute')[0]['id']
        self.computes['host1'].stop()
        # Forced down, so as not to wait for the service group to time out.
        self.admin_api.put_service(service, {'forced_down': 'true'})
        self.counter.settle()
        self.counter.take()

        self.api.post_server_action(server['id'], {'evacuate': {}})
        self._wait_for_migration_status(server, ['done'])
        self._wait_for_server_parameter(
            server, {'OS-EXT-SRV-ATTR:host': 'host2',
                     'OS-EXT-STS:task_state': None})
        self.counter.settle()
        self._record('evacuation', 'evacuate')
        # The server holds both hosts until the source's compute is back.
        self._check_allocation_during_evacuate(
            self.flavor, server['id'], self.rp1, self.rp2)

        self.computes['host1'] = self.restart_compute_service(
            self.computes['host1'])
        self.admin_api.put_service(service, {'forced_down': 'false'})
        self._wait_for_allocations(server['id'], [self.rp2])
        self.counter.settle()
        clean_up, restart = self.counter.take_split()
        # Only the clean-up of the evacuated server is the move's; the rest
        # is the service's start (its provider tree, inventory, traits).
        self._record('evacuation', 'source_back', calls=clean_up,
                     restart_total=len(restart))
        self._assert_on(server['id'], self.rp2)
        self._assert_usage(self.rp2, self.rp1)


class LegacyMoveRequestCounts(
    _MoveRequestCountsMixin,
    integrated_helpers.ProviderUsageBaseTestCase,
):
    strategy = 'legacy'


class MaxFlavorMoveRequestCounts(
    _MoveRequestCountsMixin,
    integrated_helpers.ProviderUsageBaseTestCase,
):
    strategy = 'max_flavor'
