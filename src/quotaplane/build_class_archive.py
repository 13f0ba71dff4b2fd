"""Build the driver JVM's class archive (`quotaplane.core.spark.class_archive`).

    python -m quotaplane.build_class_archive [--force | --remove]

Runs the bundled example once, in a child process whose driver JVM writes every class it loaded to
the archive when it exits, then moves the finished archive into place (a JVM must never map a
half-written one) with a file naming its Java and Spark beside it, and removes the archives of
installations that are gone (`class_archive.orphaned_archives`). The Makefile's set-up runs it; it
never fails the set-up: without Java, or when the recording run fails, it says why and leaves no
archive (sessions then start as before).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def record(target: Path) -> None:
    """Run the bundled example in a driver JVM that writes its classes to `target` at exit, and
    wait for that JVM to exit (it writes the archive then)."""
    from quotaplane.core.runner import run_pipeline
    from quotaplane.core.spark.class_archive import recording_options
    from quotaplane.core.spark.session import DEFAULT_CONF, build_session
    from quotaplane.registry import POLICIES
    from quotaplane.run_command import bundled_example

    java_options = f"{DEFAULT_CONF['spark.driver.extraJavaOptions']} {recording_options(target)}"
    spark = build_session(app_name="quotaplane-class-archive",
                          extra_conf={"spark.driver.extraJavaOptions": java_options})
    jvm = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]
    telemetry, configs = bundled_example()
    with tempfile.TemporaryDirectory(prefix="quotaplane-class-archive-") as out:
        run_pipeline(telemetry, configs, Path(out), POLICIES, stream=None, spark=spark)
    spark.stop()
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes
    jvm.wait(timeout=300)


def build(force: bool = False) -> int:
    """Build the archive unless it is there; print what happened. Always 0 (never fails a set-up)."""
    from quotaplane.core.spark.class_archive import DISABLE_ENV, archive_path, write_owner

    path = archive_path()
    if path is None:
        print("class archive: no java found; Spark will start without one")
        return 0
    if path.is_file() and not force:
        print(f"class archive: {path} (already built)")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    started = time.monotonic()
    print("class archive: running the bundled example once to record Spark's classes ...", flush=True)
    command = [sys.executable, "-m", "quotaplane.build_class_archive", "--record", str(partial)]
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, DISABLE_ENV: "off"},
                          timeout=1200)
    if proc.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        tail = "\n  ".join(proc.stderr.strip().splitlines()[-5:])
        print(f"class archive: not built (the recording run exited {proc.returncode}); "
              f"Spark will start without one\n  {tail}")
        return 0
    os.replace(partial, path)
    write_owner(path)
    print(f"class archive: {path} ({path.stat().st_size / 2**20:,.0f} MiB, "
          f"built in {time.monotonic() - started:.0f} s)")
    _remove_orphans(path.parent)
    return 0


def _remove_orphans(directory: Path) -> None:
    """Remove the archives of installations that are gone (`class_archive.orphaned_archives`)."""
    from quotaplane.core.spark.class_archive import orphaned_archives, owner_path

    for archive in orphaned_archives(directory):
        archive.unlink(missing_ok=True)
        owner_path(archive).unlink(missing_ok=True)
        print(f"class archive: removed {archive} (its Java or Spark is gone)")


def remove() -> int:
    """Remove this installation's archive, if any (another installation's stays)."""
    from quotaplane.core.spark.class_archive import archive_path, owner_path

    path = archive_path()
    if path is not None and path.is_file():
        path.unlink()
        owner_path(path).unlink(missing_ok=True)
        print(f"class archive: removed {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quotaplane.build_class_archive",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build it again even when it is there")
    parser.add_argument("--remove", action="store_true",
                        help="remove this Java's and Spark's archive (`make clean` does)")
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args(argv)
    if args.record is not None:
        record(args.record)
        return 0
    if args.remove:
        return remove()
    return build(args.force)


if __name__ == "__main__":
    sys.exit(main())
