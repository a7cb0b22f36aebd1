"""Builtin plugin: embedders (being built)."""
