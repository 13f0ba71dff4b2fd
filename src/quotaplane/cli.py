"""The `quotaplane` command.

`run` (the Spark pipeline), `simulate` (telemetry), `config check` (storage configuration), and per
policy `quotaplane <policy> evaluate` (one generic flow, `quotaplane.core.commands`) plus the
policy's own verbs. Exit codes: 0 success, 2 bad configuration or input (one error per line on
stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from quotaplane import __version__, extras, run_command
from quotaplane.core.commands import register_policy
from quotaplane.core.errors import ConfigError, ConfigErrors, InputError, QuotaplaneError
from quotaplane.forecast import cli as forecast_command
from quotaplane.live import cli as serve_command
from quotaplane.registry import POLICIES
from quotaplane.sim import cli as simulate_command
from quotaplane.storage.cli import register_config_check
from quotaplane.stream import cli as stream_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quotaplane",
        description="Quota control plane for Kafka and Pulsar: evaluate storage, client, topic "
        "and backlog quota policies, one decision at a time or over whole fleets with Spark.",
    )
    parser.add_argument("--version", action="version", version=f"quotaplane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register_config_check(sub)
    run_command.register(sub)
    simulate_command.register(sub)
    serve_command.register(sub)
    stream_command.register(sub)
    forecast_command.register(sub)
    for policy in POLICIES:
        if policy.evaluator is not None:  # the forecast has its own top-level command
            register_policy(sub, policy)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        extras.check(args.command)
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
    except ModuleNotFoundError as exc:
        missing = extras.missing_extra(args.command, exc)
        if missing is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
