"""Runs deployed functions the way the Lambda service does: each in its own processes ("sandboxes"),
with the deployed handler and environment, one invocation at a time per sandbox.

Separate processes matter: handlers keep state at module level (clients, Powertools resolvers)
that Lambda never shares between concurrent invocations, and each function has its own
environment variables.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Read in every sandbox before the handler loads: faults to inject below the handler's code, and
# where its logs go (CloudWatch Logs, locally).
FAULTS_ENV = "LOCAL_LAMBDA_FAULTS"
SANDBOX_HOOK_ENV = "LOCAL_LAMBDA_SANDBOX_HOOK"
LOG_DIR_ENV = "LOCAL_LAMBDA_LOG_DIR"

# Lambda's payload limits for a synchronous invocation, "6 MB" each (Lambda quotas; "Invoke"):
# measured, the Invoke API refuses a request from 6 MiB and a function's response over 6 MiB + 100
# bytes (Zac Charles, "Deep Dive: Lambda's Response Payload Size Limit" and "... Request Payload ...").
REQUEST_LIMIT_BYTES = 6 * 1024 * 1024
RESPONSE_LIMIT_BYTES = 6 * 1024 * 1024 + 100
RESPONSE_TOO_LARGE = f"Response payload size exceeded maximum allowed payload size ({RESPONSE_LIMIT_BYTES} bytes)."


@dataclass(frozen=True)
class SandboxHook:
    """Code each sandbox runs before its handler loads, as a Lambda extension or an
    AWS_LAMBDA_EXEC_WRAPPER script does on AWS: `target` names a function ("module:function") that
    is called with `argument`, the function's short name and the sandbox's number (1, 2, ...)."""

    target: str
    argument: str = ""

    def to_json(self) -> str:
        return json.dumps({"target": self.target, "argument": self.argument})

    @classmethod
    def from_json(cls, text: str) -> SandboxHook:
        return cls(**json.loads(text))

    def run(self, function: str, sandbox: int) -> None:
        module, _, name = self.target.partition(":")
        getattr(importlib.import_module(module), name)(self.argument, function, sandbox)


@dataclass(frozen=True)
class DeployedFunction:
    """What the Lambda service knows of a function, read back from the emulator."""

    name: str
    arn: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: Mapping[str, str]
    reserved_concurrency: int | None = None  # ReservedConcurrentExecutions, when the template sets it

    @property
    def short_name(self) -> str:
        """What the run log, the log files and fault rules call the function: the package its
        handler's module is in (`functions.api.handler.handler`: `api`), else its name."""
        package = self.handler.rpartition(".")[0].rpartition(".")[0]
        return package.rpartition(".")[2] or self.name


@dataclass
class Invocation:
    ok: bool
    payload: Any = None
    error_type: str = ""
    error_message: str = ""
    duration_ms: float = 0.0
    timed_out: bool = False  # the function ran past its own timeout: a function error
    throttled: bool = False  # no concurrency left: rejected at once, never run
    payload_too_large: bool = False  # an event over Lambda's request limit: rejected, never run
    caller_gave_up: bool = False  # the caller's patience ran out before the function's timeout

    @property
    def rejected(self) -> bool:
        """The Invoke call itself was refused: the function never ran."""
        return self.throttled or self.payload_too_large


@dataclass
class _Context:
    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    deadline: float
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.time()) * 1000))


def log_path(log_dir: str, function: DeployedFunction) -> str:
    """The file a function's sandboxes write their output to: its CloudWatch Logs log group, locally."""
    return os.path.join(log_dir, f"{function.short_name}.log")


# --- inside a sandbox process -------------------------------------------------------------------

_handler: Callable[[Any, Any], Any] | None = None
_function: DeployedFunction | None = None


