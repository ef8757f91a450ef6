"""The soak's clients: threads driving the Compute API over plain HTTP.

Each :class:`Client` owns a few servers and, with a random generator of its
own (from the soak's seed and its index), creates them, resizes them to
another flavor, moves them (a cold migration, a live migration, a shelve,
an offload, an unshelve: the *moves*, each of which may be left out),
confirms or reverts a resize or cold migration, and deletes them. What only
an administrator may ask by Nova's default policies (``migrate``,
``os-migrateLive``, ``shelveOffload``) is sent with the noauth2
administrator's token of the same project; the rest as the project's
member. After an accepted operation it often deletes the server
at a random moment instead of waiting, so deletes land during every kind
of operation (``delete during create`` and so on in the report). Every
answer is counted in the shared :class:`Tally` by operation and outcome:

``ok``
    accepted, and the server reached the state the operation promises.
``refused``
    the API answered 4xx (409 for a state the action does not fit, 404 for
    a server a delete took meanwhile): a fair answer under races.
``failed``
    accepted, but it ended without its effect: no valid host, a revert
    refused for room, a live migration rolled back to its source, an
    unshelve left offloaded, ERROR.
``timeout``
    accepted, still moving when the client stopped waiting (``op_timeout``).
``unfinished``
    accepted, still moving when the soak's chaos ended (the client stops
    waiting then; the final check judges where it ends).
``error``
    the API answered 5xx, or could not be reached.

Every delete the API accepts is remembered: the final check requires each
to be done.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any

import requests

#: Statuses a server rests in (with no task).
RESTING = ("ACTIVE", "VERIFY_RESIZE", "ERROR", "SHELVED", "SHELVED_OFFLOADED")
#: The moves, each of which the soak may leave out (``--moves``).
MOVES = ("migrate", "live-migrate", "shelve")
OPERATIONS = (
    "create",
    "resize",
    "migrate",
    "live-migrate",
    "confirm",
    "revert",
    "shelve",
    "offload",
    "unshelve",
    "delete",
)
#: An ACTIVE server's next operation, by weight: resizes stay the most
#: frequent; each move is drawn about a third as often.
ACTIVE_WEIGHTS = {"resize": 0.55, "migrate": 0.15, "live-migrate": 0.15, "shelve": 0.15}
#: The microversion of ``os-migrateLive``'s body (``block_migration: auto``).
LIVE_MIGRATE_VERSION = "compute 2.25"
#: noauth2 tokens: the project's member, and an administrator of the same project.
MEMBER_TOKEN = "chaos:chaos"
ADMIN_TOKEN = "admin:chaos"
OUTCOMES = ("ok", "refused", "failed", "timeout", "unfinished", "error", "interrupted")


class Tally:
    """What every client did, shared and locked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ops: collections.Counter[tuple[str, str]] = collections.Counter()
        #: server id -> the operation its accepted delete interrupted.
        self.deletes: dict[str, str] = {}
        self.during: collections.Counter[str] = collections.Counter()
        #: API answers 5xx, with detail (each is also counted as ``error``).
        self.server_errors: list[str] = []
        #: When each 5xx came (``time.time()``), in the order of ``server_errors``.
        self.server_error_times: list[float] = []
        #: Every outcome counted: (began, ended, operation, outcome), wall-clock
        #: seconds (``time.time()``); ``began`` is when the client sent the request.
        self.events: list[tuple[float, float, str, str]] = []

    def count(self, op: str, outcome: str, began: float | None = None) -> None:
        now = time.time()
        with self._lock:
            self.ops[(op, outcome)] += 1
            self.events.append((now if began is None else began, now, op, outcome))

    def deleted(self, server_id: str, during: str) -> None:
        with self._lock:
            self.deletes[server_id] = during
            self.during[during] += 1

    def server_error(self, detail: str) -> None:
        with self._lock:
            self.server_errors.append(detail)
            self.server_error_times.append(time.time())

    def total(self) -> int:
        with self._lock:
            return sum(self.ops.values())


