"""Dependencies point one way: model <- config <- engine (no pyspark) <- spark <- runner <- cli.

The reference engines, configs, record schemas, metrics, reports and the reference CLI must work
where pyspark is not installed: each is imported in a fresh interpreter in which pyspark (and py4j)
cannot be imported. The direction of the imports is checked from the source text. The modules whose
functions run in Spark's Python workers import no plotting library.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "quotaplane"
POLICIES = ("storage", "clients", "topics", "backlog", "forecast", "notices")
PURE = [
    "quotaplane.core.policy", "quotaplane.core.commands", "quotaplane.core.records", "quotaplane.core.jsonl",
    "quotaplane.core.javamath", "quotaplane.core.exposition", "quotaplane.core.report",
    "quotaplane.core.properties", "quotaplane.cli", "quotaplane.registry", "quotaplane.sim",
    "quotaplane.live.service", "quotaplane.live.cli", "quotaplane.live.sources.replay",
    "quotaplane.live.http",
    "quotaplane.forecast.live", "quotaplane.core.telemetry_files", "quotaplane.live.notice_channel",
    "quotaplane.notices.protocol", "quotaplane.client", "quotaplane.core.incremental",
    "quotaplane.stream.cli", "quotaplane.stream.commits", "quotaplane.stream.keyed",
    "quotaplane.stream.status", "quotaplane.stream.plan", "quotaplane.stream.run", "quotaplane.core.http",
    "quotaplane.extras", "quotaplane.core.units",
    *[f"quotaplane.{p}.incremental" for p in ("storage", "clients", "topics", "backlog")],
    *[f"quotaplane.{p}.{m}" for p in POLICIES
      for m in ("engine", "config", "records", "metrics", "report", "cli", "policy")],
]
ENGINE_MODULES = [f"quotaplane.{p}.engine.{f.stem}" for p in POLICIES
                  for f in sorted((SRC / p / "engine").glob("*.py")) if f.stem != "__init__"]
# Run first in the child: pyspark and py4j cannot be imported.
BLOCK = """
import sys
class _NoSpark:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"pyspark is not installed here (asked for {name})", name=name)
        return None
sys.meta_path.insert(0, _NoSpark())
"""
# Imports each named module; on failure prints the chain of imports that led to the missing module.
IMPORT = """
import importlib, traceback
from pathlib import Path
src = Path(SRC)
failed = []
for name in NAMES:
    try:
        importlib.import_module(name)
    except ImportError as error:
        chain = []
        for frame in traceback.extract_tb(error.__traceback__):
            path = Path(frame.filename)
            if frame.name == "<module>" and path.is_relative_to(src):
                parts = path.relative_to(src.parent).with_suffix("").parts
                module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                chain.append(f"{module} (line {frame.lineno})")
        failed.append(" -> ".join([*chain, str(error.name)]) + f": {error}")
