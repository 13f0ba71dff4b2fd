"""The runner's wiring: policies run in dependency order, configs are checked before Spark starts,
and summary, metrics and report are written."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import Gauge

from quotaplane.core import runner as run_module
from quotaplane.core.errors import ConfigError, ConfigErrors, InputError
from quotaplane.core.policy import (
    Input,
    Outputs,
    Policy,
    Progress,
    RunConfigs,
    StageContext,
    StageResult,
    order,
)
from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.report import Section
from quotaplane.core.spark.expressions import FACTORY_MODE, GENERATED, INTERPRETED, THRESHOLD
from quotaplane.core.spark.readers import ReadCounts
from tests.support.fake_spark import FakeSpark

CALLS: list[str] = []
READS: list[bool] = []  # `ctx.reads_in_driver` as each FakePolicy stage saw it
RECORD = RecordSchema("fake", (Field("ts", "time_ms"),))


@dataclass(frozen=True)
class Published:
    value: str


class FakePolicy(Policy[str]):
    """Runs when `volumes` exists and a storage config is given; provides `Published`."""

    name = "fake"
    title = "a stand-in policy"
    inputs = (Input("volumes", RECORD, "fake volumes"), Input("extra", RECORD, "optional", required=False))
    provides = (Published,)

    def load_config(self, configs: RunConfigs) -> str | None:
        if configs.storage is None:
            return None
        if configs.storage.name == "bad.properties":
            raise ConfigError("fake.property", "x", "is bad")
        return "configured"

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        CALLS.append(self.name)
        CALLS.append(ctx.spark.conf.get(FACTORY_MODE, GENERATED))
        READS.append(ctx.reads_in_driver)
        path = ctx.find_input("volumes")
        assert path is not None and config == "configured"
        Gauge("fake_gauge", "a test gauge", registry=ctx.registry).set(0.5)
        outputs.provide(Published("published"))
        return StageResult(
            name="fake",
            summary={"answer": 42},
            read_counts=[ReadCounts(path, 10, 8, 2)],
            sections=[Section("Fake policy").text("hello from the fake stage")],
            console=["fake stage ran"],
        )


class ConsumerPolicy(Policy[str]):
    """Needs what `FakePolicy` provides; listed first, it must run second."""

    name = "consumer"
    title = "a policy that needs another"
    inputs = (Input("volumes", RECORD, "fake volumes"),)
    needs = (Published,)

    def load_config(self, configs: RunConfigs) -> str | None:
        return "configured" if configs.storage is not None else None

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        got = outputs.get(Published)
        CALLS.append(f"{self.name}:{got.value if got else None}")
        return StageResult(name="consumer", summary={})


class BesidePolicy(Policy[str]):
    """Waits at `BARRIER` for other stages (a run that takes its stages one after another breaks
    the barrier), then fails when its name says so; `needs` and `provides` as given."""

    title = "a policy that runs beside others"
    inputs = FakePolicy.inputs

    def __init__(self, name: str, needs: tuple[type, ...] = (), provides: tuple[type, ...] = ()) -> None:
        self.name, self.needs, self.provides = name, needs, provides  # type: ignore[misc]

    def load_config(self, configs: RunConfigs) -> str | None:
        return "configured" if configs.storage is not None else None

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        BARRIER.wait()
        CALLS.append(self.name)
        if self.name.startswith("failing"):
            raise RuntimeError(f"{self.name} failed")
        return StageResult(name=self.name, summary={"ran": True})


BARRIER = threading.Barrier(1)


@pytest.fixture
def telemetry(tmp_path: Path) -> Path:
    CALLS.clear()
    READS.clear()
    telemetry = tmp_path / "telemetry"
    (telemetry / "volumes").mkdir(parents=True)
    (telemetry / "volumes" / "part-0.jsonl").write_text("{}\n")
    return telemetry


def test_run_writes_summary_metrics_and_report(telemetry: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out,
                                      [FakePolicy()], stream=None, spark=FakeSpark())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fake"] == {"answer": 42}
    assert summary["rows"] == {"read": 10, "used": 8, "quarantined": 2}
    assert "fake_gauge 0.5" in (out / "metrics.prom").read_text()
    html = (out / "report.html").read_text()
    assert "hello from the fake stage" in html and "Overview" in html
    printed = io.StringIO()
    run_module.print_outcome(outcome, printed)
    assert "read 10 = used 8 + quarantined 2" in printed.getvalue()
    assert "report:   file://" in printed.getvalue()


def test_policies_run_in_dependency_order_and_hand_over_outputs(telemetry: Path, tmp_path: Path) -> None:
    assert [p.name for p in order([ConsumerPolicy(), FakePolicy()])] == ["fake", "consumer"]
    run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), tmp_path / "out",
                            [ConsumerPolicy(), FakePolicy()], stream=None, spark=FakeSpark())
    assert CALLS == ["fake", INTERPRETED, "consumer:published"]


def test_a_policy_without_its_configuration_does_not_run(telemetry: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no policy could run: expected telemetry"):
        run_module.run_pipeline(telemetry, RunConfigs(), tmp_path / "out", [FakePolicy()], stream=None,
                                spark=FakeSpark())
    assert CALLS == []


def test_run_without_any_input_says_what_it_expected(tmp_path: Path) -> None:
    CALLS.clear()
    with pytest.raises(InputError, match=r"no policy could run: expected telemetry \(volumes \(fake\)"):
        run_module.run_pipeline(tmp_path, RunConfigs(storage=tmp_path / "s.properties"), tmp_path / "out",
                                [FakePolicy()], stream=None, spark=FakeSpark())
    assert CALLS == []


def test_bad_configuration_stops_the_run_before_spark_starts(telemetry: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors, match=r"fake\.property=x: is bad"):
        run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "bad.properties"), tmp_path / "out",
                                [FakePolicy()], stream=None, spark=None)
    assert not (tmp_path / "out").exists()


def test_inputs_present_but_not_evaluated_are_named(telemetry: Path, tmp_path: Path) -> None:
    (telemetry / "extra.jsonl").write_text("{}\n")

    class Other(FakePolicy):
        name = "other"
        inputs = (Input("backlog", RECORD, "absent"), Input("extra", RECORD, "present"))

        def load_config(self, configs: RunConfigs) -> str | None:
            return None

    out = tmp_path / "out"
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out,
                                      [FakePolicy(), Other()], stream=None, spark=FakeSpark())
    assert outcome.not_evaluated == []  # `extra` is an input of the fake policy, which ran
    (telemetry / "backlog.jsonl").write_text("{}\n")
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out,
                                      [FakePolicy(), Other()], stream=None, spark=FakeSpark())
    assert outcome.not_evaluated == ["backlog"]
    assert json.loads((out / "summary.json").read_text())["inputs_not_evaluated"] == ["backlog"]
    printed = io.StringIO()
    run_module.print_outcome(outcome, printed)
    assert "input backlog: present but not evaluated" in printed.getvalue()


def test_run_rejects_a_missing_telemetry_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a directory"):
        run_module.run_pipeline(tmp_path / "nope", RunConfigs(), tmp_path / "out", [FakePolicy()],
                                stream=None, spark=FakeSpark())


def test_a_run_replaces_the_earlier_run_whole(telemetry: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "topic_decisions").mkdir(parents=True)  # yesterday's table of a policy not run today
    (out / "summary.json").write_text("{}")
    run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out, [FakePolicy()],
                            stream=None, spark=FakeSpark())
    assert sorted(p.name for p in out.iterdir()) == ["metrics.prom", "report.html", "summary.json"]
    assert json.loads((out / "summary.json").read_text())["fake"] == {"answer": 42}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_run_leaves_the_earlier_run_as_it_was(telemetry: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"earlier": true}')

    class Failing(FakePolicy):
        def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
            (ctx.out_dir / "half_written").mkdir()
            raise RuntimeError("the stage failed")

    with pytest.raises(RuntimeError, match="the stage failed"):
        run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out, [Failing()],
                                stream=None, spark=FakeSpark())
    assert [p.name for p in out.iterdir()] == ["summary.json"]
    assert json.loads((out / "summary.json").read_text()) == {"earlier": True}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_killed_run_leaves_a_staging_directory_the_next_removes(telemetry: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / f".out.staging-{dead.pid}"
    (leftover / "storage_decisions").mkdir(parents=True)
    run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), out, [FakePolicy()],
                            stream=None, spark=FakeSpark())
    assert not leftover.exists()
    assert (out / "summary.json").exists()


def test_a_small_run_evaluates_its_expressions_interpreted(telemetry: Path, tmp_path: Path) -> None:
    spark = FakeSpark()
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"),
                                      tmp_path / "out", [FakePolicy()], stream=None, spark=spark)
    assert CALLS == ["fake", INTERPRETED]  # while the stage ran
    assert spark.conf.get(FACTORY_MODE, GENERATED) == GENERATED  # and restored after
    assert outcome.summary["run"]["spark_expressions"] == {  # type: ignore[index]
        "mode": "interpreted", "reason": f"1 input rows, fewer than {THRESHOLD}=50000"}
    assert outcome.summary["run"]["input_reads"]["mode"] == "in the driver"  # type: ignore[index]
    assert READS == [True]  # the stage was told


def test_the_rows_of_every_input_a_run_reads_choose_its_expressions(telemetry: Path, tmp_path: Path) -> None:
    (telemetry / "extra.jsonl").write_text("{}\n" * 49_999)  # with volumes' row: 50,000
    spark = FakeSpark()
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"),
                                      tmp_path / "out", [FakePolicy()], stream=None, spark=spark)
    assert CALLS == ["fake", GENERATED]
    assert outcome.summary["run"]["spark_expressions"]["mode"] == "generated"  # type: ignore[index]
    assert outcome.summary["run"]["input_reads"]["mode"] == "Spark"  # type: ignore[index]
    assert READS == [False]
    assert run_module.stage_inputs(telemetry, [FakePolicy(), ConsumerPolicy()]) == [
        str(telemetry / "extra.jsonl"), str(telemetry / "volumes")]


def test_a_bad_row_threshold_is_named_with_its_rule(telemetry: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^{THRESHOLD}=many: must be a whole number of rows, 0 or more"):
        run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), tmp_path / "out",
                                [FakePolicy()], stream=None, spark=FakeSpark(**{THRESHOLD: "many"}))
    assert CALLS == []


def _barrier(parties: int) -> None:
    global BARRIER
    BARRIER = threading.Barrier(parties, timeout=10)


class EarlyProvider(BesidePolicy):
    """Provides `Published`, then runs on until `consumed` is set (or 10 s have passed)."""

    def __init__(self, consumed: threading.Event) -> None:
        super().__init__("early", provides=(Published,))
        self.consumed = consumed

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        outputs.provide(Published("early"))
        CALLS.append("early:provided")
        if not self.consumed.wait(10):
            raise RuntimeError("the consumer did not get what was provided while this stage ran")
        CALLS.append("early:finished")
        return StageResult(name=self.name, summary={})


class SettingConsumer(ConsumerPolicy):
    """A `ConsumerPolicy` that sets `consumed` once it has what it asked for."""

    def __init__(self, consumed: threading.Event) -> None:
        self.consumed = consumed

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        result = super().run_stage(ctx, config, outputs)
        self.consumed.set()
        return result


def test_a_stage_side_by_side_gets_what_another_provides_while_that_one_still_runs(
        telemetry: Path, tmp_path: Path) -> None:
    consumed = threading.Event()
    policies = [SettingConsumer(consumed), EarlyProvider(consumed)]
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"),
                                      tmp_path / "out", policies, stream=None, spark=FakeSpark())
    assert [r.name for r in outcome.results] == ["early", "consumer"]  # as `order` has them
    assert CALLS == ["early:provided", "consumer:early", "early:finished"]
    assert outcome.summary["run"]["stages"]["mode"] == "side by side"  # type: ignore[index]
    assert outcome.summary["run"]["driver_jit"]["mode"] == "not chosen"  # type: ignore[index]


def test_a_stage_asking_for_what_a_stage_finished_without_gets_none(telemetry: Path, tmp_path: Path) -> None:
    _barrier(1)
    policies = [ConsumerPolicy(), BesidePolicy("b", provides=(Published,))]
    run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), tmp_path / "out",
                            policies, stream=None, spark=FakeSpark())
    assert CALLS == ["b", "consumer:None"]


def test_a_failed_stage_stops_the_stages_that_need_it_and_lets_the_others_finish(telemetry: Path,
                                                                                  tmp_path: Path) -> None:
    _barrier(2)
    policies = [ConsumerPolicy(), BesidePolicy("failing", provides=(Published,)), BesidePolicy("b")]
    with pytest.raises(RuntimeError, match="failing failed"):
        run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"), tmp_path / "out",
                                policies, stream=None, spark=FakeSpark())
    assert sorted(CALLS) == ["b", "failing"]  # the consumer never got past asking
    assert not (tmp_path / "out").exists()


class MetricPolicy(BesidePolicy):
    """Registers a gauge named after it; `waits_for` holds its registration until that event is
    set, and `sets` is set once it has registered."""

    def __init__(self, name: str, waits_for: threading.Event | None = None,
                 sets: threading.Event | None = None) -> None:
        super().__init__(name)
        self.waits_for, self.sets = waits_for, sets

    def run_stage(self, ctx: StageContext, config: str, outputs: Outputs) -> StageResult:
        if self.waits_for is not None:
            assert self.waits_for.wait(10)
        Gauge(f"{self.name}_gauge", f"the {self.name} stage's gauge", registry=ctx.registry).set(1)
        if self.sets is not None:
            self.sets.set()
        return StageResult(name=self.name, summary={})


def test_metrics_of_stages_side_by_side_come_in_the_policies_order(telemetry: Path, tmp_path: Path) -> None:
    second_done = threading.Event()  # the second stage registers its gauge before the first
    policies = [MetricPolicy("first", waits_for=second_done), MetricPolicy("second", sets=second_done)]
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"),
                                      tmp_path / "out", policies, stream=None, spark=FakeSpark())
    assert outcome.summary["run"]["stages"]["mode"] == "side by side"  # type: ignore[index]
    names = re.findall(r"^# TYPE (\w+) gauge$", (tmp_path / "out" / "metrics.prom").read_text(), re.M)
    assert names == ["first_gauge", "second_gauge"]


def test_a_larger_run_takes_its_stages_one_after_another(telemetry: Path, tmp_path: Path) -> None:
    _barrier(1)
    (telemetry / "extra.jsonl").write_text("{}\n" * 49_999)
    outcome = run_module.run_pipeline(telemetry, RunConfigs(storage=tmp_path / "s.properties"),
                                      tmp_path / "out", [BesidePolicy("a"), BesidePolicy("b")], stream=None,
                                      spark=FakeSpark())
    assert CALLS == ["a", "b"]
    assert outcome.summary["run"]["stages"] == {  # type: ignore[index]
        "mode": "one after another", "reason": "expressions generated"}


class _YieldingStream(io.StringIO):
    """A stream that lets other threads run before each write, as a terminal's may."""

    def write(self, text: str) -> int:
        time.sleep(0)
        return super().write(text)


def test_steps_reported_from_stages_side_by_side_are_whole_lines() -> None:
    stream = _YieldingStream()
    progress = Progress(stream)

    def steps(name: str) -> None:
        for i in range(200):
            with progress.step(f"{name}: step {i}"):
                pass

    threads = [threading.Thread(target=steps, args=(name,)) for name in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 * 200 * 2 and len(progress.timings) == 600
    assert all(re.fullmatch(r"  (… [abc]: step \d+|✓ [abc]: step \d+ \(\d+\.\ds\))", line) for line in lines)
