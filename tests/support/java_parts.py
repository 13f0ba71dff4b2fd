"""The class paths of the Java parts the tests start, as `scripts/resolve-java-parts.sh` resolved them.

`make test` resolves every `deploy/<part>/pom.xml` into Maven's local repository and writes the part's
class path under `$QUOTAPLANE_CACHE/java/<part>/` (default `~/.cache/quotaplane`); nothing here reaches
the network. A part that was not resolved is an error that says how to resolve it, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class MissingPart(RuntimeError):
    """A Java part the tests need was not resolved on this machine."""


def cache_dir() -> Path:
    root = os.environ.get("QUOTAPLANE_CACHE") or str(Path.home() / ".cache" / "quotaplane")
    return Path(root) / "java"


def classpath(part: str) -> str:
    """The resolved class path of `deploy/<part>/pom.xml`, every jar checked to exist."""
    path = cache_dir() / part / "classpath.txt"
    if not path.is_file():
        raise MissingPart(f"the Java part {part!r} is not resolved ({path} is missing): run "
                          f"`sh scripts/resolve-java-parts.sh {part}` (make test does)")
    jars = path.read_text().strip().split(os.pathsep)
    missing = [jar for jar in jars if not Path(jar).is_file()]
    if missing:
        raise MissingPart(f"the Java part {part!r} lacks {len(missing)} jar(s), e.g. {missing[0]}: run "
                          f"`sh scripts/resolve-java-parts.sh {part}` again")
    return os.pathsep.join(jars)


def jar(part: str, artifact: str) -> Path:
    """The one jar of `part` whose file name starts with `artifact-` (a java agent, a plugin)."""
    found = [Path(j) for j in classpath(part).split(os.pathsep) if Path(j).name.startswith(f"{artifact}-")]
    if len(found) != 1:
        raise MissingPart(f"the Java part {part!r} has {len(found)} jar(s) named {artifact}-*")
    return found[0]
