"""Plain handlers for the example (the agent tasks are in ``shop.task`` and ``shop.summary``)."""

from __future__ import annotations

from lockgate import BadDelivery, InboxEvent, TaskContext


def order_updated(event: InboxEvent, context: TaskContext) -> str:
    """A partner's order status change; an update older than one already applied is refused."""
    data = event.json()
    order = data.get("order") if isinstance(data, dict) else None
    if not isinstance(order, dict) or not isinstance(order.get("id"), str):
        raise BadDelivery('order.updated needs {"order": {"id": ..., "status": ...}}')
    updated_at = order.get("updated_at")
    if not isinstance(updated_at, (int, float)):
        raise BadDelivery("order.updated needs order.updated_at (epoch seconds)")
    context.versions.apply_if_newer(f"order#{order['id']}", updated_at, event.delivery.delivery_id)
    return f"order {order['id']} is now {order.get('status', 'unknown')}"
