"""longdoc: cited clause extraction from long documents.

Domain code lives in :mod:`longdoc.domain`, typed interfaces in :mod:`longdoc.ports`,
their implementations in :mod:`longdoc.adapters`. Nothing here imports Lambda code.
"""

__version__ = "0.1.0"
