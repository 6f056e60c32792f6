"""longdoc: cited clause extraction from long documents.

Packages by pipeline stage, each importing only downward: :mod:`longdoc.ingest` and
:mod:`longdoc.extract` (never each other) over the shared :mod:`longdoc.core` (stored shapes,
ports, store keys, errors, text utilities); :mod:`longdoc.adapters` implement the ports;
:mod:`longdoc.wiring`, :mod:`longdoc.local`, :mod:`longdoc.eval` and :mod:`longdoc.cli` sit on
top. Nothing here imports Lambda code; docs/architecture.md draws the import graph.
"""

__version__ = "0.1.0"
