"""The driver JVM's class-data-sharing archive (the JDK's dynamic CDS archive, JEP 350).

Spark's driver loads and verifies well over ten thousand classes before and during its first jobs.
Mapped from an archive written by an earlier run, they cost a fraction of that: on the bundled
example a whole `quotaplane run` took 60 s instead of 68 s (docs/performance.md). The archive
belongs to one Java and one Spark installation: its name is a key of both, so a JVM never maps an
archive of another installation. It is built once (`python -m quotaplane.build_class_archive`, which
the Makefile's set-up runs) under the cache directory; an embedded session started afterwards maps
it, and one started without it runs as before. A file beside it names its Java and Spark, so that
a later build removes the archive once either is gone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pyspark

CACHE_ENV = "QUOTAPLANE_CACHE_DIR"
DISABLE_ENV = "QUOTAPLANE_CLASS_ARCHIVE"  # "off" (or "0"): never map the archive
# The JVM says nothing about an archive it cannot use (it then loads its classes as usual).
QUIET = "-Xlog:cds=off,cds+dynamic=off"


def cache_dir() -> Path:
    """`$QUOTAPLANE_CACHE_DIR`, else `$XDG_CACHE_HOME/quotaplane`, else `~/.cache/quotaplane`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "quotaplane"


def java_binary() -> Path | None:
    """The `java` Spark's launcher runs: `$JAVA_HOME/bin/java`, else the first on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def spark_home() -> Path:
    """The Spark installation the driver runs (PySpark's own)."""
    return Path(pyspark.__file__).resolve().parent


def archive_path() -> Path | None:
    """Where the archive of this Java and this Spark is (or would be); None without Java."""
    java = java_binary()
    if java is None:
        return None
    key = f"{java}|{java.stat().st_mtime_ns}|{pyspark.__version__}|{spark_home()}"
    return cache_dir() / f"spark-driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def owner_path(archive: Path) -> Path:
    """The file beside an archive that names the Java and the Spark it belongs to, a path a line."""
    return archive.with_suffix(".owner")


def write_owner(archive: Path) -> None:
    """Name this installation's Java and Spark beside `archive` (`owner_path`)."""
    owner_path(archive).write_text(f"{java_binary()}\n{spark_home()}\n", encoding="utf-8")


def orphaned_archives(directory: Path) -> list[Path]:
    """The archives under `directory` whose Java or Spark is gone (a virtual environment removed
    without `make clean`): each would otherwise stay, some 190 MB, since no installation maps an
    archive of another. An archive without an owner file is kept."""
    orphans = []
    for archive in sorted(directory.glob("spark-driver-*.jsa")):
        try:
            owners = owner_path(archive).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        if owners and not all(Path(p).exists() for p in owners):
            orphans.append(archive)
    return orphans


def _quoted(path: Path) -> str:
    return f'"{path}"' if " " in str(path) else str(path)


def sharing_options() -> str | None:
    """The driver's Java options that map the archive, when it is there and not turned off."""
    if os.environ.get(DISABLE_ENV, "").lower() in ("off", "0", "false", "no"):
        return None
    path = archive_path()
    if path is None or not path.is_file():
        return None
    return f"-XX:SharedArchiveFile={_quoted(path)} {QUIET}"


def recording_options(target: Path) -> str:
    """The driver's Java options that write the classes it loaded to `target` when it exits."""
    return f"-XX:ArchiveClassesAtExit={_quoted(target)} {QUIET}"
