"""`quotaplane config check FILE`: validate a storage quota configuration and summarise it."""

from __future__ import annotations

import argparse
import json
import sys

from quotaplane.config.storage import as_dict, describe, load_storage_config


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("config", help="check configuration files",
                           description="Check configuration files.")
    commands = group.add_subparsers(dest="config_command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check", help="validate a storage quota configuration (.properties)",
        description="Validate a storage quota configuration. Exit 0 and print a short normalised "
        "summary (dialect, source, limits, fallback); exit 2 and print one error per line otherwise. "
        "Warnings (deprecated settings, unknown property names) go to stderr.")
    check.add_argument("file", help="the .properties file")
    check.add_argument("--json", action="store_true", help="print the normalised configuration as JSON")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    config = load_storage_config(args.file)
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(as_dict(config), indent=2, sort_keys=True))
    else:
        print(f"{args.file}: OK")
        for line in describe(config):
            print(f"  {line}")
    return 0
