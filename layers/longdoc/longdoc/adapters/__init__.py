"""Adapters behind the ports of :mod:`longdoc.core.ports`: each cloud service and its local stand-in."""
