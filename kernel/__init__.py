"""The passageway microkernel.

It owns the flow (connector → sync → chunking → embedding → storage, and question → embedding →
candidates → ranking and gate → transport) and every ``await``; the stages are pluggy plugins.
Nothing heavy is imported at module level, so ``passageway --help`` stays fast.
"""
