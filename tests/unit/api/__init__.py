"""Unit tests of the API service: no database, no transport."""