def _start_sandbox(function: DeployedFunction, base_environment: Mapping[str, str], numbering: Any) -> None:
    global _handler, _function
    with numbering.get_lock():
        numbering.value += 1
        sandbox = numbering.value
    os.environ.update(base_environment)
    os.environ.update(function.environment)
    os.environ["AWS_LAMBDA_FUNCTION_NAME"] = function.name
    os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = str(function.memory_mb)
    if os.environ.get(LOG_DIR_ENV):
        log = open(log_path(os.environ[LOG_DIR_ENV], function), "a", buffering=1)  # noqa: SIM115
        sys.stdout = sys.stderr = log
    if os.environ.get(FAULTS_ENV):
        from local import faults

        faults.install(json.loads(os.environ[FAULTS_ENV]), function.short_name)
    if os.environ.get(SANDBOX_HOOK_ENV):
        SandboxHook.from_json(os.environ[SANDBOX_HOOK_ENV]).run(function.short_name, sandbox)
    module_name, _, attribute = function.handler.rpartition(".")
    _handler = getattr(importlib.import_module(module_name), attribute)
    _function = function


def _invoke_in_sandbox(event: Any) -> tuple[bool, Any, str, str]:
    assert _handler is not None
    assert _function is not None
    context = _Context(
        function_name=_function.name,
        invoked_function_arn=_function.arn,
        memory_limit_in_mb=_function.memory_mb,
        deadline=time.time() + _function.timeout_seconds,
    )
    try:
        # A JSON round trip, as Lambda serializes the response: a handler returning something
        # that is not JSON, or too much of it, fails here as it would on AWS.
        response = json.dumps(_handler(event, context))
    except Exception as error:
        traceback.print_exc()
        return False, None, type(error).__name__, str(error)
    if len(response.encode()) > RESPONSE_LIMIT_BYTES:
        print(RESPONSE_TOO_LARGE, flush=True)
        return False, None, "RequestEntityTooLarge", RESPONSE_TOO_LARGE
    return True, json.loads(response), "", ""


# --- in the runtime -----------------------------------------------------------------------------


def sandbox_context(preload: Sequence[str] = ()) -> Any:
    """How sandboxes start. Without `preload`: a fresh interpreter each (multiprocessing's spawn),
    which imports everything the handler needs. With it: forked from one server process of this
    runtime's process that imported the `preload` modules once (multiprocessing's forkserver), so a
    sandbox imports only what they leave, its handler's own modules always among it. A module fit
    for it is a library whose import reads no setting a function's environment gives (the sandbox's
    environment is set after the fork, before its handler loads). The server starts with the first
    sandbox and keeps the modules of the first `preload` given for the rest of the process; a module
    another runtime of the process preloads and this one does not is imported in its sandboxes as
    usual."""
    if not preload:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


