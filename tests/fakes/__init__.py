"""Loopback fakes of external HTTP APIs for tests (never touch the internet)."""
