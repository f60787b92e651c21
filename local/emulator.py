"""The embedded AWS emulator: moto's server on loopback, one request at a time.

Real DynamoDB applies each request atomically. moto's threaded server does not: two requests can
interleave inside its Python code (a conditional update checked by both before either writes, a
failed transaction restoring a table copy over a concurrent write). Serializing DynamoDB and
DynamoDB Streams requests gives the emulator DynamoDB's per-request atomicity, so a concurrency
test fails only for our bugs. Other services stay concurrent: an SQS long poll waits for messages
that other requests must be able to send meanwhile.

Run as a process: `python -m local.emulator --port 0` prints `READY http://127.0.0.1:PORT`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import datetime
import functools
import json
import os
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from local.capacity.limits import AWS_BURST_SECONDS, PartitionLimits, parse_factor
from local.client_request_tokens import ClientRequestTokens
from local.expression_maps import EmptyExpressionMaps
from local.partition_reads import TARGET as PARTITION_READS_TARGET
from local.partition_reads import PartitionReads
from local.request_counts import RequestCounts

LOOPBACK = "127.0.0.1"
READY_PREFIX = "READY "


# JSON-protocol targets (X-Amz-Target header) of the services served one request at a time.
SERIALIZED_TARGET_PREFIXES = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.", PARTITION_READS_TARGET)


class SerializedApplication:
    """WSGI wrapper that lets one DynamoDB request at a time into the wrapped application."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self._application = application
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith(SERIALIZED_TARGET_PREFIXES):
            return self._application(environ, start_response)
        with self._lock:
            # Materialize the body inside the lock: moto computes responses lazily in places.
            return list(self._application(environ, start_response))


def leave_invocations_to_the_local_lambda_service() -> None:
    """Stop moto from acting on event source mappings itself.

    moto hands new stream records and queue messages to a mapped function on its own (which needs
    Docker), and then drops the stream records and receives the messages, which raises their
    receive counts. The local Lambda service is the only poller, as Lambda is on AWS. The mappings
    stay listed by the Lambda API. Only the tables' and queues' private dispatch lists are emptied.
    """
    from moto.dynamodb.models.table import Table
    from moto.sqs.models import Queue

    no_dispatch = property(lambda _: {}, lambda _self, _value: None)
    Table.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]
    Queue.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]


def read_up_to_100_items_a_transaction() -> None:
    """Serve a TransactGetItems of up to 100 items, as DynamoDB does ("an ordered array of up to
    100 TransactGetItem objects": https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactGetItems.html).
    moto refuses more than 25, DynamoDB's limit before 2022, with a ValidationException; a full
    account of more than 25 admission shards proves a refusal with a snapshot of all of them.
    Writes already take 100 in moto."""
    from moto.dynamodb import responses

    responses.TRANSACTION_MAX_ITEMS = 100


