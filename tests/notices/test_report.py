"""The notices report section from small aggregates (docs/notices.md, Outputs), without Spark."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from quotaplane.core.report import render_report
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, Notice, compare
from quotaplane.notices.report import (
    NoticeReportData,
    build_sections,
    notice_kpis,
    paused_figure,
    report_data_from_notices,
    timeline_figure,
    top_topics,
)
from quotaplane.notices.timeline import BUCKET_CHOICES_MS, TIMELINE_COLUMNS, bucket_ms_for, bucket_start

T0 = 1_717_372_800_000
HOT = "persistent://acme/web/clicks"
LOGS = "persistent://acme/logs/app"


def notice(dt_ms: int, topic: str, reason: str, receipt: str, paused: int, without: int, stalled: int = 0,
           stalled_without: int = 0, broker: str = "b0", pause: int = 0) -> Notice:
    return Notice(ts_ms=T0 + dt_ms, broker=broker, connection_id="c1/10.0.0.1:5000", producer_id=0,
                  topic=topic, reason=reason, pause_for_millis=pause, receipt=receipt,
                  connection_paused_ms=paused, stalled_topics=stalled,
                  connection_paused_ms_without_notices=without,
                  stalled_topics_without_notices=stalled_without)


NOTICES = [
    notice(100, HOT, "TopicProduceQuotaExceeded", "in_time", 0, 250, 0, 2, pause=250),
    notice(900, HOT, "TopicProduceQuotaExceeded", "late", 150, 250, 1, 2, pause=250),
    notice(1_500, HOT, "TopicProduceQuotaExceeded", "unsupported", 300, 300, 2, 2, pause=300),
    notice(2_200, LOGS, "BrokerProduceQuotaExceeded", "unsupported", 800, 800, 3, 3, broker="b1"),
    notice(2_300, LOGS, "MessageBufferSizeBreach", "in_time", 1_200, 1_200, 1, 1, broker="b1"),
    notice(4_000, "persistent://acme/orders/payments", "ConnectionPendingMessagesBreach", "in_time", 900,
           900),
    notice(4_100, "persistent://acme/telemetry/traces", "ResourceGroupProduceQuotaExceeded", "late", 0, 40,
           0, 1, broker="b1", pause=40),
]


def html(data: NoticeReportData) -> str:
    return render_report("report", "test", build_sections(data)).replace("<wbr>", "")  # no break hints


def test_report_data_from_notices() -> None:
    data = report_data_from_notices(NOTICES)
    assert data.bucket_ms == 1_000
    assert list(data.comparison.columns) == list(COMPARISON_COLUMNS)
    assert data.comparison.to_dict("records") == compare(NOTICES)
    assert list(data.timeline.columns) == list(TIMELINE_COLUMNS)
    first = data.timeline.iloc[0].to_dict()
    assert first == {"bucket_start_ms": T0, "reason": "TopicProduceQuotaExceeded", "notices": 2,
                     "connection_paused_ms": 150, "connection_paused_ms_without_notices": 500}
    assert data.timeline["notices"].sum() == len(NOTICES)
    assert data.timeline["connection_paused_ms"].sum() == sum(n.connection_paused_ms for n in NOTICES)
    kpis = dict(data.kpis)
    assert kpis["notices"] == "7" and kpis["receipts in time"] == "3 (43%)"
    assert kpis["connection pause, with notices"] == "3.4 s" and kpis["without notices"] == "3.7 s"
    assert kpis["innocent topics stalled, with / without"] == "7 / 11"
    assert report_data_from_notices(NOTICES, kpis=[("x", 1)]).kpis == [("x", 1)]


def test_bucket_rule() -> None:
    assert bucket_ms_for(None, None) == BUCKET_CHOICES_MS[0]
    assert bucket_ms_for(T0, T0 + 299_999) == 1_000
    assert bucket_ms_for(T0, T0 + 300_000) == 5_000
    assert bucket_ms_for(T0, T0 + 86_400_000) == 300_000
    assert bucket_ms_for(0, 10**13) == BUCKET_CHOICES_MS[-1]
    assert bucket_start(T0 + 1_234, 1_000) == T0 + 1_000
    assert bucket_start(T0 + 59_999, 60_000) == T0


def test_top_topics_sum_reasons_per_topic() -> None:
    top = top_topics(report_data_from_notices(NOTICES).comparison, n=3)
    payments = "persistent://acme/orders/payments"
    expected = [("b1", LOGS), ("b0", payments), ("b0", HOT)]
    assert list(zip(top["broker"], top["topic"], strict=True)) == expected
    assert top.loc[0, "reasons"] == "broker rate ×1, publish buffer ×1"
    assert top.loc[2, "notices"] == 3 and top.loc[2, "connection_paused_ms_without_notices"] == 800
    assert top.loc[2, "in_time"] == top.loc[2, "late"] == top.loc[2, "unsupported"] == 1


def test_top_topics_orders_each_topics_reasons_as_the_spec_lists_them() -> None:
    # notices of one topic in reverse order of REASONS, and of another topic outside the top
    rows = [notice(i, HOT, r, "in_time", 10, 10) for i, r in enumerate(
        ["MessageBufferSizeBreach", "BrokerProduceQuotaExceeded", "BrokerProduceQuotaExceeded",
         "TopicProduceQuotaExceeded"])] + [notice(9, LOGS, "TopicProduceQuotaExceeded", "in_time", 1, 1)]
    top = top_topics(report_data_from_notices(rows).comparison, n=1)
    assert list(top["topic"]) == [HOT]
    assert top.loc[0, "reasons"] == "topic rate ×1, broker rate ×2, publish buffer ×1"


def test_the_paused_figure_leaves_room_for_its_longest_label() -> None:
    long = "persistent://acme/" + "a-very-long-namespace/" * 3 + "topic"
    rows = [notice(0, HOT, "TopicProduceQuotaExceeded", "late", 5, 10),
            notice(1, long, "TopicProduceQuotaExceeded", "late", 5, 20)]
    figure = paused_figure(top_topics(report_data_from_notices(rows).comparison))
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    labels = [t.get_window_extent(renderer) for t in figure.axes[0].get_yticklabels()]
    assert min(box.x0 for box in labels) >= 0  # saved uncropped, no label is cut at the left
    assert min(box.x0 for box in labels) < 0.3 * figure.dpi  # and the margin is no wider than needed


def test_the_section_has_its_figures_and_tables() -> None:
    page = html(report_data_from_notices(NOTICES))
    assert "Producer throttle notices (PIP-385)" in page
    assert page.count("<figure>") == 3 and page.count("data:image/png;base64,") == 3
    assert "Innocent topics stalled, per reason" in page
    assert "Connection pause per topic (top 4)" in page
    assert "Notices per 1 s by reason" in page
    assert page.count("<table>") == 2
    for text in ("acme/web/clicks", "topic rate ×3", "MessageBufferSizeBreach", "receipts in time",
                 "pause sent (pause_for_millis)"):
        assert text in page, text


def test_the_timeline_stacks_one_filled_step_per_reason() -> None:
    data = report_data_from_notices(NOTICES)  # 1 s buckets: notices at 0, 0, 1, 2, 2 and 4 s
    figure = timeline_figure(data.timeline, data.bucket_ms)
    top = figure.axes[0]
    assert len(top.patches) == 0  # not a bar per bucket and reason
    assert len(top.collections) == data.timeline["reason"].nunique() == 5
    tops = [c.get_paths()[0].vertices[:, 1].max() for c in top.collections]
    assert tops == sorted(tops) and tops[-1] == 2  # stacked: the fullest buckets hold two notices
    figure.savefig(io.BytesIO(), format="png")


def test_empty_data_builds() -> None:
    for data in (NoticeReportData([], [], []), report_data_from_notices([])):
        assert data.comparison.empty and data.timeline.empty
        assert list(data.comparison.columns) == list(COMPARISON_COLUMNS)
        page = html(data)
        assert "no notice" in page and "<figure>" not in page
    assert dict(report_data_from_notices([]).kpis)["notices"] == "0"


def test_plain_rows_and_frames_are_accepted() -> None:
    data = report_data_from_notices(NOTICES)
    again = NoticeReportData(notice_kpis(compare(NOTICES)), compare(NOTICES),
                             data.timeline.to_dict("records"), data.bucket_ms, notes=["a note"])
    pd.testing.assert_frame_equal(again.comparison, data.comparison)
    pd.testing.assert_frame_equal(again.timeline, data.timeline)
    assert "a note" in html(again)
    with pytest.raises(ValueError, match="missing columns: notices"):
        NoticeReportData([], [{"broker": "b", "topic": "t", "reason": "r"}], [])
    with pytest.raises(ValueError, match="bucket_ms"):
        NoticeReportData([], [], [], 0)
