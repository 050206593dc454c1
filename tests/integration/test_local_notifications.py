"""On ``lockgate local``, proposals made and refused at the same time notify exactly what exists.

A proposal refused by a pending limit is a cancelled transaction. On moto alone its writes
reached the Approvals stream (reviewers got links to proposals that never existed) and the
notifier's reader never saw another record (later proposals were never notified). The stack
now keeps AWS's promise (``lockgate_infra.local.fidelity``); this is the end-to-end check.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate.webhooks.signing import sign
from lockgate_infra.local.approval_walk import decide, page_text, pending_proposals
from lockgate_infra.local.loopback import request
from lockgate_infra.local.run import seed_secrets
from tests.support import local_stack_in_thread

LINK = re.compile(r"^\[approval\] (\w+): (.*) -> (http://\S+)$", re.MULTILINE)
REFUND_ASKERS = {"A-2001": "grace@example.com", "A-1043": "ada@example.com"}


@pytest.fixture
def stack() -> Iterator[Any]:
    with local_stack_in_thread() as running:
        yield running


def send_refund_requests(stack: Any, requests: list[tuple[str, str]]) -> None:
    """POST one signed helpdesk email per (message id, order) at once, as customers write at once."""
    config = load_config(stack.config_path)
    secret = seed_secrets(stack)["helpdesk"]
    source = config.source("helpdesk")
    assert source is not None and stack.gateway is not None
    answers: list[int] = []

    def post(message_id: str, order: str) -> None:
        body = json.dumps(
            {
                "message_id": message_id,
                "from": REFUND_ASKERS[order],
                "subject": f"Refund for order {order}",
                "text": f"My order {order} arrived broken. Please refund it.",
            }
        ).encode()
        headers = sign(source, secret, body, int(time.time()), delivery_id=message_id, event_type="email")
        answers.append(request(f"{stack.gateway.url}/webhooks/helpdesk", body, headers)[0])

    threads = [threading.Thread(target=post, args=pair) for pair in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * len(requests)
    assert stack.drain(timeout=120)


def notified(captured: str) -> dict[str, set[str]]:
    """approval id → the reviewers whose links were printed."""
    out: dict[str, set[str]] = {}
    for reviewer, _summary, link in LINK.findall(captured):
        approval_id = link.rsplit("/approvals/", 1)[1].split("?", 1)[0]
        out.setdefault(approval_id, set()).add(reviewer)
    return out


def links(captured: str) -> dict[str, str]:
    """approval id → one printed link for it."""
    return {link.rsplit("/approvals/", 1)[1].split("?", 1)[0]: link for _, _, link in LINK.findall(captured)}


@pytest.mark.slow  # end to end on lockgate local; tests/conformance states the same promises in make test
def test_concurrent_refused_proposals_notify_nothing_and_later_ones_are_still_notified(
    stack: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given three customers' emails each for two orders, arriving together: one pending proposal
    # per order is allowed, so four of the six are refused (cancelled transactions)
    send_refund_requests(
        stack, [(f"msg-{order}-{n}", order) for n in range(3) for order in ("A-2001", "A-1043")]
    )
    first = capsys.readouterr().err

    # Then exactly the proposals that exist were notified, to every reviewer with the refunds role
    existing = {p.approval_id: p for p in pending_proposals(stack)}
    assert sorted(p.summary.split(" on order ")[1] for p in existing.values()) == ["A-1043", "A-2001"]
    assert notified(first) == {approval_id: {"alice", "bob"} for approval_id in existing}
    # ...and every printed link opens its own proposal
    for approval_id, link in links(first).items():
        assert existing[approval_id].summary in page_text(link)

    # When a reviewer rejects the A-2001 refund (its order is free again) and Grace asks once more
    a_2001 = next(p for p in existing.values() if p.summary.endswith("A-2001"))
    steps = decide(links(first)[a_2001.approval_id], "reject")
    assert [step.status for step in steps] == [200, 200]
    assert stack.drain(timeout=60)
    send_refund_requests(stack, [("msg-A-2001-again", "A-2001")])
    later = capsys.readouterr().err

    # Then the notifier is still reading the stream: exactly the new proposal is notified
    newer = {p.approval_id for p in pending_proposals(stack)} - set(existing)
    assert len(newer) == 1
    assert notified(later) == {newer.pop(): {"alice", "bob"}}
