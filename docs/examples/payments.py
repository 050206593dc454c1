"""A tool that refunds a charge through an outside payments API (Stripe-like), once, and its stand-in.

The pattern for any API outside AWS that changes something:

- the adapter sends the ledger's key for the call (``ctx.idempotency_key``) as the API's
  ``Idempotency-Key``, so a retry of the same call is the same refund at the provider too;
- an answer it never got (a timeout, a dropped connection, a 5xx) is ``OutcomeUnknown``: the
  ledger records UNKNOWN and never runs it blindly again;
- the tool's ``reconcile`` hook asks the provider what the call with that key did (it tags the
  refund with the key), so the reconcile-operations job settles it without a person when it can;
- ``payments_stand_in()`` plays the API in tests and on ``lockgate local``, recording each call by
  its key (``lockgate_infra.testing.RecordingApi``).

Copy it into your workflow package and give ``register`` the API's URL (``PAYMENTS_API_URL``).
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from http.client import HTTPException
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field

from lockgate import OutcomeUnknown, Risk, Tool, ToolContext, ToolError

if TYPE_CHECKING:  # the stand-in is for tests and lockgate local: it is not deployed
    from lockgate_infra.testing import RecordedCall, RecordingApi


class PaymentsApi:
    """The provider's HTTP API: form-encoded requests, each change carrying an Idempotency-Key."""

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 10.0) -> None:
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._timeout = timeout  # well inside the function's own timeout

    def refund(self, key: str, charge: str, amount: int) -> dict[str, Any]:
        """Refund ``amount`` cents of ``charge``, once per key; ToolError if refused, else OutcomeUnknown."""
        fields = {"charge": charge, "amount": str(amount), "metadata[lockgate_key]": key}
        request = urllib.request.Request(  # noqa: S310 - the configured API's https (or stand-in) URL
            f"{self._base}/v1/refunds",
            data=urlencode(fields).encode(),
            headers={"Idempotency-Key": key, "Authorization": f"Bearer {self._key}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:  # noqa: S310
                return dict(json.load(answer))
        except urllib.error.HTTPError as exc:
            if exc.code < 500:  # refused: nothing happened, and the model may act on why
                raise ToolError(f"The payments API refused the refund ({exc.code}).") from exc
            raise OutcomeUnknown(f"the payments API answered {exc.code}") from exc
        except (urllib.error.URLError, HTTPException, OSError) as exc:  # sent, and no answer came
            raise OutcomeUnknown(f"no answer from the payments API: {exc}") from exc

    def find(self, key: str) -> dict[str, Any] | None:
        """The refund made with this key (the provider lists refunds by metadata), or None."""
        query = urlencode({"metadata[lockgate_key]": key})
        request = urllib.request.Request(  # noqa: S310 - as above
            f"{self._base}/v1/refunds?{query}", headers={"Authorization": f"Bearer {self._key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:  # noqa: S310
                found = json.load(answer).get("data") or []
        except (urllib.error.URLError, HTTPException, OSError) as exc:
            raise OutcomeUnknown(f"could not ask the payments API: {exc}") from exc
        return dict(found[0]) if found else None


class RefundArgs(BaseModel):
    """Which charge, and how much of it, in cents."""

    model_config = ConfigDict(extra="forbid")
    charge: str = Field(description="the charge's id, ch_...", pattern=r"^ch_[A-Za-z0-9]{1,60}$")
    amount: int = Field(description="cents to refund", gt=0, le=50_000)


def refund_charge(args: RefundArgs, ctx: ToolContext) -> dict[str, Any]:
    """Refund through the API, under the ledger's key for this call."""
    payments: PaymentsApi = ctx.services["payments"]
    if ctx.idempotency_key is None:  # a side-effect tool always gets one; say so if not
        raise ToolError("refund_charge runs only through the ledger")
    return payments.refund(ctx.idempotency_key, args.charge, args.amount)


def reconcile_refund(key: str, services: Any) -> dict[str, Any] | None:
    """What the call with this key did: the refund the provider holds under it, or None."""
    payments: PaymentsApi = services["payments"]
    return payments.find(key)


REFUND_CHARGE: Tool[RefundArgs] = Tool(
    name="refund_charge",
    description="Refund part or all of a card charge, in cents.",
    args=RefundArgs,
    run=refund_charge,
    summary=lambda a: f"refund {a.amount / 100:.2f} of charge {a.charge}",
    risk=Risk.APPROVAL,  # money leaves: a person approves each one
    identity=lambda a: f"refund#{a.charge}#{a.amount}",  # one refund per charge and amount, ever
    reconcile=reconcile_refund,
)


def payments_stand_in() -> RecordingApi:
    """The payments API played on 127.0.0.1: refunds answered as the provider does, each recorded by key.

    For tests (the ``lockgate_environment`` fixture) and ``lockgate local --stand-in
    PAYMENTS_API_URL=yourpackage.payments:payments_stand_in``.
    """
    from lockgate_infra.testing import RecordingApi

    return RecordingApi({"POST /v1/refunds": refund_answer}, name="payments API (stand-in)")


def refund_answer(call: RecordedCall) -> dict[str, Any]:
    """A refund object, as the provider answers a new one."""
    return {
        "id": "re_" + hashlib.sha256(call.key.encode()).hexdigest()[:14],
        "object": "refund",
        "amount": int(call.fields["amount"]),
        "charge": call.fields["charge"],
        "status": "succeeded",
        "metadata": {"lockgate_key": call.fields["metadata[lockgate_key]"]},
    }
