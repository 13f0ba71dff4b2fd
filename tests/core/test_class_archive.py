"""The driver JVM's class archive: one per Java and Spark installation, mapped only when complete."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from quotaplane import build_class_archive
from quotaplane.core.spark import class_archive
from quotaplane.core.spark.class_archive import archive_path, recording_options, sharing_options
from quotaplane.core.spark.session import DEFAULT_CONF


@pytest.fixture
def java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `java` under `$JAVA_HOME`, and the cache in a temporary directory."""
    binary = tmp_path / "jdk" / "bin" / "java"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv(class_archive.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.DISABLE_ENV, raising=False)
    return binary


def test_the_archive_is_named_by_the_java_and_the_spark_it_belongs_to(java: Path, monkeypatch) -> None:
    path = archive_path()
    assert path is not None and path.parent == java.parents[2] / "cache" and path.suffix == ".jsa"
    assert archive_path() == path
    monkeypatch.setattr(class_archive.pyspark, "__version__", "0.0.1")
    assert archive_path() != path
    monkeypatch.undo()
    other = java.parents[2] / "jdk2" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(other.parents[1]))
    monkeypatch.setenv(class_archive.CACHE_ENV, str(java.parents[2] / "cache"))
    assert archive_path() not in (None, path)


def test_without_java_there_is_no_archive(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert archive_path() is None and sharing_options() is None
    assert build_class_archive.build() == 0


def test_the_cache_follows_xdg_when_not_set(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(class_archive.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert class_archive.cache_dir() == tmp_path / "quotaplane"


def test_sessions_map_the_archive_only_when_it_is_there_and_not_turned_off(java: Path, monkeypatch) -> None:
    assert sharing_options() is None
    path = archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert sharing_options() == f"-XX:SharedArchiveFile={path} {class_archive.QUIET}"
    for off in ("off", "0", "OFF"):
        monkeypatch.setenv(class_archive.DISABLE_ENV, off)
        assert sharing_options() is None


def test_paths_with_spaces_are_quoted(tmp_path: Path) -> None:
    expected = f'-XX:ArchiveClassesAtExit="{tmp_path}/a b.jsa"'
    assert recording_options(tmp_path / "a b.jsa").startswith(expected)


def test_a_built_archive_is_moved_into_place_beside_other_installations(java: Path, monkeypatch,
                                                                         capsys) -> None:
    path = archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    other = path.with_name("spark-driver-0000000000000000.jsa")  # another venv's, still in use
    other.write_bytes(b"other")
    seen: dict[str, object] = {}

    def recording_run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.update(command=command, env=kwargs["env"])
        target = Path(command[-1])
        assert target.parent == path.parent and target != path  # written beside it, then moved
        target.write_bytes(b"classes")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(build_class_archive.subprocess, "run", recording_run)
    assert build_class_archive.build() == 0
    assert path.read_bytes() == b"classes" and other.read_bytes() == b"other"
    assert seen["env"][class_archive.DISABLE_ENV] == "off"  # type: ignore[index]
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, class_archive.owner_path(
        path).name, other.name])
    assert class_archive.owner_path(path).read_text().splitlines() == [str(java.resolve()),
                                                                       str(class_archive.spark_home())]
    assert "built in" in capsys.readouterr().out
    assert build_class_archive.build() == 0 and "already built" in capsys.readouterr().out
    assert build_class_archive.main(["--remove"]) == 0
    assert not path.exists() and not class_archive.owner_path(path).exists() and other.exists()


def test_a_build_removes_the_archives_of_installations_that_are_gone(java: Path, monkeypatch,
                                                                      capsys) -> None:
    path = archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    kept_spark = java.parents[2] / "venv-kept" / "pyspark"
    kept_spark.mkdir(parents=True)
    archives = {name: path.with_name(f"spark-driver-{name}.jsa")
                for name in ("gone", "nojava", "kept", "old")}
    owners = {"gone": [java, java.parents[2] / "venv-removed" / "pyspark"],  # its venv was deleted
              "nojava": [java.parents[2] / "jdk-removed" / "bin" / "java", kept_spark],
              "kept": [java, kept_spark]}
    for name, archive in archives.items():
        archive.write_bytes(name.encode())
        if name in owners:
            class_archive.owner_path(archive).write_text("".join(f"{p}\n" for p in owners[name]))
    assert class_archive.orphaned_archives(path.parent) == [archives["gone"], archives["nojava"]]

    def recording_run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        Path(command[-1]).write_bytes(b"classes")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(build_class_archive.subprocess, "run", recording_run)
    assert build_class_archive.build() == 0
    left = sorted(p.name for p in path.parent.iterdir())
    assert left == sorted([path.name, class_archive.owner_path(path).name, archives["kept"].name,
                           class_archive.owner_path(archives["kept"]).name, archives["old"].name])
    out = capsys.readouterr().out
    assert f"removed {archives['gone']} (its Java or Spark is gone)" in out and "nojava" in out


def test_a_failed_recording_leaves_no_archive_and_never_fails_the_set_up(java, monkeypatch, capsys) -> None:
    def failing_run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        Path(command[-1]).write_bytes(b"half")  # a JVM killed while writing
        return subprocess.CompletedProcess(command, 1, "", "Traceback ...\nRuntimeError: boom")

    monkeypatch.setattr(build_class_archive.subprocess, "run", failing_run)
    assert build_class_archive.build() == 0
    path = archive_path()
    assert path is not None and list(path.parent.iterdir()) == []
    out = capsys.readouterr().out
    assert "not built (the recording run exited 1)" in out and "RuntimeError: boom" in out


@pytest.mark.spark
def test_the_test_session_maps_the_archive_when_the_set_up_built_one(spark) -> None:
    options = sharing_options()
    if options is None:
        pytest.skip("no class archive for this Java and Spark (make's set-up builds one)")
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert options.split()[0] in arguments
    assert DEFAULT_CONF["spark.driver.extraJavaOptions"] in arguments
