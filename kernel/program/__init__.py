"""The child-program driver every long- or short-lived program goes through: connectors (one
process per call, ``kernel/connector/runner.py``) and command embedders (one long-lived process,
``builtin/embedders/embed_command.py``).

``driver`` spawns a program in a session of its own, reads and masks its stderr, and ends it;
``processes`` kills a program with everything it started and closes our ends of its pipes.
It imports no path folder (``tests/test_layout.py``).
"""
