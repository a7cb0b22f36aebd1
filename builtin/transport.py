"""Builtin plugin: transport (being built)."""
