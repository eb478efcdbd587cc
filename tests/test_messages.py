from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hlmem.jobs import JobSpec
from hlmem.messages import (
    JOB_PAYLOAD,
    EventIn,
    EventsAdded,
    FlushRequested,
    JobKind,
    JobPayload,
    SessionEnded,
    WindowClosed,
)

ids = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
payloads = st.one_of(
    st.builds(EventsAdded, event_ids=st.lists(ids, min_size=1, max_size=20).map(tuple)),
    st.builds(SessionEnded, namespace=ids, session_id=ids),
    st.builds(FlushRequested, namespace=st.none() | ids, session_id=st.none() | ids),
    st.builds(WindowClosed, window_id=ids, namespace=ids, session_id=ids),
)


@given(payloads)
@settings(max_examples=300, deadline=None)
def test_payload_json_job_row_round_trip(payload: JobPayload) -> None:
    row = JobSpec(kind=JobKind.WINDOWER, payload=payload).row(now=1.0)
    assert JOB_PAYLOAD.validate_json(row[1]) == payload


def test_payload_kinds_are_discriminated() -> None:
    with pytest.raises(ValidationError):
        JOB_PAYLOAD.validate_json('{"kind": "events_added", "event_ids": []}')
    with pytest.raises(ValidationError):
        JOB_PAYLOAD.validate_json('{"kind": "window_closed", "window_id": "w", "extra": 1}')


def test_event_in_validates_chinese_and_english() -> None:
    ok = EventIn(session_id="会话-1", content="我主要用深色模式")
    assert ok.role == "user"
    when = datetime(2026, 1, 1, tzinfo=UTC)
    EventIn(session_id="s", content="I prefer dark mode", occurred_at=when)
    for bad in (
        {"session_id": "s", "content": "   "},
        {"session_id": "", "content": "x"},
        {"session_id": "s", "content": "x", "role": "robot"},
        {"session_id": "s", "content": "x", "occurred_at": "2026-01-01T00:00:00"},  # naive
        {"session_id": "s", "content": "x", "surprise": 1},
        {"session_id": "s", "content": "a\x00b"},
    ):
        with pytest.raises(ValidationError):
            EventIn.model_validate(bad)
