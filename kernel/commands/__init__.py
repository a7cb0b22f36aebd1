"""The subcommands of ``passageway``; :data:`passageway.kernel.cli.COMMANDS` lists them."""
