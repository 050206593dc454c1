"""Property tests on the approval desk: no tampered link or form decides anything, or errors.

The link's query string and the posted form are attacker-controlled. For any change to a real
link, any form token other than the real one, and any approval id, the desk must answer with a
4xx page (never a 5xx or an exception) and the Decisions table must stay empty.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.approvals.pages import FORM_TOKEN_FIELD
from tests.agent.conftest import AgentRig
from tests.agent.test_approvals import Approvals, decisions_table
from tests.agent.toolkit import Effects

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`

FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)


@pytest.fixture
def proposal(rig: AgentRig) -> tuple[Approvals, str, dict[str, str], str]:
    """A real pending proposal, alice's real link for it, and the real form token."""
    flow = Approvals(rig, Effects())
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    token = flow.form(approval_id, query, "approve")[FORM_TOKEN_FIELD]
    return flow, approval_id, query, token


@FUZZ
@given(
    data=st.data(),
    value=any_text,
    token=any_text,
    decision=any_text,
    extra=st.dictionaries(any_text, any_text, max_size=3),
)
def test_property_a_tampered_link_never_decides(
    proposal: tuple[Approvals, str, dict[str, str], str],
    data: st.DataObject,
    value: str,
    token: str,
    decision: str,
    extra: dict[str, str],
) -> None:
    flow, approval_id, query, real_token = proposal
    # Given alice's real link with one of its fields changed to anything else
    field = data.draw(st.sampled_from(sorted(query)))
    if value == query[field]:
        value += "x"
    tampered = {**extra, **query, field: value}
    form = {**tampered, FORM_TOKEN_FIELD: real_token, "decision": decision or "approve"}
    # When the page is opened and the form posted
    shown = flow.desk.show(approval_id, tampered)
    posted = flow.desk.decide(approval_id, tampered, form)
    # Then both are clear refusals, and nothing was decided
    assert 400 <= shown.status < 500 and 400 <= posted.status < 500
    assert decisions_table(flow) == []
    # And the real link with a made-up form token decides nothing either
    if token != real_token:
        refused = flow.desk.decide(
            approval_id, query, {**query, FORM_TOKEN_FIELD: token, "decision": "approve"}
        )
        assert 400 <= refused.status < 500
        assert decisions_table(flow) == []


@FUZZ
@given(
    approval_id=any_text,
    query=st.dictionaries(any_text, any_text, max_size=6),
    form=st.dictionaries(any_text, any_text, max_size=6),
)
def test_property_any_request_to_the_desk_is_answered_without_a_decision(
    proposal: tuple[Approvals, str, dict[str, str], str],
    approval_id: str,
    query: dict[str, str],
    form: dict[str, str],
) -> None:
    flow, _, _, _ = proposal
    # Given any path id, query string and form, none of them signed
    # When they reach the desk, Then each gets a 4xx page and nothing is decided
    assert 400 <= flow.desk.show(approval_id, query).status < 500
    assert 400 <= flow.desk.decide(approval_id, query, form).status < 500
    assert decisions_table(flow) == []
