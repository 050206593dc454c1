"""Property tests: whatever arguments the model sends, the guard answers, and what it clears is safe.

The model's arguments are untrusted input. For any JSON-shaped arguments to any of the shop's
tools, the guard must return a ruling (never raise), and a side effect it clears must satisfy
the hard rules checked here independently: the refund is on the verified customer's own order,
within what is refundable and under the approval limit; the email goes to that customer only.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import Allowed, Check, NeedsPerson, RunState, rule_on
from lockgate.agent.tasks import Start, Task
from shop.policies import APPROVAL_LIMIT
from shop.refunds import REFUND_ORDER
from shop.replies import send_email_tool
from shop.tools import FIND_ORDERS, LOOKUP_ORDER, READ_EMAIL, SEARCH_HELP
from tests.unit.test_shop_policies import ADA, HOST, SHOP_ADDRESS, FakeLookup

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`

FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

TASK = Task(
    name="fuzz",
    source="helpdesk",
    event_type="*",
    system="You help customers.",
    tools=(
        READ_EMAIL,
        LOOKUP_ORDER,
        FIND_ORDERS,
        SEARCH_HELP,
        send_email_tool(HOST, SHOP_ADDRESS),
        REFUND_ORDER,
    ),
    start=lambda event, services: Start("", RunFacts()),
)
LOOKUP = FakeLookup()

# JSON values as a model could send them, with the shop's own shapes mixed in so that
# examples reach the policy checks, not only the schema.
real_orders = st.sampled_from(sorted(LOOKUP.orders))
order_ids = st.one_of(
    real_orders,
    real_orders,
    st.sampled_from(["A-9999", "a-1042", "A1042", " A-1042 ", ""]),
    st.text(max_size=12),
)
plausible_amounts = st.decimals(min_value="0.01", max_value="300", places=2)
amounts = st.one_of(
    plausible_amounts.map(str),
    plausible_amounts.map(float),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.text(max_size=10),
)
addresses = (
    st.sampled_from([ADA, "ADA@example.com", "grace@example.com", "ada@example.com.evil.example"])
    | st.emails()
)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
reasons = st.sampled_from(["arrived damaged", "late"]) | st.text(max_size=30)
texts = st.sampled_from(
    ["Hello", "See https://shop.example.com/help", "Visit https://evil.example"]
) | st.text(max_size=60)
# Well-formed calls per tool, so most examples get past the schema to the policies...
calls = st.one_of(
    st.tuples(
        st.just("refund_order"),
        st.fixed_dictionaries({"order_id": order_ids, "amount": amounts, "reason": reasons}),
    ),
    st.tuples(
        st.just("send_email"),
        st.fixed_dictionaries(
            {
                "to": addresses,
                "subject": st.sampled_from(["Your order", "Re: refund"]) | st.text(max_size=20),
                "body": texts,
            }
        ),
    ),
    st.tuples(st.just("lookup_order"), st.fixed_dictionaries({"order_id": order_ids})),
    st.tuples(st.just("find_orders"), st.fixed_dictionaries({"customer_email": addresses})),
    st.tuples(
        st.just("read_email"),
        st.fixed_dictionaries({"message_id": st.sampled_from(["m-ada", "m-grace"]) | st.text(max_size=10)}),
    ),
    st.tuples(st.just("search_help"), st.fixed_dictionaries({"query": st.text(max_size=30)})),
)
# ...and anything at all, to any name, for the rest.
tool_names = st.sampled_from([tool.name for tool in TASK.tools] + ["issue_refund", "", "send_email "])
junk_calls = st.tuples(
    tool_names, st.dictionaries(st.text(max_size=10), json_values, max_size=4) | json_values
)
customers = st.sampled_from([ADA, "grace@example.com", None])


def run_state(customer: str | None, tainted: bool) -> RunState:
    values = {"customer_email": customer} if customer else {}
    return RunState(RunFacts(values=values, lookup=LOOKUP), ["an email from a stranger"] if tainted else [])


@FUZZ
@given(call=calls | junk_calls, customer=customers, tainted=st.booleans())
def test_property_any_arguments_get_a_decision_and_cleared_side_effects_obey_the_hard_rules(
    call: tuple[str, Any], customer: str | None, tainted: bool
) -> None:
    name, args = call
    # Given any arguments the model might send, for any run
    # When the guard rules
    ruling = rule_on(TASK.tools, name, args, run_state(customer, tainted))
    # Then it answers with one of its checks and a reason whenever it objects
    assert isinstance(ruling.check, Check)
    assert isinstance(ruling, Allowed) or ruling.reason
    if not isinstance(ruling, Allowed):
        return
    # And whatever it cleared is safe by rules checked here, not by the guard's own code
    assert (
        customer is not None or ruling.tool is None or ruling.tool.name not in {"refund_order", "send_email"}
    )
    if name == "refund_order":
        order = LOOKUP.order(ruling.args.order_id)
        assert order is not None and order.customer_email == customer
        assert Decimal(0) < ruling.args.amount <= order.refundable
        assert ruling.args.amount <= APPROVAL_LIMIT
        assert not tainted  # a refund after reading untrusted content always waits for a person
    if name == "send_email":
        assert customer is not None and ruling.args.to.lower() == customer


@FUZZ
@given(order_id=real_orders, amount=plausible_amounts, customer=customers, tainted=st.booleans())
def test_property_a_well_formed_refund_is_cleared_exactly_when_the_rules_allow_it(
    order_id: str, amount: Decimal, customer: str | None, tainted: bool
) -> None:
    # Given a well-formed refund on a real order, for any customer and taint
    args = {"order_id": order_id, "amount": str(amount), "reason": "arrived damaged"}
    # When the guard rules
    ruling = rule_on(TASK.tools, "refund_order", args, run_state(customer, tainted))
    # Then it clears exactly the refunds an independent reading of the rules allows
    order = LOOKUP.orders[order_id]
    allowed = order.customer_email == customer and amount <= order.refundable
    assert isinstance(ruling, Allowed) is (allowed and not tainted and amount <= APPROVAL_LIMIT)
    # And a refund the rules allow is never refused outright: it waits for a person instead
    if allowed and not isinstance(ruling, Allowed):
        assert isinstance(ruling, NeedsPerson)