print("\\n".join(failed))
"""


def _run(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _import_without_pyspark(names: list[str]) -> str:
    """The import chains of the modules in `names` that need pyspark (empty when none does)."""
    result = _run(f"SRC = {str(SRC)!r}\nNAMES = {names!r}\n" + IMPORT)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_block_works() -> None:
    result = _run("import pyspark")
    assert result.returncode != 0 and "pyspark is not installed here" in result.stderr


def test_a_module_that_needs_pyspark_is_reported_with_its_import_chain() -> None:
    chain = _import_without_pyspark(["quotaplane.storage.spark.stage"])
    assert chain.startswith("quotaplane.storage.spark.stage (line ") and " -> pyspark" in chain


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_without_pyspark(module: str) -> None:
    assert _import_without_pyspark([module]) == ""


def test_every_engine_module_imports_without_pyspark() -> None:
    assert _import_without_pyspark(ENGINE_MODULES) == ""


def test_storage_evaluate_runs_without_pyspark(tmp_path: Path) -> None:
    config = tmp_path / "storage.properties"
    config.write_text("client.quota.callback.static.storage.volume.source=cluster\n"
                      "client.quota.callback.static.storage.perVolumeLimit.availableRatioBelow.soft=0.2\n"
                      "client.quota.callback.static.storage.perVolumeLimit.availableRatioBelow.hard=0.05\n"
                      "client.quota.callback.static.produce=1000\n")
    volumes = tmp_path / "volumes.jsonl"
    volumes.write_text(json.dumps({"broker_id": 1, "log_dir": "/d", "total_bytes": 1000,
                                   "available_bytes": 100}) + "\n")
    result = _run("from quotaplane.cli import main\n"
                  f"raise SystemExit(main(['storage', 'evaluate', '--config', {str(config)!r}, "
                  f"'--volumes', {str(volumes)!r}]))")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["throttle_factor"] == pytest.approx(1 / 3)


def _module_imports(path: Path, lazy: bool = False) -> list[str]:
    """The modules `path` imports at module level (not inside TYPE_CHECKING blocks, nor inside
    functions or classes unless `lazy`)."""
    tree = ast.parse(path.read_text())
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if not lazy and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                names += [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom) and sub.module:
                names += [sub.module, *[f"{sub.module}.{a.name}" for a in sub.names]]
    return names


def _source_modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _above_engines(module: str) -> bool:
    """Whether `module` is a layer above the reference engines: a Spark module, the runner or a
    command, a policy's metrics, report or `Policy`, the registry or the simulator."""
    parts = module.split(".")
    if parts[0] != "quotaplane" or len(parts) < 2:
        return False
    if "spark" in parts or parts[1] in ("cli", "registry", "run_command", "sim"):
        return True
    if parts[1] == "core":
        return len(parts) > 2 and parts[2] in ("runner", "commands")
    return parts[1] in POLICIES and len(parts) > 2 and parts[2] in ("cli", "policy", "metrics", "report")


def test_imports_point_one_way() -> None:
    problems = []
    for name, path in _source_modules().items():
        imports = _module_imports(path)
        parts = name.split(".")
        spark_side = "spark" in parts or name in ("quotaplane.core.runner",)
        if not spark_side and any(i.split(".")[0] in ("pyspark", "py4j") for i in imports):
            problems.append(f"{name} imports pyspark at module level")
        if not spark_side and any(".spark" in i and i.startswith("quotaplane.") for i in imports):
            problems.append(f"{name} imports a Spark module at module level")
        if len(parts) > 1 and parts[1] == "core" and any(i.split(".")[1] in POLICIES for i in imports
                                      if i.startswith("quotaplane.") and len(i.split(".")) > 1):
            problems.append(f"{name}: quotaplane.core imports a policy package")
        if len(parts) > 2 and parts[1] in POLICIES and parts[2] == "engine":
            bad = sorted({i for i in _module_imports(path, lazy=True) if _above_engines(i)})
            if bad:
                problems.append(f"{name}: the engine imports a layer above it (even lazily): {bad}")
        if parts[-1] == "report" and any(i.startswith("quotaplane.") and ".spark" in i for i in imports):
            problems.append(f"{name}: a report imports the Spark side")
    assert problems == []


def _worker_modules() -> list[str]:
    """The modules that hand a function to Spark's Python workers (pandas and Arrow groups)."""
    calls = ("applyInPandas", "mapInPandas", "applyInArrow", "mapInArrow", "pandas_udf")
    return sorted(name for name, path in _source_modules().items()
                  if any(call in path.read_text() for call in calls))


def test_the_python_workers_import_no_plotting() -> None:
    # a worker imports the module of every function it runs: matplotlib would cost each 0.3 s
    names = _worker_modules()
    assert "quotaplane.notices.spark.evaluate" in names
    result = subprocess.run([sys.executable, "-c", f"import importlib, sys\nfor n in {names!r}:\n"
                             "    importlib.import_module(n)\n"
                             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
