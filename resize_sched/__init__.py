"""resize_sched: a conductor and scheduler with pluggable Placement claim strategies."""

import warnings

# NOTE: oslo.messaging imports oslo.service, whose backends import futurist,
# which imports eventlet whenever it is installed (oslo.service depends on
# it); eventlet then warns, in nine lines on stderr, that it is deprecated.
# Nothing here runs on eventlet (threads and cotyledon processes), and the
# import cannot be avoided while eventlet is installed, so that one warning,
# and no other, is ignored before any command imports oslo.messaging.
warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated", category=Warning)