class Api:
    """The Compute API as one noauth2 caller (``token``: ``USER:PROJECT``)."""

    def __init__(self, endpoint: str, tally: Tally, token: str = MEMBER_TOKEN) -> None:
        self.endpoint = endpoint
        self.tally = tally
        self.session = requests.Session()
        self.session.headers.update({"X-Auth-Token": token, "Accept": "application/json"})

    def call(
        self, method: str, path: str, body: Any = None, version: str | None = None
    ) -> requests.Response | None:
        """The answer, or None when the API could not be reached in time."""
        headers = {"OpenStack-API-Version": version} if version else None
        try:
            resp = self.session.request(
                method, self.endpoint + path, json=body, headers=headers, timeout=60
            )
        except requests.RequestException:
            return None
        if resp.status_code >= 500:
            self.tally.server_error(
                f"{method} {path}: {resp.status_code} "
                f"{resp.headers.get('x-openstack-request-id', '')} {resp.text[:200]}"
            )
        return resp

    def show(self, server_id: str) -> dict[str, Any] | None:
        """The server, {} when it is gone (404), None when the API did not answer."""
        resp = self.call("GET", f"/servers/{server_id}")
        if resp is None or resp.status_code >= 500:
            return None
        if resp.status_code == 404:
            return {}
        return resp.json().get("server") if resp.ok else None


def _outcome_of_answer(resp: requests.Response | None) -> str | None:
    """``refused``/``error`` for an answer that is not an acceptance, else None."""
    if resp is None or resp.status_code >= 500:
        return "error"
    if resp.status_code >= 400:
        return "refused"
    return None


