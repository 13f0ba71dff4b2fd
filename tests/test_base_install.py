"""The base install (`pip install quotaplane`, no `spark` or `report` extra) runs `serve`,
`forecast`, `config check` and every `<policy> evaluate` verb; `run` and `stream` say which extra
they need, in one line.

The environment without the extras is a second virtual environment whose site-packages hold only
the distributions the base requirements of pyproject.toml pull in, linked from this one's (the same
files, so no download), with quotaplane's source on its path: an interpreter there cannot import
pyspark, pyarrow, pandas or matplotlib. Building it from the pip cache instead measured 38-44 s on
this machine (the six pinned wheels resolved against the index, the editable build's isolated
setuptools), paid by every run of the suite; linking takes well under a second.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from quotaplane.run_command import bundled_example

REPO = Path(__file__).resolve().parents[1]
EXTRAS_MODULES = {"pyspark", "py4j", "pyarrow", "pandas", "matplotlib"}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_closure() -> dict[str, metadata.Distribution]:
    """The installed distributions the base requirements pull in, by normalised name."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    seen: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in project["dependencies"]]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = _key(req.name)
        if key in seen:
            continue
        dist = seen[key] = metadata.distribution(req.name)
        todo += [Requirement(r) for r in dist.requires or []]
    return seen


@pytest.fixture(scope="module")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a virtual environment with the base install only."""
    root = tmp_path_factory.mktemp("base-venv")
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    site = Path(purelib)
    for dist in base_closure().values():
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            target = site / top
            if not target.exists():
                target.symlink_to(base / top)
    (site / "quotaplane-src.pth").write_text(str(REPO / "src") + "\n")
    return python


def start_cli(python: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.Popen([str(python), "-m", "quotaplane.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_cli(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return finish(start_cli(python, *args))


def test_the_base_environment_lacks_the_extras(base_python: Path) -> None:
    names = {_key(n) for n in base_closure()}
    assert {"numpy", "prometheus-client", "kafka-python", "confluent-kafka"} <= names
    assert not names & {"pyspark", "pyarrow", "pandas", "matplotlib"}
    modules = sorted(EXTRAS_MODULES)
    probe = f"import importlib.util as u; print(sorted(m for m in {modules!r} if u.find_spec(m)))"
    found = subprocess.run([str(base_python), "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
    assert sys.executable != str(base_python)


def test_serve_forecast_and_every_evaluate_verb_run_without_the_extras(base_python: Path,
                                                                       tmp_path: Path) -> None:
    telemetry, configs = bundled_example()
    volumes = tmp_path / "volumes.jsonl"
    lines = (telemetry / "volumes" / "part-00000.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    volumes.write_text("".join(json.dumps({k: r[k] for k in ("broker_id", "log_dir", "total_bytes",
                                                              "available_bytes")}) + "\n"
                               for r in rows if r["poll_id"] == 0))
    verbs = {
        "serve": ["serve", "--replay", str(telemetry), "--config", str(configs.storage), "--rounds", "2",
                  "--metrics-port", "0"],
        "forecast": ["forecast", "--telemetry", str(telemetry), "--config", str(configs.storage),
                     "--backlog-policies", str(configs.backlog_policies),
                     "--metrics", str(tmp_path / "f.prom")],
        "config check": ["config", "check", str(configs.storage)],
        "storage": ["storage", "evaluate", "--config", str(configs.storage), "--volumes", str(volumes),
                    "--metrics", str(tmp_path / "s.prom")],
        "backlog": ["backlog", "evaluate", "--policies", str(configs.backlog_policies), "--snapshots",
                    str(telemetry / "backlog_snapshots" / "part-00000.jsonl"),
                    "--metrics", str(tmp_path / "b.prom")],
        "topics": ["topics", "evaluate", "--config", str(configs.topics), "--requests",
                   str(telemetry / "topic_requests" / "part-00000.jsonl"),
                   "--metrics", str(tmp_path / "t.prom")],
        "clients": ["clients", "evaluate", "--quotas", str(configs.client_quotas), "--requests",
                    str(telemetry / "client_requests" / "part-00000.jsonl")],
        "notices": ["notices", "evaluate", "--config", str(configs.notices), "--traffic",
                    str(telemetry / "producer_traffic"), "--metrics", str(tmp_path / "n.prom")],
    }
    from quotaplane.registry import POLICIES

    evaluating = {p.name for p in POLICIES if p.evaluator is not None}
    assert evaluating <= set(verbs)  # a new policy's evaluate verb: add it here
    started = {name: start_cli(base_python, *argv) for name, argv in verbs.items()}  # side by side
    results = {name: finish(proc) for name, proc in started.items()}
    for name, result in results.items():
        assert result.returncode == 0, (name, result.stderr[-2000:])
        assert result.stdout.strip() or name == "serve", name
        assert "Traceback" not in result.stderr, (name, result.stderr[-2000:])
    assert json.loads(results["serve"].stderr.splitlines()[-1])["round"] == 2
    for prom in ("f", "s", "b", "t", "n"):
        assert "# TYPE quotaplane_" in (tmp_path / f"{prom}.prom").read_text()


@pytest.mark.parametrize(("argv", "extra"), [
    (["run"], "quotaplane[spark,report]"),
    (["stream", "--landing", "l", "--out", "o"], "quotaplane[spark]"),
])
def test_run_and_stream_name_the_extra_they_need(base_python: Path, argv: list[str], extra: str) -> None:
    result = run_cli(base_python, *argv)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: quotaplane {argv[0]} needs ") and f"pip install '{extra}'" in line
