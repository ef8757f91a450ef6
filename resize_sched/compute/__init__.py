"""The compute service: one per host, with a fake hypervisor driver."""