class Client(threading.Thread):
    """One client: a loop of operations on its own servers until ``stop``.

    :param index: numbers the client (its servers' names, its generator).
    :param seed: the soak's seed.
    :param endpoint: the Compute API.
    :param flavors: flavor ids to create with and resize between.
    :param tally: where outcomes are counted.
    :param stop: set to end the loop (waits are cut short).
    :param max_servers: how many servers it keeps at most.
    :param delete_during: the chance of deleting right after an accepted action.
    :param op_timeout: how long it waits for an operation to settle.
    :param moves: the moves of :data:`MOVES` in the mix (``shelve`` brings
        ``offload`` and ``unshelve`` with it).
    """

    def __init__(
        self,
        index: int,
        seed: int,
        endpoint: str,
        flavors: list[str],
        tally: Tally,
        stop: threading.Event,
        *,
        max_servers: int = 3,
        delete_during: float = 0.3,
        op_timeout: float = 90.0,
        moves: tuple[str, ...] = MOVES,
    ) -> None:
        super().__init__(name=f"chaos-client-{index}", daemon=True)
        self.index = index
        self.rng = random.Random(f"client-{seed}-{index}")
        self.api = Api(endpoint, tally)
        self.admin = Api(endpoint, tally, ADMIN_TOKEN)
        self.active_ops = [op for op in ACTIVE_WEIGHTS if op == "resize" or op in moves]
        self.active_weights = [ACTIVE_WEIGHTS[op] for op in self.active_ops]
        self.flavors = flavors
        self.tally = tally
        self.stop = stop
        self.max_servers = max_servers
        self.delete_during = delete_during
        self.op_timeout = op_timeout
        self.servers: list[str] = []
        #: server id -> its host when the last live migration was asked.
        self.live_from: dict[str, str | None] = {}
        self.made = 0
        self.crash: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.step()
        except BaseException as exc:  # noqa: BLE001 - reported by the soak as a harness error
            self.crash = exc

    # -- one step -----------------------------------------------------------------------

    def step(self) -> None:
        rng = self.rng
        if not self.servers or (len(self.servers) < self.max_servers and rng.random() < 0.3):
            self.create()
            return
        server_id = rng.choice(self.servers)
        # NOTE: the administrator sees the host, which judges a live migration.
        server = self.admin.show(server_id)
        if server is None:
            self.stop.wait(1.0)
            return
        if not server:
            self.servers.remove(server_id)  # gone: a delete of ours finished
            return
        status, task = server["status"], server.get("OS-EXT-STS:task_state")
        if task is not None or status not in RESTING:
            # NOTE: an earlier operation outlived our wait; deleting it is one
            # more delete during an operation.
            if rng.random() < 0.5:
                self.delete(server_id, f"{status.lower()} (late)")
            else:
                self.stop.wait(1.0)
            return
        if status == "ERROR" or rng.random() < 0.12:
            self.delete(server_id, "idle" if status != "ERROR" else "error")
        elif status == "ACTIVE":
            self.active(server_id, server)
        elif status == "VERIFY_RESIZE":
            if rng.random() < 0.5:
                self.act(server_id, "confirm", {"confirmResize": None})
            else:
                self.act(server_id, "revert", {"revertResize": None})
        elif status == "SHELVED" and rng.random() < 0.5:
            self.act(server_id, "offload", {"shelveOffload": None}, api=self.admin)
        else:  # SHELVED or SHELVED_OFFLOADED
            self.act(server_id, "unshelve", {"unshelve": None})

    def active(self, server_id: str, server: dict[str, Any]) -> None:
        """An ACTIVE server's next operation: a resize or a move."""
        rng = self.rng
        op = rng.choices(self.active_ops, self.active_weights)[0]
        if op == "resize":
            current = str(server.get("flavor", {}).get("id", ""))
            choices = [f for f in self.flavors if f != current] or self.flavors
            self.act(server_id, "resize", {"resize": {"flavorRef": rng.choice(choices)}})
        elif op == "migrate":
            self.act(server_id, "migrate", {"migrate": None}, api=self.admin)
        elif op == "live-migrate":
            self.live_from[server_id] = server.get("OS-EXT-SRV-ATTR:host")
            body = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
            self.act(server_id, "live-migrate", body, api=self.admin, version=LIVE_MIGRATE_VERSION)
        else:
            self.act(server_id, "shelve", {"shelve": None})

    def create(self) -> None:
        self.made += 1
        body = {
            "server": {
                "name": f"chaos-{self.index}-{self.made}",
                "flavorRef": self.rng.choice(self.flavors),
            }
        }
        began = time.time()
        resp = self.api.call("POST", "/servers", body)
        refused = _outcome_of_answer(resp)
        if refused:
            self.tally.count("create", refused, began)
            return
        assert resp is not None
        server_id = resp.json()["server"]["id"]
        self.servers.append(server_id)
        self.settle(server_id, "create", began)

    def act(
        self,
        server_id: str,
        op: str,
        body: dict[str, Any],
        *,
        api: Api | None = None,
        version: str | None = None,
    ) -> None:
        caller = api or self.api
        began = time.time()
        resp = caller.call("POST", f"/servers/{server_id}/action", body, version=version)
        refused = _outcome_of_answer(resp)
        if refused:
            self.tally.count(op, refused, began)
            return
        self.settle(server_id, op, began)

    def settle(self, server_id: str, op: str, began: float | None = None) -> None:
        """After an accepted ``op`` (sent at ``began``): delete at a random
        moment, or wait and judge."""
        if self.rng.random() < self.delete_during:
            self.stop.wait(self.rng.uniform(0.0, 2.0))
            self.tally.count(op, "interrupted", began)
            self.delete(server_id, op)
            return
        server = self.wait(server_id)
        if server is None:
            self.tally.count(op, "unfinished" if self.stop.is_set() else "timeout", began)
            return
        self.tally.count(op, self.judge(op, server), began)

    def judge(self, op: str, server: dict[str, Any]) -> str:
        status = server.get("status")
        if op == "live-migrate":
            # NOTE: a rolled-back live migration leaves the server ACTIVE
            # where it was: only a new host is the move's effect.
            before = self.live_from.pop(server.get("id", ""), None)
            moved = server.get("OS-EXT-SRV-ATTR:host") not in (None, before)
            return "ok" if status == "ACTIVE" and moved else "failed"
        wanted = {
            "create": ("ACTIVE",),
            "resize": ("VERIFY_RESIZE",),
            "migrate": ("VERIFY_RESIZE",),
            "confirm": ("ACTIVE",),
            "revert": ("ACTIVE",),
            # NOTE: [DEFAULT] shelved_offload_time may offload it before we look.
            "shelve": ("SHELVED", "SHELVED_OFFLOADED"),
            "offload": ("SHELVED_OFFLOADED",),
            "unshelve": ("ACTIVE",),
        }[op]
        return "ok" if status in wanted else "failed"

    def delete(self, server_id: str, during: str) -> None:
        began = time.time()
        resp = self.api.call("DELETE", f"/servers/{server_id}")
        refused = _outcome_of_answer(resp)
        if refused:
            self.tally.count("delete", refused, began)
            if resp is not None and resp.status_code == 404:
                self.servers.remove(server_id)
            return
        self.tally.deleted(server_id, during)
        self.servers.remove(server_id)
        deadline = time.monotonic() + self.op_timeout
        while not self.stop.is_set():
            server = self.api.show(server_id)
            if server == {}:
                self.tally.count("delete", "ok", began)
                return
            if time.monotonic() > deadline:
                break
            self.stop.wait(0.5)
        self.tally.count("delete", "unfinished" if self.stop.is_set() else "timeout", began)

    def wait(self, server_id: str) -> dict[str, Any] | None:
        """The server once it rests; None when it did not in time (or we stop)."""
        deadline = time.monotonic() + self.op_timeout
        while not self.stop.is_set() and time.monotonic() < deadline:
            server = self.admin.show(server_id)
            if server == {}:
                return {"status": "DELETED"}
            if server and server["status"] in RESTING and not server.get("OS-EXT-STS:task_state"):
                return server
            self.stop.wait(0.5)
        return None
