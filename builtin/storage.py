"""Builtin plugin: storage (being built)."""
