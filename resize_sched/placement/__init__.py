"""The Placement API client (and, beside it, the allocation executor)."""
