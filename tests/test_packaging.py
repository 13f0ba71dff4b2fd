"""The package ships to Spark executors as a zip, where only regular packages can be imported."""

from __future__ import annotations

import zipfile
from pathlib import Path

from quotaplane.core.spark.session import package_zip

SRC = Path(__file__).resolve().parents[1] / "src" / "quotaplane"


def test_every_source_folder_is_a_regular_package() -> None:
    folders = {p.parent for p in SRC.rglob("*.py")}
    missing = sorted(str(f.relative_to(SRC)) for f in folders if not (f / "__init__.py").exists())
    assert missing == []


def test_the_shipped_zip_holds_every_module() -> None:
    names = set(zipfile.ZipFile(package_zip()).namelist())
    expected = {f"quotaplane/{p.relative_to(SRC)}" for p in SRC.rglob("*.py") if "__pycache__" not in p.parts}
    assert expected <= names
