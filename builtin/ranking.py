"""Builtin plugin: ranking (being built)."""
