"""The pure parts of a triage write: thresholds as people type them, and the kinds an
acknowledgement may have (the lake-facing parts are in tests/test_triage.py)."""

from __future__ import annotations

import pytest

from liger_warehouse.triage.events import ACK_KINDS, Event, Target, TriageRejected, parse_threshold

KERNEL = Target("kernel", "rms_norm", "kernel rms_norm")


@pytest.mark.parametrize(
    ("text", "value"), [("10%", 0.10), ("0.1", 0.1), (" 250% ", 2.5), ("default", None), ("DEFAULT", None)]
)
def test_a_threshold_is_a_fraction_a_percentage_or_the_default(text: str, value: float | None) -> None:
    assert parse_threshold(text) == value


@pytest.mark.parametrize(
    ("text", "says"),
    [("ten", "is not a number"), ("0", "out of range"), ("-5%", "out of range"), ("1001%", "out of range")],
)
def test_a_threshold_that_is_no_fraction_is_refused_by_name(text: str, says: str) -> None:
    with pytest.raises(TriageRejected, match=says):
        parse_threshold(text)


def test_an_acknowledgement_has_one_of_the_kinds() -> None:
    assert [Event("ack", KERNEL, "me", "n", kind=kind).kind for kind in ACK_KINDS] == list(ACK_KINDS)
    with pytest.raises(TriageRejected, match="kind 'benign' is not one of expected, infra, invalid, fixed"):
        Event("ack", KERNEL, "me", "n", kind="benign")
