"""Packaged data files for longdoc (the default clause-type catalogue)."""
