"""The one place where moto is made to keep the AWS promises Lockgate relies on.

Every embedded AWS goes through here: the local stack's moto server (``MotoServer.start``), the
tests' in-process moto, chaos and the eval rigs (``embedded_aws``). Each fix below states the
AWS behaviour, from AWS's documentation, that moto 5.2 does not keep; tests/conformance/ states
the same behaviours test by test and runs them against this emulator (and, opt-in, against AWS).

1. **One request at a time per DynamoDB endpoint.** AWS applies each write to an item atomically
   ("conditional writes ... are atomic", DynamoDB developer guide, *Working with items*); moto
   evaluates a condition and writes in two steps, so concurrent requests could both win.
2. **A cancelled transaction changes nothing and emits nothing** ("TransactWriteItems is a
   synchronous write operation that groups up to 100 action requests ... either all of them
   succeed or none of them do", API reference). moto rolls a cancelled transaction back by
   swapping in deep copies of the tables: the stream records of its writes stayed on the old
   stream shard, and every stream reader that was reading that shard saw them and never again
   saw a later write.
3. **One stream record per item change, only for changes.** "DynamoDB Streams writes a stream
   record ... whenever ... data items in a table are modified" and "if you perform a PutItem or
   UpdateItem operation that does not change any data in an item, DynamoDB Streams does not
   write a stream record for that operation" (*Change data capture for DynamoDB Streams*).
   moto wrote a record for a write that changed nothing, and two INSERT records (the first with
   only the key) for an UpdateItem that creates its item.
4. **``Ref: AWS::NoValue`` removes a list's element too.** AWS (*Pseudo parameters reference*):
   AWS::NoValue "removes the corresponding resource property when specified as a return value
   in the Fn::If intrinsic function"; an element of a list so chosen is left out of the list
   (the template's ``PreviousIndexes`` keeps an old index that way). moto's CloudFormation left a
   ``None`` in the list, and creating the table failed on it.

``install`` is idempotent and process-wide, as moto's backends are.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_install_lock = threading.Lock()
_installed = False
# DynamoDB and its streams share one lock: a stream reader never sees half a transaction.
_requests = threading.RLock()


class _Changes(threading.local):
    """The stream changes of the write in progress on this thread, held until it ends."""

    def __init__(self) -> None:
        self.depth = 0  # a transaction's own puts and updates nest inside it
        self.pending: dict[tuple[int, Any, Any], list[Any]] = {}  # item → [shard, first old, last new]


_changes = _Changes()


def install() -> None:
    """Apply every fix to moto, once per process."""
    global _installed  # noqa: PLW0603 - moto's backends are process-wide; so is this switch
    with _install_lock:
        if _installed:
            return
        from moto.dynamodb.models import DynamoDBBackend
        from moto.dynamodb.models.table import StreamShard
        from moto.dynamodb.responses import DynamoHandler
        from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

        for handler in (DynamoHandler, DynamoDBStreamsHandler):
            handler.call_action = _one_at_a_time(handler.call_action)  # type: ignore[method-assign]
        original_add = StreamShard.add
        StreamShard.add = _held_until_the_write_ends(original_add)  # type: ignore[method-assign]
        for name in ("put_item", "update_item", "delete_item"):
            setattr(DynamoDBBackend, name, _one_write(getattr(DynamoDBBackend, name), original_add))
        DynamoDBBackend.transact_write_items = _one_transaction(  # type: ignore[method-assign]
            DynamoDBBackend.transact_write_items, original_add
        )
        from moto.cloudformation import parsing

        parsing.clean_json = _lists_without_no_value(parsing.clean_json)  # type: ignore[assignment]
        _installed = True


def installed() -> bool:
    """Whether ``install`` has run in this process."""
    return _installed


@contextmanager
def embedded_aws() -> Iterator[None]:
    """moto in this process (``mock_aws``), with every fix installed."""
    install()
    from moto import mock_aws

    with mock_aws():
        yield


def _one_at_a_time(call_action: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def call_action_atomically(self: Any) -> Any:
        with _requests:
            return call_action(self)

    return call_action_atomically


def _held_until_the_write_ends(add: Callable[..., None]) -> Callable[..., None]:
    """StreamShard.add that, inside a write, records the change instead of emitting it."""

    def add_when_the_write_ends(shard: Any, old: Any, new: Any) -> None:
        if _changes.depth == 0:
            add(shard, old, new)
            return
        item = old if old is not None else new
        key = (id(shard), item.hash_key, item.range_key)
        change = _changes.pending.get(key)
        if change is None:
            _changes.pending[key] = [shard, copy.deepcopy(old), new]
        else:
            change[2] = new  # the item's first old image stays; its last new image wins

    return add_when_the_write_ends


def _emit(add: Callable[..., None]) -> None:
    """One record per changed item, in the order the write first touched them; no-ops emit none."""
    pending, _changes.pending = _changes.pending, {}
    for shard, old, new in pending.values():
        if old is None and new is None:
            continue
        if old is not None and new is not None and old.to_json() == new.to_json():
            continue  # the write changed nothing: AWS writes no stream record
        add(shard, old, new)


@contextmanager
def _write(add: Callable[..., None], *, emit_on_error: bool) -> Iterator[None]:
    _changes.depth += 1
    try:
        yield
    except BaseException:
        _changes.depth -= 1
        if _changes.depth == 0:
            if emit_on_error:
                _emit(add)
            else:
                _changes.pending = {}
        raise
    _changes.depth -= 1
    if _changes.depth == 0:
        _emit(add)


def _one_write(write: Callable[..., Any], add: Callable[..., None]) -> Callable[..., Any]:
    def write_with_one_record(self: Any, *args: Any, **kwargs: Any) -> Any:
        # A failed single-item write changed nothing, unless moto half-did it: then say what it did.
        with _write(add, emit_on_error=True):
            return write(self, *args, **kwargs)

    return write_with_one_record


def _one_transaction(transact: Callable[..., Any], add: Callable[..., None]) -> Callable[..., Any]:
    def transact_all_or_nothing(self: Any, transact_items: Any) -> Any:
        before = dict(self.tables)
        try:
            with _write(add, emit_on_error=False):
                return transact(self, transact_items)
        except BaseException:
            # moto rolled back by putting copies of the tables in place: give each copy the
            # table's own stream shard, so the readers already on it keep reading the real stream.
            for name, table in before.items():
                restored = self.tables.get(name)
                if restored is not None and restored is not table and table.stream_shard is not None:
                    restored.stream_shard = table.stream_shard
                    restored.stream_shard.table = restored
            raise

    return transact_all_or_nothing


def _lists_without_no_value(clean_json: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    # clean_json recurses through the module's name, so every nested list passes through here.
    def clean_json_dropping_no_value(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, list):
            cleaned = (clean_json_dropping_no_value(value, resources_map) for value in resource_json)
            return [value for value in cleaned if value is not None]
        return clean_json(resource_json, resources_map)

    return clean_json_dropping_no_value
