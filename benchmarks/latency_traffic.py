"""The latency benchmark's traffic: customer emails to the helpdesk webhook, sent open-loop on a fixed
schedule (a late request is timed from when it was due, so a slow sender hides no latency). Like a
provider, the sender resends an email that got a 5xx or no answer, with the same id."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

RETRIES = 8  # a provider resends a 5xx (or no answer) at once, this many times at most
# (order, its customer): the seeded example orders (workflows/shop/seed.py), asked about in turn.
ASKS = (("A-1042", "ada@example.com"), ("A-2002", "grace@example.com"), ("A-1043", "ada@example.com"))


@dataclass(frozen=True)
class Email:
    """One customer email: its delivery id (also its message id and subject tag) and body."""

    tag: str
    body: bytes


def email(tag: str, n: int) -> Email:
    """A "where is my order?" email; the tag ends its subject, so the reply's subject carries it."""
    order, sender = ASKS[n % len(ASKS)]
    body = {
        "message_id": tag,
        "from": sender,
        "subject": f"Where is my order {order}? [{tag}]",
        "text": f"Hi, I ordered a while ago. Where is order {order}? Thanks. (note {n})",
    }
    return Email(tag, json.dumps(body).encode())


def schedule(label: str, rate: float, seconds: float) -> list[tuple[float, Email]]:
    """``rate`` emails a second for ``seconds``: (offset from the phase's start, email)."""
    count = max(1, round(rate * seconds))
    return [(n / rate, email(f"{label}-{n:05d}", n)) for n in range(count)]


@dataclass
class Sent:
    """What the sender saw: per tag, when it was due and when its 200 came back; other statuses."""

    due: dict[str, float] = field(default_factory=dict)
    acked: dict[str, float] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)  # the last status of those never answered 200
    resent: Counter[int] = field(default_factory=Counter)  # the provider's resends, by the status before
    most_late: float = 0.0  # the latest any request started after it was due, seconds


def send_on_schedule(
    url: str,
    plan: list[tuple[float, Email]],
    sign: Callable[[Email], dict[str, str]],
    senders: int = 64,
) -> Sent:
    """POST each email when it is due (perf_counter times), from up to ``senders`` connections."""
    parts = urlsplit(url)
    sent, lock, local = Sent(), threading.Lock(), threading.local()

    def once(mail: Email) -> int:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        try:
            local.conn.request("POST", "/webhooks/helpdesk", body=mail.body, headers=sign(mail))
            response = local.conn.getresponse()
            response.read()
        except OSError:  # no answer at all (status 0): the provider retries as after a 5xx
            del local.conn
            return 0
        return response.status

    def post(due: float, mail: Email) -> None:
        late = time.perf_counter() - due
        for attempt in range(RETRIES + 1):
            status = once(mail)
            if status < 500 and status != 0:
                break
            if attempt < RETRIES:
                with lock:
                    sent.resent[status] += 1
        with lock:
            sent.due[mail.tag] = due
            sent.most_late = max(sent.most_late, late)
            if status == 200:
                sent.acked[mail.tag] = time.perf_counter()
            else:
                sent.refused[mail.tag] = status

    start = time.perf_counter() + 0.2
    with ThreadPoolExecutor(max_workers=senders) as pool:
        for offset, mail in plan:
            due = start + offset
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            pool.submit(post, due, mail)
    return sent
