"""Headless Chromium (Debian's `chromium` package) on a report: what overflows the page at a window
width, and screenshots of the top of the page.

Chromium starts with a new empty profile and every background service off: on a machine without
network it would otherwise wait for them. `python -m tests.support.browser REPORT OUT_PREFIX` writes
`OUT_PREFIX-1024.png` and `OUT_PREFIX-1400.png`, the top of the report at both widths in 64 colours
(the README's screenshots: `python -m tests.support.browser out/report.html docs/images/report-top`).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]
WIDTHS = (1024, 1400)
TIMEOUT_S = 120

# Run in the page once it has loaded: the document's width against the window's, and each table,
# figure and image against the section holding it (and the window); the result is written into the
# page, which --dump-dom prints.
PROBE = """<script>
window.addEventListener('load', () => {
  const root = document.documentElement, width = root.clientWidth, out = [];
  if (root.scrollWidth > width) out.push({what: 'document', right: root.scrollWidth, limit: width});
  document.querySelectorAll('table, figure, img, p, .kpis, nav').forEach((el) => {
    const box = el.getBoundingClientRect();
    const holder = (el.closest('section') || document.body).getBoundingClientRect();
    const limit = Math.min(width, holder.right);
    const section = el.closest('section');
    if (box.right > limit + 0.5 || el.scrollWidth > el.clientWidth + 1 && el.tagName === 'TABLE')
      out.push({what: el.tagName.toLowerCase(), section: section ? section.id : '',
                right: Math.round(box.right), limit: Math.round(limit)});
  });
  const pre = document.createElement('pre');
  pre.id = 'overflow-probe';
  pre.textContent = JSON.stringify({width: width, overflow: out});
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(binary: str, args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


def overflow(binary: str, page: str, width: int) -> dict[str, Any]:
    """`{"width": the window's inner width, "overflow": [what sticks out, where]}` of the HTML `page`
    at `width` px; raises RuntimeError with Chromium's output when the page did not load."""
    with tempfile.TemporaryDirectory(prefix="quotaplane-browser-") as tmp:
        path = Path(tmp) / "page.html"
        path.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
        result = _run(binary, [f"--window-size={width},900", "--dump-dom", path.as_uri()],
                      Path(tmp) / "profile")
    found = re.search(r'<pre id="overflow-probe">(.*?)</pre>', result.stdout, re.S)
    if found is None:
        raise RuntimeError(f"chromium printed no probe (exit {result.returncode}):\n"
                           + "\n".join(result.stderr.splitlines()[-20:]))
    return json.loads(html.unescape(found.group(1)))


def screenshot(binary: str, report: Path, width: int, out: Path, height: int = 900) -> None:
    """A PNG of the top `height` px of `report` at `width` px."""
    with tempfile.TemporaryDirectory(prefix="quotaplane-browser-") as tmp:
        result = _run(binary, [f"--window-size={width},{height}", f"--screenshot={out.resolve()}",
                               report.resolve().as_uri()], Path(tmp) / "profile")
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {result.returncode}):\n"
                           + result.stderr[-2000:])


def main(argv: list[str]) -> int:
    binary = chromium()
    if binary is None or len(argv) != 2:
        print("usage: python -m tests.support.browser REPORT OUT_PREFIX (needs Debian's chromium)",
              file=sys.stderr)
        return 2
    from PIL import Image  # matplotlib's dependency: the screenshots in 64 colours, small in git

    for width in WIDTHS:
        out = Path(f"{argv[1]}-{width}.png")
        screenshot(binary, Path(argv[0]), width, out)
        Image.open(out).convert("RGB").quantize(colors=64).save(out, optimize=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
