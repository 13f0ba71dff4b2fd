"""The `quotaplane` command.

Each command group lives in its own module under `quotaplane.commands` and exposes
`register(subparsers)`, which adds its sub-command(s) and sets `func(args) -> int` on them.
Exit codes: 0 success, 2 bad configuration or input (one error per line on stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from quotaplane import __version__
from quotaplane.errors import ConfigError, ConfigErrors, InputError, QuotaplaneError

# Command modules, in the order they are listed by `quotaplane --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "quotaplane.commands.config_check",
    "quotaplane.commands.storage",
    "quotaplane.commands.run",
    "quotaplane.commands.backlog",
    "quotaplane.commands.topics",
    "quotaplane.commands.simulate",
    "quotaplane.commands.clients",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quotaplane",
        description="Quota control plane for Kafka and Pulsar: evaluate storage, client, topic "
        "and backlog quota policies, one decision at a time or over whole fleets with Spark.",
    )
    parser.add_argument("--version", action="version", version=f"quotaplane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigErrors as exc:
        for err in exc.errors:
            print(f"error: {err}", file=sys.stderr)
        return 2
    except (ConfigError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except QuotaplaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
