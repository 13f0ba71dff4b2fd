"""Values as the report and the console write them, with their units: sizes in binary units, rates
per second, times in UTC with the year. No plotting library here: the stages' summaries use them too.
"""

from __future__ import annotations

from datetime import UTC, datetime


def size_text(n: float | None) -> str:
    """Bytes in binary units, three significant digits: `0 B`, `812 B`, `28.5 KiB`, `372 MiB`,
    `1.26 GiB`; `—` for None."""
    if n is None:
        return "—"
    value, unit = float(n), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024:
            break
        value, unit = value / 1024, bigger
    if unit == "B":
        return f"{value:,.0f} B"
    return f"{value:.3g} {unit}" if abs(value) < 1000 else f"{value:,.0f} {unit}"


def rate_text(n: float | None) -> str:
    """Bytes per second in binary units (`size_text`), `/s`."""
    return "—" if n is None else size_text(n) + "/s"


def when_text(ms: int | None, seconds: bool = False) -> str:
    """Epoch milliseconds as `2024-06-03 12:00 UTC` (with `:01` when `seconds`); `—` for None."""
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else "")) + \
        " UTC"
