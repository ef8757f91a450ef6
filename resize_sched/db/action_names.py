"""The instance-action names and event results, as Nova's ``instance_actions`` spells them.

What the API records when it accepts a request (``action_api.STOP``...), what
each step names the actions it belongs to, and how an event ended. Plain
words with no database behind them: :mod:`resize_sched.db.action_api`
re-exports them all.
"""

#: The action names, as Nova's ``instance_actions`` module spells them.
CREATE = "create"
RESIZE = "resize"
MIGRATE = "migrate"
CONFIRM_RESIZE = "confirmResize"
REVERT_RESIZE = "revertResize"
DELETE = "delete"
STOP = "stop"
START = "start"
RESET_STATE = "resetState"
LIVE_MIGRATION = "live-migration"
EVACUATE = "evacuate"
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelveOffload"
UNSHELVE = "unshelve"

#: The actions a resize's steps belong to: a cold migration (``migrate``)
#: runs the same steps, and a server has one of them in flight at a time.
RESIZE_OR_MIGRATE = (RESIZE, MIGRATE)

#: Event results.
SUCCESS = "Success"
ERROR = "Error"
