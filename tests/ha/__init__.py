"""High-availability runs: the services over clustered backends, under faults.

:mod:`tests.ha.cluster` starts, on loopback, a RabbitMQ cluster (quorum
queues) and a MariaDB Galera cluster of their own, and injects the faults
(SIGKILL of a node, a full broker stop and start, a stopped application, a
Galera node's rejoin). Its own check, ``test_cluster.py``, runs only with
``RESIZE_SCHED_TEST_HA=1`` (``tox -e ha``).
"""
