"""Shared core below every pipeline: stored shapes, ports, store keys, errors and text utilities."""
