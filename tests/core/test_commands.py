"""The one `quotaplane <policy> evaluate` flow: options, rows as JSON Lines or one document,
warnings, extras and `--metrics`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from quotaplane.core.commands import register_policy
from quotaplane.core.errors import InputError
from quotaplane.core.policy import (
    Evaluator,
    Input,
    Outputs,
    Policy,
    ReferenceEvaluation,
    RunConfigs,
    StageContext,
    StageResult,
)
from quotaplane.core.records import Field, RecordSchema


class Evaluation(ReferenceEvaluation):
    def __init__(self, n: int, document: bool) -> None:
        self.n = n
        self.document = document
        self.warnings = ["something odd"]

    def rows(self) -> Iterable[dict[str, Any]]:
        for i in range(self.n):
            yield {"i": i}

    def register_metrics(self, registry: CollectorRegistry) -> None:
        Gauge("fake_rows", "rows evaluated", registry=registry).set(self.n)

    def write_extras(self, args: argparse.Namespace) -> None:
        if args.extra:
            Path(args.extra).write_text("extra\n")


class FakeEvaluator(Evaluator):
    help = "evaluate n rows"
    description = "Print n rows."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--n", type=int, required=True)
        parser.add_argument("--document", action="store_true")
        parser.add_argument("--extra")

    def evaluate(self, args: argparse.Namespace) -> ReferenceEvaluation:
        if args.n < 0:
            raise InputError("--n", "--n", args.n, "must not be negative")
        return Evaluation(args.n, args.document)


class FakePolicy(Policy[None]):
    name = "fake"
    title = "a fake policy"
    inputs = (Input("fake", RecordSchema("fake", (Field("ts", "time_ms"),)), "fake"),)
    evaluator = FakeEvaluator()

    def load_config(self, configs: RunConfigs) -> None:
        return None

    def run_stage(self, ctx: StageContext, config: None, outputs: Outputs) -> StageResult:
        raise AssertionError("not a Spark test")

    def register_commands(self, sub: argparse._SubParsersAction) -> None:
        sub.add_parser("other").set_defaults(func=lambda args: 7)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register_policy(parser.add_subparsers(dest="command", required=True), FakePolicy())
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_rows_are_json_lines_in_order_and_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["fake", "evaluate", "--n", "3"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert captured.err == "warning: something odd\n"


def test_a_document_is_printed_indented(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["fake", "evaluate", "--n", "1", "--document"]) == 0
    out = capsys.readouterr().out
    assert out == json.dumps({"i": 0}, indent=2) + "\n"


def test_metrics_to_a_file_or_stderr_and_extras(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target, extra = tmp_path / "m.prom", tmp_path / "extra.txt"
    assert run(["fake", "evaluate", "--n", "2", "--metrics", str(target), "--extra", str(extra)]) == 0
    assert "fake_rows 2.0" in target.read_text()
    assert extra.read_text() == "extra\n"
    capsys.readouterr()
    assert run(["fake", "evaluate", "--n", "2", "--metrics", "-"]) == 0
    assert "fake_rows 2.0" in capsys.readouterr().err


def test_errors_propagate_to_the_cli_and_other_verbs_are_registered() -> None:
    with pytest.raises(InputError, match="must not be negative"):
        run(["fake", "evaluate", "--n", "-1"])
    assert run(["fake", "other"]) == 7
