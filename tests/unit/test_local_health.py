"""When a poller of the embedded stack counts as stalled (lockgate_infra.local.health), rule by rule,
on a clock the test moves: no real time passes."""

from __future__ import annotations

import pytest

from lockgate_infra.local.health import STALL_SECONDS, Health


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def timeout_of(function: str) -> float:
    return {"Worker": 30.0}.get(function, float("inf"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_given_a_running_poller_with_nothing_to_do_then_it_is_alive(clock: Clock) -> None:
    health = Health(clock)
    clock.now += 3_600
    assert health.verdict(True, 0, timeout_of, "message").state == "alive"


def test_given_its_thread_ended_on_an_error_then_it_is_stalled_and_says_which(clock: Clock) -> None:
    health = Health(clock)
    health.end(RuntimeError("delete failed\nmore lines"))
    verdict = health.verdict(False, 0, timeout_of)
    assert (verdict.state, verdict.reason) == (
        "stalled",
        "its thread is not running (RuntimeError: delete failed)",
    )


@pytest.mark.parametrize(
    ("failures", "state"), [(2, "alive"), (3, "stalled")], ids=["two reads failed", "three reads failed"]
)
def test_given_reads_failing_in_a_row_then_the_third_makes_it_stalled(
    clock: Clock, failures: int, state: str
) -> None:
    health = Health(clock)
    for _ in range(failures):
        health.read(ConnectionError("refused"))
    verdict = health.verdict(True, 0, timeout_of)
    assert verdict.state == state
    if state == "stalled":
        assert verdict.reason == "its last 3 reads failed (ConnectionError: refused)"
    # And one read that works clears it
    health.read()
    assert health.verdict(True, 0, timeout_of).state == "alive"


def test_given_invocations_raising_in_a_row_then_it_is_stalled_until_one_succeeds(clock: Clock) -> None:
    health = Health(clock)
    for _ in range(3):
        health.invoking(1, "Worker")
        health.invoked(ValueError("bad delivery"))
    assert (
        health.verdict(True, 0, timeout_of).reason
        == "its last 3 invocations failed (ValueError: bad delivery)"
    )
    health.invoking(1, "Worker")
    health.invoked()
    assert health.verdict(True, 0, timeout_of).state == "alive"
    assert health.handled == 4 and health.last_activity == clock.now


def test_given_an_invocation_running_past_its_functions_timeout_then_it_is_stalled(clock: Clock) -> None:
    health = Health(clock)
    health.invoking(10, "Worker")
    clock.now += 30
    assert health.verdict(True, 5, timeout_of).state == "alive"  # busy, within its Timeout
    clock.now += 1
    assert health.verdict(True, 5, timeout_of).reason == (
        "one invocation has run 31 s, longer than Worker's Timeout of 30 s"
    )


def test_given_work_waiting_and_nothing_taken_for_longer_than_the_limit_then_it_is_stalled(
    clock: Clock,
) -> None:
    health = Health(clock)
    # Given a message seen waiting
    assert health.verdict(True, 1, timeout_of, "message").state == "alive"
    # When it is still waiting just within the limit, then past it, with nothing taken
    clock.now += STALL_SECONDS
    assert health.verdict(True, 1, timeout_of, "message").state == "alive"
    clock.now += 1
    verdict = health.verdict(True, 2, timeout_of, "message")
    assert (verdict.state, verdict.reason) == ("stalled", "2 messages waiting for 11 s and none taken")
    # And taking work clears it: the wait counts again from then
    health.invoking(2, "Worker")
    health.invoked()
    clock.now += STALL_SECONDS
    assert health.verdict(True, 1, timeout_of, "message").state == "alive"


def test_given_work_that_was_taken_meanwhile_then_an_old_first_sighting_does_not_stall_it(
    clock: Clock,
) -> None:
    health = Health(clock)
    health.verdict(True, 1, timeout_of, "record")
    clock.now += 5
    health.invoking(1, "Worker")
    health.invoked()  # progress after the work was first seen
    clock.now += STALL_SECONDS - 1
    assert health.verdict(True, 1, timeout_of, "record").state == "alive"
    # And nothing waiting resets the sighting
    health.verdict(True, 0, timeout_of, "record")
    clock.now += 100
    assert health.verdict(True, 1, timeout_of, "record").state == "alive"