class FunctionPool:
    """One function's sandboxes: at most its concurrency run at once, as on the Lambda service.

    The concurrency is the function's reserved concurrency when the template sets one, else
    `account_concurrency` (what the account leaves unreserved; AWS's default is 1,000, and this
    machine runs a few processes). A synchronous invocation beyond it is rejected at once
    (TooManyRequestsException), never queued; an event source's poller waits for a free sandbox, as
    Lambda's pollers do. A sandbox is taken only when one is free, so a function's timeout counts its
    run alone. A run past its timeout is reported at the timeout; its sandbox finishes the work (its
    late writes are the function's to make harmless, as on AWS) and stays busy until then.
    """

    def __init__(
        self,
        function: DeployedFunction,
        base_environment: Mapping[str, str],
        account_concurrency: int,
        preload: Sequence[str] = (),
        after_each_run: Callable[[], None] | None = None,
    ) -> None:
        self.function = function
        self._after_each_run = after_each_run
        self.concurrency = function.reserved_concurrency or account_concurrency
        self._free = threading.BoundedSemaphore(self.concurrency)
        self._busy = 0
        self._busy_lock = threading.Lock()
        context = sandbox_context(preload)
        self._pool = ProcessPoolExecutor(
            max_workers=self.concurrency,
            mp_context=context,
            initializer=_start_sandbox,
            # Numbers the sandboxes 1, 2, ... so seeded faults differ between them but not between runs.
            initargs=(function, dict(base_environment), context.Value("i", 0)),
        )

    def warm_up(self, sandboxes: int = 1) -> set[int]:
        """Start `sandboxes` sandboxes now (at most the concurrency), so invocations do not pay for
        the imports: one at start-up, every one before a load test, as provisioned concurrency does
        on AWS. Here a cold start also takes the CPU that the emulator needs."""
        wanted = min(sandboxes, self.concurrency)
        # The executor starts a process per submitted task while none is idle, up to its maximum.
        # Each task holds its sandbox a moment, so a ready one cannot take them all; a sandbox
        # counts once it has answered, its imports done.
        hold = 0.2 if wanted > 1 else 0.0  # one sandbox needs no other task kept off it
        answered: set[int] = set()
        while len(answered) < wanted:
            answered.update(future.result() for future in [self._pool.submit(_hold, hold) for _ in range(wanted)])
        return answered  # the sandboxes' process ids

    def invoke(self, event: Any, *, synchronous: bool = False, patience_seconds: float | None = None) -> Invocation:
        """Run `event` in a free sandbox. `synchronous`: throttle at once when none is free (an API
        call); otherwise wait for one (a poller). `patience_seconds`: how long the caller waits
        (API Gateway's integration timeout), if shorter than the function's timeout. A synchronous
        event over Lambda's request limit is refused before anything runs. (A poller's are not
        checked: Lambda's event source mappings keep a batch within the limit themselves.)"""
        if synchronous and len(json.dumps(event).encode()) >= REQUEST_LIMIT_BYTES:
            return Invocation(
                ok=False,
                error_type="RequestEntityTooLargeException",
                error_message=f"Request must be smaller than {REQUEST_LIMIT_BYTES} bytes for the Invoke operation",
                payload_too_large=True,
            )
        if not self._free.acquire(blocking=not synchronous):
            return Invocation(
                ok=False, error_type="TooManyRequestsException", error_message="Rate Exceeded.", throttled=True
            )
        self._count_busy(+1)
        started = time.perf_counter()
        try:
            future: Future[tuple[bool, Any, str, str]] = self._pool.submit(_invoke_in_sandbox, event)
        except RuntimeError:  # the pool is shut down
            self._sandbox_freed()
            return Invocation(ok=False, error_type="SandboxStopped", error_message="the runtime is shutting down")
        future.add_done_callback(lambda _: self._sandbox_freed())
        timeout = self.function.timeout_seconds
        wait = timeout if patience_seconds is None else min(timeout, patience_seconds)
        try:
            ok, payload, error_type, message = future.result(timeout=wait)
        except BrokenProcessPool:
            return Invocation(ok=False, error_type="SandboxStopped", error_message="the runtime is shutting down")
        except FutureTimeout:
            elapsed = (time.perf_counter() - started) * 1000
            if wait < timeout:
                return Invocation(ok=False, error_type="IntegrationTimeout", duration_ms=elapsed, caller_gave_up=True)
            return Invocation(
                ok=False,
                error_type="TimeoutError",
                error_message=f"Task timed out after {timeout} seconds",
                duration_ms=elapsed,
                timed_out=True,
            )
        return Invocation(ok, payload, error_type, message, (time.perf_counter() - started) * 1000)

    @property
    def busy(self) -> int:
        """Sandboxes running an invocation now (a timed-out one included, until it ends)."""
        return self._busy

    def _count_busy(self, change: int) -> None:
        with self._busy_lock:
            self._busy += change

    def _sandbox_freed(self) -> None:
        self._count_busy(-1)
        self._free.release()
        if self._after_each_run is not None:
            self._after_each_run()

    def close(self) -> None:
        """Stop every sandbox now, as the Lambda service would on shutdown: invocations still
        running end as failures instead of outliving the runtime."""
        # The executor keeps its processes privately; the attribute has been stable since 3.2.
        sandboxes = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for sandbox in sandboxes:
            sandbox.terminate()


def _hold(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()
