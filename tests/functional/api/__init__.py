"""Functional tests of the API service: real database, real RPC transport."""
