#!/usr/bin/env python3
"""Write the user service that keeps a passageway server running: a systemd user unit on Linux,
a launchd agent on macOS. Used by the /passageway-install skill; safe to run again (it rewrites
the same files, which is how an upgrade picks up a new path).

    python3 write_service.py --passageway PATH [--instance NAME] [--port N] [--kind systemd|launchd]

The service reads the password from the instance's password file and the connectors' tokens from
``~/.config/passageway[-NAME]/env`` (``NAME=value`` lines, readable only by you), so no secret is
ever written into the unit or the plist. It prints the files it wrote and the commands that start
the service; it starts nothing itself.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import re
import shlex
import sys
from pathlib import Path

INSTANCE = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")


def folder(instance: str | None) -> str:
    return "passageway" if instance is None else f"passageway-{instance}"


def systemd_unit(passageway: str, instance: str | None, port: int | None) -> str:
    """The unit text; ``%h`` is systemd's own word for the home folder."""
    name = folder(instance)
    lines = [
        "[Unit]",
        f"Description=passageway{'' if instance is None else f' (instance {instance})'}",
        "After=network-online.target",
        "",
        "[Service]",
        f"Environment=PASSAGEWAY_LOGIN_PASSWORD_FILE=%h/.config/{name}/password",
    ]
    if instance is not None:
        lines.append(f"Environment=PASSAGEWAY_INSTANCE={instance}")
    if port is not None:
        lines.append(f"Environment=PASSAGEWAY_PORT={port}")
    lines += [
        f"EnvironmentFile=-%h/.config/{name}/env",
        f"ExecStart={passageway}",
        "Restart=on-failure",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def launchd_wrapper(passageway: str, env_file: Path) -> str:
    """A shell wrapper that exports the env file's lines, then becomes the server."""
    return (
        "#!/bin/sh\n"
        "# Started by launchd: exports the connectors' tokens from the env file, then runs passageway.\n"
        f"if [ -f {shlex.quote(str(env_file))} ]; then set -a; . {shlex.quote(str(env_file))}; set +a; fi\n"
        f"exec {shlex.quote(passageway)}\n"
    )


def launchd_plist(label: str, wrapper: Path, home: Path, instance: str | None, port: int | None) -> bytes:
    environment = {
        "PASSAGEWAY_LOGIN_PASSWORD_FILE": str(home / ".config" / folder(instance) / "password"),
        "PATH": "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin",
    }
    if instance is not None:
        environment["PASSAGEWAY_INSTANCE"] = instance
    if port is not None:
        environment["PASSAGEWAY_PORT"] = str(port)
    log = str(home / "Library" / "Logs" / f"{folder(instance)}.log")
    return plistlib.dumps({
        "Label": label,
        "ProgramArguments": ["/bin/sh", str(wrapper)],
        "EnvironmentVariables": environment,
        "RunAtLoad": True,
        "KeepAlive": True,
        "StandardOutPath": log,
        "StandardErrorPath": log,
    })


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the user service of a passageway server")
    parser.add_argument("--passageway", required=True, help="the full path of the passageway command")
    parser.add_argument("--instance", help="a named instance (see passageway init)")
    parser.add_argument("--port", type=int, help="the port, for an instance beside another one")
    parser.add_argument("--kind", choices=("systemd", "launchd"),
                        default="launchd" if sys.platform == "darwin" else "systemd")
    args = parser.parse_args(argv)
    if args.instance is not None and not INSTANCE.match(args.instance):
        parser.error("--instance: a-z or 0-9 first, then a-z, 0-9, _ or -")
    if not os.path.isabs(args.passageway):
        parser.error("--passageway must be a full path (the output of `command -v passageway`)")
    home = Path.home()
    name = folder(args.instance)
    if args.kind == "systemd":
        path = home / ".config" / "systemd" / "user" / f"{name}.service"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(args.passageway, args.instance, args.port), encoding="utf-8")
        print(f"wrote {path}")
        print("start it with:")
        print(f"  systemctl --user daemon-reload && systemctl --user enable --now {name}")
        print(f"  (after an upgrade: systemctl --user restart {name})")
        return 0
    label = f"local.{name}"
    wrapper = home / ".config" / name / "run-server.sh"
    wrapper.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    wrapper.write_text(launchd_wrapper(args.passageway, home / ".config" / name / "env"), encoding="utf-8")
    wrapper.chmod(0o700)
    plist = home / "Library" / "LaunchAgents" / f"{label}.plist"
    plist.parent.mkdir(parents=True, exist_ok=True)
    plist.write_bytes(launchd_plist(label, wrapper, home, args.instance, args.port))
    print(f"wrote {wrapper}")
    print(f"wrote {plist}")
    print("start it with:")
    print(f"  launchctl bootout gui/$(id -u)/{label} 2>/dev/null; launchctl bootstrap gui/$(id -u) {plist}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
