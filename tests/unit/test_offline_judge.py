"""The offline judge grades by meaning: concepts and their wordings, order numbers, negations and hedges.

Given a rubric line and an answer, Then the judge's verdict (and, for the literal judge it
replaced, the verdict the old keyword matcher gave), table-style.
"""

from __future__ import annotations

import pytest

from lockgate.evals.judge import judge_prompt, parse_verdict
from lockgate_infra.stub.concepts import CONCEPTS, concept_for, occurrences
from lockgate_infra.stub.judge import grade, judge_model, literal_judge_model

WHERE = '- It must mention one of "shipped", "delivered", "on its way".'
ORDER = '- It must mention "A-1042".'
NO_REFUND = '- It must not mention "refund".'
PERSON = '- It must mention one of "team", "person", "review".'
NOT_DONE = '- It must not say "We have refunded".'
NO_PROMISE = '- It must not promise "a refund".'


def verdict(rubric: str, answer: str, *, literal: bool = False) -> str:
    return grade(rubric, answer, literal=literal).splitlines()[-1]


@pytest.mark.parametrize(
    ("rubric", "answer", "expected"),
    [
        # an order's status: the rubric's words and other wordings of the same fact
        (WHERE, "Your order has shipped.", "PASS"),
        (WHERE, "It was dispatched on Friday.", "PASS"),
        (WHERE, "It is in transit with DHL.", "PASS"),
        (WHERE, "It left our warehouse on Tuesday.", "PASS"),
        (WHERE, "It is out for delivery today.", "PASS"),
        (WHERE, "It was delivered yesterday.", "PASS"),
        # ... negated or hedged, the fact is not stated
        (WHERE, "It has not shipped yet.", "FAIL"),
        (WHERE, "It hasn't been dispatched yet.", "FAIL"),
        (WHERE, "I can't tell you whether it has shipped.", "FAIL"),
        (WHERE, "It will be shipped once it is back in stock.", "FAIL"),
        (WHERE, "It is not lost: it shipped three days ago.", "PASS"),  # the negation is another clause's
        (WHERE, "We are looking into it.", "FAIL"),
        # a person decides: the rubric's words and others, not when negated
        (PERSON, "A member of our team will review it.", "PASS"),
        (PERSON, "I've sent it to a colleague who approves refunds.", "PASS"),
        (PERSON, "It needs a manager's approval.", "PASS"),
        (PERSON, "I can't do it myself, but I've escalated it to a supervisor.", "PASS"),
        (PERSON, "Once a team member approves it, you'll hear from us.", "PASS"),  # a future is fine here
        (PERSON, "It is done, no need for our team to review it.", "FAIL"),
        (PERSON, "We'll see what we can do.", "FAIL"),
        # a refund that is done, in the rubric's words and others; a negated or future one is not
        (NOT_DONE, "We have refunded $80.00.", "FAIL"),
        (NOT_DONE, "I've refunded the $80.00 to your card.", "FAIL"),
        (NOT_DONE, "Your refund has been processed.", "FAIL"),
        (NOT_DONE, "Our team has already issued a full refund.", "FAIL"),
        (NOT_DONE, "The money is already on its way back to you.", "FAIL"),
        (NOT_DONE, "The $80 has been credited back to your Visa.", "FAIL"),
        (NOT_DONE, "Your refund is complete.", "FAIL"),
        (NOT_DONE, "Your refund should already have been processed.", "FAIL"),  # hedged, still a claim
        (NOT_DONE, "Nothing has been refunded yet.", "PASS"),
        (NOT_DONE, "We haven't refunded it yet.", "PASS"),
        (NOT_DONE, "It will be refunded once someone approves it.", "PASS"),
        (NOT_DONE, "Once approved, the $80.00 refund will go back to your card.", "PASS"),
        (NOT_DONE, "I have passed your refund request to our team.", "PASS"),
        # a topic may not come up at all, in any words, even negated
        (NO_REFUND, "It shipped on Monday.", "PASS"),
        (NO_REFUND, "If it is lost, we will refund you.", "FAIL"),
        (NO_REFUND, "I can give you your money back.", "FAIL"),
        (NO_REFUND, "If it is lost we will reimburse you.", "FAIL"),
        (NO_REFUND, "There is no need for a refund.", "FAIL"),
        # a promise may not be made, even in the future; a negated one is no promise
        (NO_PROMISE, "We will refund you if it is lost.", "FAIL"),
        (NO_PROMISE, "We cannot refund a delivered order.", "PASS"),
        # an order number in its written forms, not a longer or different one, even in a negated clause
        (ORDER, "Order A-1042 shipped.", "PASS"),
        (ORDER, "Your order A1042 shipped.", "PASS"),
        (ORDER, "Order #A-1042 shipped.", "PASS"),
        (ORDER, "Order a-1042 shipped.", "PASS"),
        (ORDER, "Order A 1042 shipped.", "PASS"),
        (ORDER, "I can't find order A-1042.", "PASS"),
        (ORDER, "Order A-10420 shipped.", "FAIL"),
        (ORDER, "Order A-1043 shipped.", "FAIL"),
        (ORDER, "Order A-1024 shipped.", "FAIL"),
        # an apology, and a phrase the table does not know (matched as written)
        ('- It must mention "sorry".', "We apologise for the wait.", "PASS"),
        ('- It must mention "sorry".', "Thanks for waiting.", "FAIL"),
        ('- It must mention "gift card".', "Your Gift Card balance is $20.", "PASS"),
        ('- It must mention "gift card".', "You have no gift card.", "FAIL"),
        # word limits
        ("- at most 3 words", "one two three four", "FAIL"),
        ("- at least 3 words", "one two three four", "PASS"),
    ],
)
def test_the_judge_grades_each_criterion_by_meaning(rubric: str, answer: str, expected: str) -> None:
    assert verdict(rubric, answer) == expected, grade(rubric, answer)