def keep_tables_in_place_when_a_transaction_rolls_back() -> None:
    """Roll a cancelled transaction back inside the table object that was there before it ran.

    moto rolls back by putting a deep copy of each table in the place of the live one. That copy
    has a stream shard of its own, so every shard iterator already handed out keeps reading the
    dropped table and never sees another record. On AWS a cancelled transaction changes nothing,
    and a stream reader never notices it. Here, the state moto restored is moved back into the
    live table object, and stream records that the cancelled transaction added are removed.

    moto also deep-copies every table a transaction touches, before each transaction, which
    costs time in proportion to the table (measured: 18 ms per transaction on one busy account's
    partition). A transaction can only change the items it names, so only those are copied; and
    only once a transaction: moto asks for a table's copy once per action that names it, so a
    100-action transaction copied its 100 items 100 times (0.53 consumer transactions per load
    iteration cost the emulator 16.5 ms each, measured with `make bench-load`). The stream's
    records are not copied either: a rollback only drops those the transaction appended.
    """
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items
    touched: dict[str, set[tuple[Any, Any]]] = {}  # table name -> (hash, range) named by the transaction
    snapshots: dict[str, Any] = {}  # table name -> its copy, made once a transaction
    stream_lengths: dict[str, int] = {}  # table name -> its stream's records before the transaction

    def snapshot(table: Any, memo: dict[int, Any]) -> Any:
        if table.name in snapshots:
            return snapshots[table.name]
        clone = copy.copy(table)
        clone.items = copy.copy(table.items)  # same dict type; partitions not named are shared
        for hash_value, range_value in touched.get(table.name, set()):
            if hash_value not in table.items:
                continue
            if table.range_key_attr is None:
                clone.items[hash_value] = copy.deepcopy(table.items[hash_value], memo)
                continue
            if clone.items[hash_value] is table.items[hash_value]:
                clone.items[hash_value] = copy.copy(table.items[hash_value])
            if range_value in table.items[hash_value]:
                clone.items[hash_value][range_value] = copy.deepcopy(table.items[hash_value][range_value], memo)
        if table.stream_shard is not None:
            stream_lengths[table.name] = len(table.stream_shard.items)
        snapshots[table.name] = clone
        return clone

    def transact_write_items(self: Any, transact_items: Any) -> Any:
        touched.clear()
        snapshots.clear()
        stream_lengths.clear()
        for entry in transact_items:
            (action,) = entry.values()
            table = self.tables.get(action.get("TableName"))
            if table is None:
                continue
            key = action.get("Key") or action.get("Item") or {}
            if table.hash_key_attr not in key:
                continue
            range_value = key.get(table.range_key_attr) if table.range_key_attr else None
            touched.setdefault(table.name, set()).add(
                (DynamoType(key[table.hash_key_attr]), DynamoType(range_value) if range_value else None)
            )
        live_tables = dict(self.tables)
        Table.__deepcopy__ = snapshot  # type: ignore[attr-defined]  # only while this (serialized) request runs
        try:
            return original(self, transact_items)
        except Exception:
            for name, live in live_tables.items():
                restored = self.tables.get(name)
                if restored is None or restored is live:
                    continue
                shard = live.stream_shard
                live.__dict__.update(restored.__dict__)
                if shard is not None and name in stream_lengths:
                    del shard.items[stream_lengths[name] :]
                    shard.table = live
                live.stream_shard = shard
                self.tables[name] = live
            raise
        finally:
            del Table.__deepcopy__  # type: ignore[attr-defined]
            touched.clear()
            snapshots.clear()
            stream_lengths.clear()

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def freeze_what_survives_a_full_collection() -> None:
    """moto keeps every item and every stream record as Python objects, and the garbage collector's
    full collections walk them all while every request waits: under `make bench-load` at 26
    iterations/s they took 150 ms, then 190, 230, 270 and 420 ms, every 7 to 9 s, growing with the
    data (measured with gc.callbacks), and each one sent a burst of requests past the API
    function's concurrency. What survives a full collection is long-lived, so it is moved out of
    the collector's sight (`gc.freeze`): the next full collection walks only what came since.
    Reference counting still frees what is dropped; reference cycles that were alive at a full
    collection and die later are not reclaimed (about 14% more objects after a minute at 20
    iterations/s, beside the stream records moto keeps forever)."""
    import gc

    def after(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.callbacks.append(after)


def remember_each_hosts_backend(dispatcher: Any) -> None:
    """moto looks a request's service up by listing its own package directory on every request
    (11% of the emulator's time under load, measured with py-spy). A host's service never changes."""
    dispatcher.get_backend_for_host = functools.lru_cache(maxsize=256)(dispatcher.get_backend_for_host)


def parse_each_update_expression_once() -> None:
    """moto parses an UpdateExpression twice per UpdateItem (checking the request, then applying
    it), 8% of the emulator's time under the load benchmark (py-spy). A service sends a handful of
    distinct expressions, so each is parsed once. The parsed tree is shared safely: moto's
    validators work on a copy of it, and the request checks only read it.

    That copy was a `deepcopy` of the tree, another 8% (py-spy, 2026-11-25): for a tree parsed
    here it is now unpickled from the tree's pickle, made once (an equal tree, 5 times faster).
    """
    import pickle

    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    parse = UpdateExpressionParser.make.__func__

    @functools.lru_cache(maxsize=1024)
    def once(expression: str) -> Any:
        tree = parse(UpdateExpressionParser, expression)
        # The tree's own pickle, taken before this attribute exists, with the tree's id: a copy of
        # the tree made elsewhere (a deepcopy copies the attribute) is not the tree it was taken of.
        tree.pristine = (id(tree), pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL), expression)
        return tree

    def copy_of(value: Any, memo: Any = None) -> Any:
        pristine = getattr(value, "pristine", None)
        if pristine is None or pristine[0] != id(value):
            return copy.deepcopy(value, memo)
        clone = pickle.loads(pristine[1])  # noqa: S301 - our own pickle of our own parse
        clone.parsed_from = pristine[2]  # read by check_each_update_structure_once
        return clone

    UpdateExpressionParser.make = staticmethod(once)
    validators.deepcopy = copy_of  # type: ignore[attr-defined,assignment]


