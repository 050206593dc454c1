"""The facts a shop run's policies and tools read: current orders, and the emails received."""

from __future__ import annotations

from dataclasses import dataclass, field

from shop.data import Order, Orders
from shop.mailbox import Email, Mailbox


@dataclass(frozen=True)
class ShopFacts:
    """Current facts for the policies, read from the shop's own tables (RunFacts.lookup).

    One per run. What never changes is read once per run: a received email (a message id keeps
    its first sender; the run's thread in one read), shared by the policy and ``read_email``, and
    who an order belongs to, for the ownership checks. An order itself is read every time (a
    refund's check needs what is refundable now), except that ``lookup_order`` shows the order its
    own ownership check read.
    """

    orders: Orders
    mailbox: Mailbox
    thread: tuple[str, ...] = ()  # the sender's earlier message ids the run was told about
    _emails: dict[str, Email] = field(default_factory=dict, compare=False, repr=False)
    _owners: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _just_read: dict[str, Order] = field(default_factory=dict, compare=False, repr=False)
    _last_read: dict[str, Order] = field(default_factory=dict, compare=False, repr=False)

    def remember(self, email: Email) -> ShopFacts:
        """Know a received email without reading it (the run's own, which start just stored)."""
        self._emails[email.message_id] = email
        return self

    def email(self, message_id: str) -> Email | None:
        """A received email, read at most once per run (an unknown id is asked again).

        The first one of the run's thread asked for brings the whole thread in one read: a run
        told about earlier emails reads them one after another.
        """
        if message_id not in self._emails and message_id in self.thread:
            unread = [known for known in self.thread if known not in self._emails]
            self._emails.update(self.mailbox.get_many(unread))
        if message_id not in self._emails:
            found = self.mailbox.get(message_id)
            if found is None:
                return None
            self._emails[message_id] = found
        return self._emails[message_id]

    def order(self, order_id: str) -> Order | None:
        """An order, read now."""
        order = self.orders.get(order_id)
        if order is not None:
            self._owners[order_id] = order.customer_email
            self._last_read[order_id] = order
        return order

    def as_checked(self, order_id: str) -> Order | None:
        """The order as this run's checks last read it, else read now: what a person is shown.

        A proposal's summary and facts come right after the policy that read the order for this
        very call, so the page shows the numbers that were checked, without a third read.
        """
        found = self._last_read.get(order_id)
        return found if found is not None else self.order(order_id)

    def owner_of(self, order_id: str) -> str | None:
        """The customer an order belongs to (None for no such order), read at most once per run.

        When this check is what read the order, the order is kept for the tool of the same call
        (``just_read``); any later check of it forgets that read.
        """
        if order_id in self._owners:
            self._just_read.pop(order_id, None)
            return self._owners[order_id]
        order = self.order(order_id)
        if order is not None:
            self._just_read[order_id] = order
        return self._owners.get(order_id)

    def just_read(self, order_id: str) -> Order | None:
        """The order as the ownership check of this same tool call read it (once), else read now.

        For answers that show an order (``lookup_order``): the check's read is milliseconds old.
        A refund's checks and its effect never use this: they read the order now.
        """
        found = self._just_read.pop(order_id, None)
        return found if found is not None else self.order(order_id)

    def orders_of(self, email: str) -> list[Order]:
        """A customer's orders."""
        return self.orders.of_customer(email)

    def sender_of(self, message_id: str) -> str | None:
        """Who sent a received email."""
        email = self.email(message_id)
        return email.sender if email else None
