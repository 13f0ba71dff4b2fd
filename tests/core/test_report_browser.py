"""The report of the bundled example (what `make run` writes) in a real browser: headless Chromium
(Debian's `chromium`; `make test` installs it) at 1024 and 1400 px wide, where nothing may be wider
than the page: not the document, nor a table, figure or image beyond its section. The report's
"Now" summary comes first and names the cause of what is throttled."""

from __future__ import annotations

import re

import pytest

from quotaplane.core.report import Section, render_report
from quotaplane.core.runner import run_pipeline
from quotaplane.registry import POLICIES
from quotaplane.run_command import bundled_example
from tests.support.browser import WIDTHS, chromium, overflow

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def browser() -> str:
    binary = chromium()
    if binary is None:
        pytest.fail("chromium is not installed: `make test-tools` installs Debian's chromium package "
                    "(as root, with apt-get)")
    return binary


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory: pytest.TempPathFactory) -> str:
    telemetry, configs = bundled_example()
    out = tmp_path_factory.mktemp("example")
    outcome = run_pipeline(telemetry, configs, out, POLICIES, stream=None, spark=spark)
    return outcome.report.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_wider_than_the_page(report: str, width: int) -> None:
    probe = overflow(browser(), report, width)
    assert probe["width"] == width  # the window Chromium laid the page out in
    assert probe["overflow"] == []


def test_the_probe_sees_a_table_wider_than_the_page() -> None:
    """The check above can fail: an unbreakable cell makes its table, and the page, too wide."""
    section = Section("Wide").table(["a"], [("x" * 400,)])
    probe = overflow(browser(), render_report("t", "s", [section]), 1024)
    assert {item["what"] for item in probe["overflow"]} >= {"document", "table"}


def test_the_now_summary_comes_first_and_names_causes(report: str) -> None:
    text = re.sub(r"<wbr>", "", report)
    sections = re.findall(r'<section id="([^"]+)"', text)
    assert sections[:2] == ["now", "overview"]
    now = text[text.index('<section id="now">'):text.index('<section id="overview">')]
    for heading in ("Throttled or over a quota at the end of the telemetry", "Closest to their limits",
                    "What runs out next"):
        assert heading in now, heading
    # the cluster source ends throttled by broker 2's full volume, not by the first fallback
    assert "every producer of cluster my-cluster" in now
    assert "volume broker 2 /var/lib/kafka/data-1 at its hard limit" in now
    storage = text[text.index('<section id="storage-volume-quotas">'):]
    storage = storage[:storage.index("</section>")]
    assert "fallback factor: an active broker sent no volumes (missing_broker_data)" in storage
    # the local source's outcome is no warning, the cluster source's is
    notes = re.findall(r'<p class="note">(.*?)</p>', storage)
    fine = re.findall(r'<p class="ok">(.*?)</p>', storage)
    assert any("cluster source" in n for n in notes) and not any("local source" in n for n in notes)
    assert any("local source" in f and "never throttled" in f for f in fine)


def test_units_and_times_are_written_out(report: str) -> None:
    text = re.sub(r'<wbr>|src="data:[^"]*"', "", report)  # the text, without the images' data
    assert "(bytes)" not in text and "(B/s)" not in text and "bytes)</th>" not in text
    # a topic's backlog age reads the same in the backlog and the forecast tables
    for section in ("pulsar-backlog-quotas--pip-323", "what-runs-out-next"):
        part = text[text.index(f'<section id="{section}">'):]
        row = re.search(r"<td>persistent://acme/orders/payments-partition-2</td>(.*?)</tr>", part).group(1)
        assert '<td class="num">unknown</td>' in row, section