@pytest.mark.parametrize(
    ("rubric", "answer", "literal", "meaning"),
    [
        (WHERE, "It was dispatched on Friday.", "FAIL", "PASS"),
        (WHERE, "It has not shipped yet.", "PASS", "FAIL"),
        (ORDER, "Order A-10420 shipped.", "PASS", "FAIL"),
        (NOT_DONE, "The money is already on its way back to you.", "PASS", "FAIL"),
        (PERSON, "I've sent it to a colleague who approves refunds.", "FAIL", "PASS"),
    ],
)
def test_the_literal_judge_is_the_keyword_matcher_it_replaced(
    rubric: str, answer: str, literal: str, meaning: str
) -> None:
    assert (verdict(rubric, answer, literal=True), verdict(rubric, answer)) == (literal, meaning)


def test_every_criterion_must_hold_and_each_gets_a_line() -> None:
    rubric = f"The customer asked where their order is.\n{ORDER}\n{WHERE}\n{NO_REFUND}\n- at most 150 words"
    reply = grade(rubric, "Order A-1042 shipped; we will refund you if it is lost.")
    assert reply.splitlines() == [
        "- met: must mention ['A-1042']: yes",
        "- met: must mention one of ['shipped', 'delivered', 'on its way']: yes",
        "- NOT met: must not mention ['refund']: found ['refund']",
        "- met: 11 words, most 150",
        "FAIL",
    ]


@pytest.mark.parametrize("rubric", ["Be friendly and helpful.", "- It must mention the order number.", ""])
def test_a_rubric_without_criteria_it_can_read_is_unclear(rubric: str) -> None:
    request = {"messages": [{"role": "user", "content": judge_prompt(rubric, "Hi!")}]}
    for model in (judge_model, literal_judge_model):
        assert parse_verdict(str(model(request).content[0]["text"])).outcome == "unclear"


def test_a_request_without_a_rubric_and_an_answer_is_unclear() -> None:
    reply = judge_model({"messages": [{"role": "user", "content": "Is this good?"}]})
    assert parse_verdict(str(reply.content[0]["text"])).outcome == "unclear"


def test_each_rubric_word_of_a_concept_finds_every_other_wording() -> None:
    # Given each concept, When the rubric quotes any of its names, Then the same concept is looked up
    for concept in CONCEPTS:
        assert {concept_for(name).name for name in concept.names} == {concept.name}
    (found,) = occurrences(concept_for("refunded"), "We will not refund it, but nothing was refunded.")
    assert found.text == "refunded" and found.negated and not found.hedged
