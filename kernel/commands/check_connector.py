"""``passageway check-connector``: run the connector contract check against any program."""

from __future__ import annotations

import argparse

NAME = "check-connector"
HELP = "check a connector program against the connector protocol (exit 0 when every rule passes)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env", action="append", metavar="NAME=VALUE", default=[],
        help="a setting the connector receives as an environment variable (repeatable)",
    )
    parser.add_argument(
        "--secret", action="append", metavar="NAME=VARIABLE", default=[],
        help="give the connector NAME with the value of VARIABLE from this shell's environment, "
             "as passageway.toml's secrets table does; the value is masked and must never be printed",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS",
        help="seconds one call may take before the connector is killed (default: 60)",
    )
    parser.add_argument("--name", default="connector", help="the name used in messages (default: connector)")
    parser.add_argument("--json", action="store_true", help="print every rule's result as JSON")
    parser.add_argument(
        "command", nargs="*", metavar="-- COMMAND",
        help="the connector's program and arguments, after --; the mode is appended",
    )


def run(args: argparse.Namespace) -> int:
    import os

    from passageway.kernel.errors import ConfigError
    from passageway.testing.contract import Connector, parse_assignments, run_contract

    if not args.command:
        raise ConfigError(
            "name the connector's command after --, such as: "
            "passageway check-connector --env FOLDER=notes -- python3 folder_connector.py"
        )
    if not 0 < args.timeout <= 86400:
        raise ConfigError(f"--timeout is seconds from more than 0 to 86400, got {args.timeout:g}")
    from passageway.kernel.commands.problems import missing_program

    reason = missing_program(args.command, os.environ)
    if reason is not None:
        # One line, not the same failure once per rule.
        raise ConfigError(
            f"check-connector: {reason}: {args.command[0]} (the program after --; connectors run with "
            "an empty environment, so give an absolute path)"
        )
    env = parse_assignments(args.env, "--env")
    secrets = {}
    for key, variable in parse_assignments(args.secret, "--secret").items():
        if not os.environ.get(variable):
            raise ConfigError(f"--secret {key}={variable}: the variable {variable} is not set in this shell")
        secrets[key] = os.environ[variable]
    connector = Connector(args.name, args.command, env=env, secrets=secrets, timeout=args.timeout)
    report = run_contract(connector)
    if args.json:
        import json

        print(json.dumps({
            "connector": report.connector,
            "passed": report.passed,
            "rules": [
                {"rule": result.rule, "status": result.status, "detail": result.detail}
                for result in report.results
            ],
        }, indent=2))
    else:
        print(report.render())
    return 0 if report.passed else 1
