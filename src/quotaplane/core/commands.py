"""One command flow for every policy: `quotaplane <policy> evaluate` and the policy's other verbs.

`evaluate` is the same everywhere: the policy's evaluator loads its config and reads its records
(errors exit 2, naming the property or field), runs the reference engine, and the rows are printed
as JSON Lines in order (or as one indented JSON document); `--metrics FILE` (`-`: stderr) writes
the policy's metrics after the evaluation in Prometheus text format.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from quotaplane.core.policy import Policy


def register_policy(sub: argparse._SubParsersAction, policy: Policy[Any]) -> None:
    """`quotaplane <policy.name>` with its `evaluate` verb and the policy's own verbs."""
    group = sub.add_parser(policy.name, help=policy.title, description=policy.title)
    verbs = group.add_subparsers(dest=f"{policy.name}_command", metavar="COMMAND", required=True)
    evaluator = policy.evaluator
    if evaluator is not None:
        p = verbs.add_parser("evaluate", help=evaluator.help, description=evaluator.description)
        evaluator.add_arguments(p)
        if evaluator.metrics:
            p.add_argument("--metrics", metavar="FILE",
                           help="also write the metrics after this evaluation in Prometheus text "
                           "format to FILE ('-': stderr)")
        p.set_defaults(func=lambda args: run_evaluate(policy, args))
    policy.register_commands(verbs)


def run_evaluate(policy: Policy[Any], args: argparse.Namespace) -> int:
    """The generic flow (module docstring)."""
    assert policy.evaluator is not None
    evaluation = policy.evaluator.evaluate(args)
    for warning in evaluation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    out = sys.stdout
    if evaluation.document:
        for row in evaluation.rows():
            out.write(json.dumps(row, indent=2) + "\n")
    else:
        for row in evaluation.rows():
            out.write(json.dumps(row) + "\n")
    out.flush()
    evaluation.write_extras(args)
    target = getattr(args, "metrics", None)
    if target:
        from prometheus_client import CollectorRegistry

        from quotaplane.core import exposition

        registry = CollectorRegistry()
        evaluation.register_metrics(registry)
        if str(target) == "-":
            print(exposition.render(registry), file=sys.stderr, end="")
        else:
            exposition.write(registry, target)
    return 0