def match_tree_nodes_by_type_once() -> None:
    """moto checks an update tree with about ten processors, each walking the whole tree and, at
    every node, building its table of node classes and testing the node against each with
    `isinstance` on abstract classes. Which processor method a node gets depends on the classes of
    both alone, so it is found once per pair. The walk is moto's own otherwise: children first, each
    node replaced by what its processor returns, `pre_processing_of_child` called as before."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]

    is_node: dict[type, bool] = {}
    # (processor class, node class) -> the processor's function for it, None, or `ask` (not a
    # method of the processor: asked of its `process` at each node, as moto does)
    functions: dict[tuple[type, type], Any] = {}
    ask = object()

    def function_for(traverser: Any, node_type: type) -> Any:
        key = (type(traverser), node_type)
        if key not in functions:
            function = None
            if issubclass(node_type, traverser.nodes_to_be_processed()):
                method = next(f for kind, f in traverser._processing_map().items() if issubclass(node_type, kind))
                function = method.__func__ if getattr(method, "__self__", None) is traverser else ask
            functions[key] = function
        return functions[key]

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        node_type = type(node)
        if node_type not in is_node:
            is_node[node_type] = issubclass(node_type, Node)
        if not is_node[node_type]:
            return node
        parent_node = node.parent
        if node.children is not None:
            for index, child_node in enumerate(node.children):
                self.pre_processing_of_child(node, index)
                self.traverse_node_recursively(child_node, index)
        function = function_for(self, node_type)
        if function is not None:
            node = self.process(node) if function is ask else function(self, node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    DepthFirstTraverser.traverse_node_recursively = traverse_node_recursively


def check_each_update_structure_once() -> None:
    """Two of moto's update checks depend on the expression's text alone: at most one SET, ADD,
    REMOVE and DELETE clause (checked at every node of the tree, each time walking the node's whole
    subtree: 38% of an UpdateItem's time, measured with cProfile), and no path updated twice (the
    text and the attribute names). Once a text (and names) passed them, they are not run again for
    it; a text that fails them fails every time, as it is never remembered."""
    from moto.dynamodb.parsing.validators import (
        ActionCountValidator,
        OverlappingPathsValidator,
        UpdateExpressionValidator,
    )

    passed: OrderedDict[tuple[Any, ...], None] = OrderedDict()  # bounded: names can vary by request

    def validate(self: Any) -> Any:
        tree = self.node_to_validate
        text = getattr(tree, "parsed_from", None)  # set on trees parse_each_update_expression_once made
        counted = (text,)
        named = (text, tuple(sorted((self.expression_attribute_names or {}).items())))
        for processor in self.processors:
            if text is not None and (
                (isinstance(processor, ActionCountValidator) and counted in passed)
                or (isinstance(processor, OverlappingPathsValidator) and named in passed)
            ):
                continue  # both return the tree unchanged
            tree = processor.traverse(tree)
        if text is not None:
            for key in (counted, named):
                passed[key] = None
                passed.move_to_end(key)
            while len(passed) > 4096:
                passed.popitem(last=False)
        return tree

    UpdateExpressionValidator.validate = validate  # type: ignore[method-assign]


def lex_each_condition_expression_once() -> None:
    """moto splits every ConditionExpression into tokens with a dozen regular expressions, once
    per UpdateItem, PutItem and transaction action (and twice per transaction update): 4% of the
    emulator's time under the load benchmark (py-spy, 2026-11-25). The tokens depend on the
    expression's text alone, so each text is split once; every parse gets fresh tokens."""
    from collections import deque

    from moto.dynamodb.comparisons import ConditionExpressionParser

    lex = ConditionExpressionParser._lex_condition_expression

    @functools.lru_cache(maxsize=1024)
    def tokens_of(expression: str) -> tuple[Any, ...]:
        return tuple(lex(ConditionExpressionParser(expression, None, None)))

    def lex_once(self: Any) -> Any:
        return deque(token._replace(children=list(token.children)) for token in tokens_of(self.condition_expression))

    ConditionExpressionParser._lex_condition_expression = lex_once  # type: ignore[method-assign]


