"""Spark's failures that are the input's fault, as `InputError`s: a file Spark cannot read.

Spark reports a file it cannot read (not Parquet, cut short, unreadable) as `FAILED_READ_FILE`
with the file's URI, the reader's own reason as the exception's cause. Only the text is read here,
so that both a local session's Java exception and Spark Connect's error are recognised without
importing pyspark.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from quotaplane.core.errors import InputError

_FAILED_READ = re.compile(
    r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file (?P<uri>\S+?)\.(?:\s|$)")
_CAUSE = re.compile(r"^Caused by: [\w.$]+: (?P<reason>.+)$", re.MULTILINE)


def unreadable_file(failure: BaseException) -> InputError | None:
    """The `InputError` naming the file Spark could not read and why (its innermost cause), or None
    when `failure` is not such a failure."""
    text = str(failure)
    found = _FAILED_READ.search(text)
    if found is None:
        return None
    uri = found["uri"]
    path = unquote(urlparse(uri).path) if uri.startswith("file:") else uri
    causes = _CAUSE.findall(text)
    reason = causes[-1].strip() if causes else "Spark could not read it"
    return InputError(path, "(file)", path.rsplit("/", 1)[-1], f"cannot read: {reason}")
