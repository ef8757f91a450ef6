"""resize_sched: a conductor and scheduler with pluggable Placement claim strategies."""