def as_the_json_protocol_writes_it(value: Any) -> float | str:
    """What json.dumps cannot write, as the JSON protocol writes it: times as epoch seconds, binary
    values in base64."""
    from moto.core.serialize import TimestampSerializer

    if isinstance(value, datetime.datetime):
        return TimestampSerializer._timestamp_unixtimestamp(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def answer_stream_reads_as_plain_json() -> None:
    """Serialize GetRecords with json.dumps instead of moto's shape-driven serializer.

    Stream records are already DynamoDB JSON; the generic serializer walks every attribute of every
    image against the botocore model, 110 ms for a batch of 80 KB (measured), the largest share of
    the emulator's time under load. The only values that are not JSON are written as the JSON
    protocol writes them: `ApproximateCreationDateTime` as epoch seconds, binary values in base64.
    tests/runtime/test_emulator.py checks both give the SDK the same records.
    """
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    def get_records(self: Any) -> str:
        result = self.backend.get_records(self._get_param("ShardIterator"), self._get_param("Limit") or 1000)
        return json.dumps(result, default=as_the_json_protocol_writes_it)

    DynamoDBStreamsHandler.get_records = get_records  # type: ignore[method-assign,assignment]


# DynamoDB's data-plane answers: DynamoDB JSON already, which the SDK reads as it is.
PLAIN_JSON_ANSWERS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "TransactWriteItems",
        "TransactGetItems",
    }
)


def answer_item_calls_as_plain_json() -> None:
    """Serialize DynamoDB's item calls with json.dumps instead of moto's shape-driven serializer.

    Their results are DynamoDB JSON (attribute values already typed, numbers as strings), which the
    generic serializer walks attribute by attribute against the botocore model: about 10% of the
    emulator's CPU under the load benchmark (py-spy, 2026-11-24), mostly for the account item that
    an UpdateItem returns whole. Errors (a failed condition, a cancelled transaction) still go
    through moto's serializer. tests/runtime/test_emulator.py checks both give the SDK the same
    answers.
    """
    from moto.core.responses import ActionResult
    from moto.dynamodb.responses import DynamoHandler

    serialized = DynamoHandler.serialized

    def plain(self: Any, action_result: ActionResult) -> Any:
        if isinstance(action_result.result, Exception) or self._get_action() not in PLAIN_JSON_ANSWERS:
            return serialized(self, action_result)
        body = json.dumps(action_result.result, default=as_the_json_protocol_writes_it)
        return 200, {**self.response_headers, "Content-Type": "application/x-amz-json-1.0"}, body

    DynamoHandler.serialized = plain  # type: ignore[method-assign]


# The emulator's flavours: `tuned` (the default) answers on a keep-alive server with moto's hot
# paths shortened; `plain` is moto's own development server and code, for comparison
# (benchmarks/emulators.py measures both). Both keep DynamoDB's atomicity and rollback.
FLAVOURS = ("tuned", "plain")
# Worker threads of the tuned server. SQS long polls (1 s, the local Lambda service's pollers)
# hold one each; DynamoDB requests run one at a time anyway.
SERVER_THREADS = 32


