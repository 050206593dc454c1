"""The cost meter's capacity units: item sizes and secondary-index writes, by DynamoDB's rules."""

from __future__ import annotations

import pytest

from lockgate_infra.cost.units import Index, Table, index_write_units, item_bytes, table_write_units

INBOX = Table(keys=("pk",), indexes=(Index(("status", "received_at"), frozenset({"source"})),))
LEDGER = Table(keys=("pk",), indexes=(Index(("open_state", "opened_at"), None),))
OPEN = {"pk": {"S": "a"}, "open_state": {"S": "OPEN"}, "opened_at": {"N": "1"}}


def test_an_items_size_is_its_attribute_names_plus_values() -> None:
    assert item_bytes({"pk": {"S": "abc"}}) == 2 + 3
    assert item_bytes({"n": {"N": "12345"}}) == 1 + 4  # 5 digits: 3 bytes + 1
    assert item_bytes({"ok": {"BOOL": True}, "m": {"M": {"k": {"S": "v"}}}}) == 3 + 1 + (3 + 1 + 1 + 1)


def test_a_write_costs_the_larger_of_the_item_before_and_after() -> None:
    small, big = {"pk": {"S": "a"}}, {"pk": {"S": "a"}, "body": {"S": "x" * 1500}}
    assert table_write_units(None, small) == 1
    assert table_write_units(big, small) == 2  # shrinking a 1.5 KB item still writes 2 KB
    assert table_write_units(small, small, sent=big) == 2  # a refused put is billed as sent


@pytest.mark.parametrize(
    ("before", "after", "writes"),
    [
        (None, {"pk": {"S": "a"}}, 0),  # not in the (sparse) index before or after
        (None, OPEN, 1),  # added
        (OPEN, {"pk": {"S": "a"}}, 1),  # removed
        (OPEN, {**OPEN, "open_state": {"S": "UNKNOWN"}}, 2),  # re-keyed: old entry deleted, new one put
        (OPEN, {**OPEN, "note": {"S": "x"}}, 1),  # all projected: any change rewrites the entry
        (OPEN, dict(OPEN), 0),  # unchanged
    ],
)
def test_a_sparse_index_is_written_when_an_item_enters_leaves_or_moves(before, after, writes) -> None:
    assert index_write_units(LEDGER, before, after) == writes


def test_an_included_projection_is_not_written_when_only_other_attributes_change() -> None:
    before = {"pk": {"S": "a"}, "status": {"S": "DONE"}, "received_at": {"N": "1"}, "body": {"S": "x"}}
    after = {**before, "body": {"S": "y" * 2000}}
    assert index_write_units(INBOX, before, after) == 0
    assert index_write_units(INBOX, before, {**before, "source": {"S": "github"}}) == 1
