"""Offline evaluation of retrieval and extraction against gold cases (``longdoc eval ...``)."""