def serve(
    port: int, on_ready: Callable[[str], None], flavour: str = "tuned", limits: PartitionLimits | None = None
) -> None:
    # Imported here so that importing this module (to launch the process) stays cheap.
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    leave_invocations_to_the_local_lambda_service()
    read_up_to_100_items_a_transaction()
    keep_tables_in_place_when_a_transaction_rolls_back()
    freeze_what_survives_a_full_collection()
    dispatcher = DomainDispatcherApplication(create_backend_app)
    application: Callable[..., Iterable[bytes]] = dispatcher
    if limits is not None:
        from local.partition_throttling import MotoTables, PartitionThrottling

        application = PartitionThrottling(dispatcher, limits, MotoTables(os.environ["MOTO_ACCOUNT_ID"]))
    application = PartitionReads(ClientRequestTokens(application), os.environ["MOTO_ACCOUNT_ID"])
    application = EmptyExpressionMaps(application)  # refused before anything is billed, as DynamoDB does
    application = RequestCounts(application)  # what a run really asks of the emulator (load benchmark)
    if flavour == "plain":
        from werkzeug.serving import make_server

        server = make_server(LOOPBACK, port, SerializedApplication(application), threaded=True)
        on_ready(f"http://{LOOPBACK}:{server.server_port}")
        server.serve_forever()
        return

    from waitress.server import create_server

    remember_each_hosts_backend(dispatcher)
    answer_stream_reads_as_plain_json()
    answer_item_calls_as_plain_json()
    parse_each_update_expression_once()
    lex_each_condition_expression_once()
    match_tree_nodes_by_type_once()
    check_each_update_structure_once()
    # waitress keeps connections alive (werkzeug's development server closes every one, so each
    # SDK call paid a new TCP connection and a new thread) and serves from a fixed thread pool.
    tuned = create_server(
        SerializedApplication(application),
        host=LOOPBACK,
        port=port,
        threads=SERVER_THREADS,
        backlog=1024,
        connection_limit=4096,
        asyncore_use_poll=True,  # select() stops at 1,024 descriptors
    )
    on_ready(f"http://{LOOPBACK}:{tuned.effective_port}")
    tuned.run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--flavour", choices=FLAVOURS, default="tuned")
    parser.add_argument(
        "--partition-limits",
        type=parse_factor,
        default=None,
        help="enforce DynamoDB's partition limits times this factor (1/100: 10 WCU/s and 30 RCU/s per item and key)",
    )
    parser.add_argument("--partition-burst-seconds", type=float, default=AWS_BURST_SECONDS)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_ACCOUNT_ID", "000000000000")

    def announce(url: str) -> None:
        print(f"{READY_PREFIX}{url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        limits = (
            None
            if args.partition_limits is None
            else PartitionLimits(args.partition_limits, burst_seconds=args.partition_burst_seconds)
        )
        serve(args.port, announce, args.flavour, limits)


def process_cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user and system), from /proc (Linux)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class EmulatorProcess:
    """Starts the emulator as a child process and waits until it listens."""

    def __init__(
        self,
        port: int = 0,
        flavour: str = "tuned",
        partition_limits: str | None = None,
        partition_burst_seconds: float = AWS_BURST_SECONDS,
    ) -> None:
        self._port = port
        self.flavour = flavour
        self._limits = (
            []
            if partition_limits is None
            else ["--partition-limits", partition_limits, "--partition-burst-seconds", str(partition_burst_seconds)]
        )
        self._process: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> EmulatorProcess:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> str:
        env = {**os.environ, "MOTO_ACCOUNT_ID": os.environ.get("MOTO_ACCOUNT_ID", "000000000000")}
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "local.emulator",
                "--port",
                str(self._port),
                "--flavour",
                self.flavour,
                *self._limits,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # blocks until the server announces itself or dies
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise RuntimeError(f"emulator did not start (said {line!r})")
        self.url = line[len(READY_PREFIX) :].strip()
        return self.url

    def cpu_seconds(self) -> float:
        """CPU time the emulator process has used so far (user and system)."""
        return 0.0 if self._process is None else process_cpu_seconds(self._process.pid)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None


if __name__ == "__main__":
    main()
