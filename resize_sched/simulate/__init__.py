"""The capacity simulation behind ``resize-sched-simulate``.

A cluster is packed to a target utilisation with a realistic mix of flavors,
then the same seeded sequence of resizes is run under each claim strategy,
through the real task flows, scheduler and executor against the real
Placement embedded in this process (:mod:`resize_sched.placement.embedded`),
each from the same starting state:

:mod:`~resize_sched.simulate.cluster`
    the hosts, the flavor mix and the packing;
:mod:`~resize_sched.simulate.oracle`
    which resizes could have succeeded, judged from a snapshot of usage and
    independently of every strategy;
:mod:`~resize_sched.simulate.interleave`
    the concurrency model: worker threads that take turns at every
    Placement request, in an order drawn from the seed;
:mod:`~resize_sched.simulate.run`
    one strategy's run from a copy of the seeded state, and what it counts;
:mod:`~resize_sched.simulate.workload`
    the resize workload: the workers' loop, one resize and the sweep;
:mod:`~resize_sched.simulate.driver`
    the conductor's steps of one move, run in this process (the benchmark
    drives its resizes with it too);
:mod:`~resize_sched.simulate.drain`
    the drain workload: the busiest hosts disabled and their servers
    cold-migrated off while the resizes go on;
:mod:`~resize_sched.simulate.report`
    the table, the JSON document and the plots.
"""
