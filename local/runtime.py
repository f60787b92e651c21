"""The local stand-in for the Lambda service, around an emulator holding the deployed stack.

It deploys a CDK app's template (local/deploy.py) and reads the deployment back from the
emulator: the functions (handler, environment, timeout), the event source mappings (with every
setting as deployed) and the API's routes. Then it runs them: API Gateway on a local port, one
poller per stream shard, and one per queue. It knows what AWS knows of a stack and nothing of the
product in it: what a caller wants beyond that (its app, the roles of its callers, extra
environment for the functions, faults) comes in through `RuntimeSettings`.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import boto3

from local.apigateway import ApiGateway, Route
from local.clock import CLOCK_OFFSET_ENV, ShiftedClock
from local.deploy import CdkApp
from local.event_bus import BusRouter
from local.event_sources import (
    Activity,
    DeliveryFaults,
    QueueMapping,
    QueuePoller,
    SourceStats,
    StreamMapping,
    StreamShardPoller,
    log_invocation,
)
from local.functions import (
    FAULTS_ENV,
    LOG_DIR_ENV,
    SANDBOX_HOOK_ENV,
    DeployedFunction,
    FunctionPool,
    Invocation,
    SandboxHook,
    log_path,
)
from local.gateway_responses import GatewayResponses
from local.iam_authorizer import IamAuthorizer
from local.log_subscriptions import LogSubscription, SubscriptionSpec
from local.sessions import Sessions
from local.stage_throttle import StageThrottle
from local.token_authorizer import LambdaTokenAuthorizer, LambdaTokenAuthorizerSpec

logger = logging.getLogger("local.runtime")

LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}


@dataclass
class RuntimeSettings:
    endpoint_url: str
    app: CdkApp  # the CDK app whose stack is deployed and run (local/product.py: this product's)
    region: str = "us-east-1"
    host: str = "127.0.0.1"
    port: int = 3000
    # Concurrency the account leaves to functions without reserved concurrency: AWS's default is
    # 1,000; here each unit is a sandbox process, so a few. Beyond it the API answers at once.
    account_concurrency: int = 10
    # Library modules imported once in a server process the sandboxes are forked from, rather than
    # in every sandbox (local/functions.py `sandbox_context` says which modules fit); none: each
    # sandbox is a fresh interpreter.
    sandbox_preload: Sequence[str] = ()
    faults: Sequence[Mapping[str, Any]] = ()
    # Fault injection hooks (`make chaos` gives both: chaos/faults.py); off by default. Code each
    # sandbox runs before its handler loads, and what each stream shard's deliveries do wrong.
    sandbox_hook: SandboxHook | None = None
    delivery_faults: Callable[[str], DeliveryFaults] | None = None
    # The callers the local API Gateway accepts (local/sessions.py) and, for each of their roles,
    # the stack output naming the role's ARN: `AWS_IAM` methods are checked against those roles'
    # policies as deployed.
    identities: Sessions = field(default_factory=Sessions)
    caller_roles: Mapping[str, str] = field(default_factory=dict)
    # CDK context for the synthesized stack (`python -m local -c KEY=VALUE`), over cdk.json's.
    context: Mapping[str, str] = field(default_factory=dict)
    # Variables added to every function's environment, over the template's, as a change to each
    # function's configuration would add them (a run at scaled partition limits scales settings).
    environment: Mapping[str, str] = field(default_factory=dict)
    # How long a failed SQS message stays invisible before its next try. None keeps the queue's
    # own visibility timeout, as AWS does (DLQ 1's is 6 minutes); tests shorten it.
    sqs_retry_visibility_seconds: int | None = None
    stream_poll_interval_seconds: float = 0.25  # Lambda polls a shard four times a second
    schedule_period_seconds: float | None = None  # None: each rule's own rate
    retry_backoff_seconds: float = 0.5  # base of the exponential backoff between stream retries
    log_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="local-lambda-logs-"))
    # A shifted time of day (local/clock.py) for the stand-ins' stamps and every sandbox, which its
    # caller moves (a chaos run over midnight); None: the system clock, as on AWS.
    clock: ShiftedClock | None = None


class LocalRuntime:
    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        self._stop = threading.Event()
        self._activity = Activity()  # wakes the idle stream pollers after a function ran, and on stop
        self._pools: dict[str, FunctionPool] = {}
        self._threads: list[threading.Thread] = []
        self.stream_stats = SourceStats()
        self.queue_stats = SourceStats()
        self.schedule_stats = SourceStats()
        self.subscription_stats = SourceStats()
        self.outputs: dict[str, str] = {}
        self.gateway: ApiGateway | None = None
        self._known_shards: set[tuple[str, str]] = set()
        self._schedules: list[tuple[str, FunctionPool]] = []  # (rule ARN, its target's pool)
        self.bus_router = BusRouter(self.client, self._stop)

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.settings.endpoint_url,
            region_name=self.settings.region,
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=LOCAL_CREDENTIALS["AWS_SESSION_TOKEN"],
        )

    # -- start ---------------------------------------------------------------------------------

    def deploy_and_start(self) -> None:
        """Deploy the synthesized template into the emulator (as `cdk deploy` would), then run it."""
        from local.deploy import deploy, synthesize

        template = synthesize(self.settings.app, self.settings.context)
        self.start(deploy(self.client, self.settings.region, self.settings.app, template))

    def start(self, outputs: Mapping[str, str]) -> None:
        self.outputs = dict(outputs)
        stack_resources = self.client("cloudformation").describe_stack_resources(
            StackName=self.settings.app.stack_name
        )["StackResources"]
        functions = self._read_functions(stack_resources)
        sandbox_env = {
            **LOCAL_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.settings.endpoint_url,
            "AWS_DEFAULT_REGION": self.settings.region,
            "AWS_REGION": self.settings.region,
            "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here
            LOG_DIR_ENV: self.settings.log_dir,
        }
        if self.settings.faults:
            sandbox_env[FAULTS_ENV] = json.dumps(list(self.settings.faults))
        if self.settings.sandbox_hook is not None:
            sandbox_env[SANDBOX_HOOK_ENV] = self.settings.sandbox_hook.to_json()
        if self.settings.clock is not None:
            sandbox_env[CLOCK_OFFSET_ENV] = self.settings.clock.path
        sandbox_env.update(self.settings.environment)
        mappings = self._read_event_source_mappings()
        schedules = self._read_schedules()
        for arn, function in functions.items():
            background = any(m["FunctionArn"] == arn for m in mappings) or any(t == arn for _, _, t in schedules)
            concurrency = 2 if background else self.settings.account_concurrency
            self._pools[arn] = FunctionPool(
                function, sandbox_env, concurrency, self.settings.sandbox_preload, after_each_run=self._activity.note
            )
        # Every function's first sandbox at once: each waits on its imports, not on the others'.
        with ThreadPoolExecutor(max_workers=max(len(self._pools), 1)) as starting:
            list(starting.map(FunctionPool.warm_up, self._pools.values()))
        self._start_gateway(stack_resources)
        for rule_arn, every_seconds, target_arn in schedules:
            if target_arn in self._pools:
                self._start_schedule(rule_arn, every_seconds, self._pools[target_arn])
        self._start_buses(stack_resources)
        self._start_log_subscriptions(stack_resources)
        for mapping in mappings:
            target = self._pools.get(mapping["FunctionArn"])
            if target is None or mapping.get("State", "Enabled") != "Enabled":
                continue
            source = mapping["EventSourceArn"]
            if ":dynamodb:" in source:
                self._start_stream(StreamMapping.from_mapping(mapping, target, self._partition_key(source)))
            elif ":sqs:" in source:
                self._start_queue(mapping, target)
            else:
                logger.warning("event source %s is not supported locally", source)

    def provision_every_sandbox(self) -> None:
        """Start every function's sandboxes up to its concurrency, as provisioned concurrency would
        (a load test's first seconds then measure the system, not its cold starts)."""
        for pool in self._pools.values():
            pool.warm_up(pool.concurrency)

    def provision_sandboxes(self, short_name: str) -> None:
        """Start one function's sandboxes (`api`, say: its short name) up to its concurrency, as
        provisioned concurrency would: a burst then meets the function's concurrency, not its
        cold starts."""
        for pool in self._pools.values():
            if pool.function.short_name == short_name:
                pool.warm_up(pool.concurrency)

    def _partition_key(self, stream_arn: str) -> str:
        """The partition key of a stream's table, as DescribeStream's KeySchema names it."""
        description = self.client("dynamodbstreams").describe_stream(StreamArn=stream_arn)["StreamDescription"]
        return str(next(key["AttributeName"] for key in description["KeySchema"] if key["KeyType"] == "HASH"))

    def _read_event_source_mappings(self) -> list[dict[str, Any]]:
        # Listed whole and matched by function ARN: moto ignores an ARN given as FunctionName.
        mappings: list[dict[str, Any]] = []
        for page in self.client("lambda").get_paginator("list_event_source_mappings").paginate():
            mappings.extend(page["EventSourceMappings"])
        return mappings

    def _read_schedules(self) -> list[tuple[str, float, str]]:
        """(rule ARN, period in seconds, target function ARN) of every enabled `rate(...)` rule."""
        events = self.client("events")
        schedules = []
        for rule in events.list_rules().get("Rules", []):
            period = rate_seconds(rule.get("ScheduleExpression", ""))
            if period is None or rule.get("State") != "ENABLED":
                continue
            for target in events.list_targets_by_rule(Rule=rule["Name"]).get("Targets", []):
                schedules.append((rule["Arn"], period, target["Arn"]))
        return schedules

    def _start_schedule(self, rule_arn: str, every_seconds: float, pool: FunctionPool) -> None:
        period = self.settings.schedule_period_seconds or every_seconds
        self._schedules.append((rule_arn, pool))

        def tick() -> None:
            while not self._stop.wait(period):
                self._invoke_scheduled(rule_arn, pool)

        self._spawn("schedule-" + rule_arn.rsplit("/", 1)[-1][-12:], tick)

    def _invoke_scheduled(self, rule_arn: str, pool: FunctionPool) -> Invocation:
        invocation = pool.invoke(scheduled_event(rule_arn, self.settings.region, self._now()))
        self.schedule_stats.add(invocations=1, failed_invocations=int(not invocation.ok))
        log_invocation(pool.function.short_name, 1, invocation, "(scheduled)")
        return invocation

    def run_schedules_now(self) -> list[Invocation]:
        """Invoke every schedule's target once now, and wait for each: what EventBridge's next
        ticks would do. A caller that moves the shifted clock by hours runs them in between, as
        the hours it skips would have (the sweeper every 5 minutes)."""
        return [self._invoke_scheduled(rule_arn, pool) for rule_arn, pool in self._schedules]

    def _read_functions(self, stack_resources: list[dict[str, Any]]) -> dict[str, DeployedFunction]:
        lam = self.client("lambda")
        functions = {}
        for resource in stack_resources:
            if resource.get("ResourceType") != "AWS::Lambda::Function":
                continue
            found = lam.get_function(FunctionName=resource["PhysicalResourceId"])
            config = found["Configuration"]
            reserved = (found.get("Concurrency") or {}).get("ReservedConcurrentExecutions")
            functions[config["FunctionArn"]] = DeployedFunction(
                name=config["FunctionName"],
                arn=config["FunctionArn"],
                handler=config["Handler"],
                timeout_seconds=int(config.get("Timeout", 3)),
                memory_mb=int(config.get("MemorySize", 128)),
                environment=dict((config.get("Environment") or {}).get("Variables", {})),
                reserved_concurrency=int(reserved) if reserved else None,
            )
        return functions

    def _start_gateway(self, stack_resources: list[dict[str, Any]]) -> None:
        api = self.client("apigateway")
        rest_api_ids = [
            r["PhysicalResourceId"] for r in stack_resources if r.get("ResourceType") == "AWS::ApiGateway::RestApi"
        ]
        if not rest_api_ids:
            return
        rest_api_id = rest_api_ids[0]
        routes = []
        for resource in api.get_resources(restApiId=rest_api_id, limit=500)["items"]:
            for method in resource.get("resourceMethods", {}):
                integration = api.get_integration(restApiId=rest_api_id, resourceId=resource["id"], httpMethod=method)
                function_arn = _function_arn_of(integration.get("uri", ""))
                declared = api.get_method(restApiId=rest_api_id, resourceId=resource["id"], httpMethod=method)
                if function_arn in self._pools:
                    authorization = declared.get("authorizationType", "NONE")
                    routes.append(Route(resource["path"], method, self._pools[function_arn], authorization))
        stages = api.get_stages(restApiId=rest_api_id)["item"]
        stage = stages[0]["stageName"] if stages else "prod"
        authorizer = self._iam_authorizer(rest_api_id, stage)
        template = self._deployed_template()
        responses, throttle = GatewayResponses.from_template(template), StageThrottle.from_template(template)
        token_authorizer = self._token_authorizer(template, stack_resources, rest_api_id, stage)
        self.gateway = ApiGateway(
            routes,
            stage,
            self.settings.host,
            self.settings.port,
            authorizer,
            responses,
            throttle,
            token_authorizer,
            clock_ms=None if self.settings.clock is None else self.settings.clock.epoch_ms,
        )
        self.gateway.start()

    def _deployed_template(self) -> dict[str, Any]:
        """The stack's template as CloudFormation keeps it (what the emulator does not model, such
        as gateway responses, is read from here)."""
        body = self.client("cloudformation").get_template(StackName=self.settings.app.stack_name)["TemplateBody"]
        return dict(json.loads(body) if isinstance(body, str) else body)

    def _token_authorizer(
        self, template: dict[str, Any], stack_resources: list[dict[str, Any]], rest_api_id: str, stage: str
    ) -> LambdaTokenAuthorizer | None:
        """The Lambda TOKEN authorizer the template declares (`-c authorizer=jwt`), run by its pool."""
        spec = LambdaTokenAuthorizerSpec.from_template(template)
        if spec is None:
            return None
        name = next(
            r["PhysicalResourceId"] for r in stack_resources if r.get("LogicalResourceId") == spec.function_logical_id
        )
        pool = next(pool for arn, pool in self._pools.items() if arn.endswith(f":function:{name}") or arn == name)
        account_id = self.client("sts").get_caller_identity()["Account"]
        return LambdaTokenAuthorizer(spec, pool, self.settings.region, account_id, rest_api_id, stage)

    def _iam_authorizer(self, rest_api_id: str, stage: str) -> IamAuthorizer | None:
        """What AWS_IAM methods are checked against: the policies of the callers' roles, as deployed."""
        roles = self.settings.caller_roles
        role_arns = {role: self.outputs[output] for role, output in roles.items() if output in self.outputs}
        if not role_arns:
            return None
        iam = self.client("iam")
        policies: dict[str, list[dict[str, Any]]] = {}
        for role, arn in role_arns.items():
            name = arn.rsplit("/", 1)[-1]
            policies[role] = [
                iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]
                for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]
            ]
        account_id = next(iter(role_arns.values())).split(":")[4]
        return IamAuthorizer(
            self.settings.identities, policies, role_arns, self.settings.region, account_id, rest_api_id, stage
        )

    def _start_stream(self, mapping: StreamMapping) -> None:
        streams = self.client("dynamodbstreams")
        sqs = self.client("sqs")

        def send_on_failure(destination_arn: str, message: str) -> None:
            queue_url = sqs.get_queue_url(QueueName=destination_arn.rsplit(":", 1)[1])["QueueUrl"]
            sqs.send_message(QueueUrl=queue_url, MessageBody=message)

        def backoff(retries: int) -> float:
            return float(min(self.settings.retry_backoff_seconds * 2 ** (retries - 1), 30.0))

        def watch_shards() -> None:
            # New shards appear as the stream grows; each gets its own poller, children after parents.
            while not self._stop.is_set():
                shards = streams.describe_stream(StreamArn=mapping.stream_arn)["StreamDescription"]["Shards"]
                for shard in shards:
                    key = (mapping.uuid, shard["ShardId"])
                    if key in self._known_shards:
                        continue
                    self._known_shards.add(key)
                    poller = StreamShardPoller(
                        mapping,
                        shard["ShardId"],
                        self.client("dynamodbstreams"),
                        send_on_failure,
                        self.stream_stats,
                        self._stop,
                        self.settings.stream_poll_interval_seconds,
                        backoff,
                        self._delivery_faults(shard["ShardId"]),
                        self._activity,
                    )
                    self._spawn(f"stream-{shard['ShardId'][-8:]}", poller.run)
                self._stop.wait(5)

        self._spawn("shard-watcher", watch_shards)

    def _start_buses(self, stack_resources: list[dict[str, Any]]) -> None:
        """Print each event of the stack's buses, and deliver it where moto does not (local/event_bus.py)."""
        buses = [r["PhysicalResourceId"] for r in stack_resources if r.get("ResourceType") == "AWS::Events::EventBus"]
        for bus in buses:
            tap = self.bus_router.tap(bus)
            self._spawn("bus-" + bus[-12:], partial(self.bus_router.run, tap))

    def _start_log_subscriptions(self, stack_resources: list[dict[str, Any]]) -> None:
        """Send the log lines each subscription filter selects to its function (local/log_subscriptions.py)."""
        specs = SubscriptionSpec.all_in(self._deployed_template())
        if not specs:
            return
        physical = {
            r["LogicalResourceId"]: r.get("PhysicalResourceId", "") for r in stack_resources if "LogicalResourceId" in r
        }
        pools = {pool.function.name: pool for pool in self._pools.values()}
        owner = self.client("sts").get_caller_identity()["Account"]
        sqs = self.client("sqs")
        for spec in specs:
            source, destination = pools[physical[spec.source_function]], pools[physical[spec.destination_function]]

            def invoke(event: Any, pool: FunctionPool = destination) -> bool:
                invocation = pool.invoke(event)
                self.subscription_stats.add(invocations=1, failed_invocations=int(not invocation.ok))
                log_invocation(pool.function.short_name, 1, invocation, "(log subscription)")
                return invocation.ok

            dead_letter = None
            if spec.dead_letter_queue is not None:
                queue = physical[spec.dead_letter_queue]
                url = queue if queue.startswith("http") else sqs.get_queue_url(QueueName=queue)["QueueUrl"]
                dead_letter = partial(_send_message, sqs, url)
            subscription = LogSubscription(
                spec,
                log_path(self.settings.log_dir, source.function),
                owner,
                physical[spec.log_group],
                invoke,
                dead_letter,
                self._stop,
                retry_seconds=self.settings.retry_backoff_seconds,
            )
            self._spawn("logs-" + spec.name[-12:], subscription.run)

    def _delivery_faults(self, shard_id: str) -> DeliveryFaults | None:
        make = self.settings.delivery_faults
        return None if make is None else make(shard_id)

    def _start_queue(self, mapping: Mapping[str, Any], pool: FunctionPool) -> None:
        sqs = self.client("sqs")
        queue_url = sqs.get_queue_url(QueueName=mapping["EventSourceArn"].rsplit(":", 1)[1])["QueueUrl"]
        poller = QueuePoller(
            QueueMapping.from_mapping(mapping, pool, queue_url),
            sqs,
            self.queue_stats,
            self._stop,
            self.settings.sqs_retry_visibility_seconds,
        )
        self._spawn("queue-" + queue_url.rsplit("/", 1)[1][-12:], poller.run)

    def _now(self) -> datetime:
        return datetime.now(UTC) if self.settings.clock is None else self.settings.clock.now()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- stop ----------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()
        self._activity.note()  # an idle poller ends now, not after its second
        if self.gateway is not None:
            self.gateway.stop()
        for pool in self._pools.values():  # first, so no poller waits on a running invocation
            pool.close()
        for thread in self._threads:
            thread.join(timeout=10)

    @property
    def api_url(self) -> str:
        assert self.gateway is not None, "the stack has no REST API"
        return self.gateway.url


def rate_seconds(expression: str) -> float | None:
    """rate(5 minutes) -> 300.0; None for anything else (cron expressions are not run locally)."""
    found = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression.strip())
    if found is None:
        return None
    unit = {"minute": 60, "hour": 3600, "day": 86400}[found.group(2).rstrip("s")]
    return float(int(found.group(1)) * unit)


def scheduled_event(rule_arn: str, region: str, now: datetime | None = None) -> dict[str, Any]:
    """The event EventBridge sends a target on a schedule (at `now`, the system clock's unless given)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": rule_arn.split(":")[4],
        "time": (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


def _send_message(sqs: Any, queue_url: str, body: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)


def _function_arn_of(integration_uri: str) -> str:
    """arn:aws:apigateway:REGION:lambda:path/2015-03-31/functions/FUNCTION_ARN/invocations -> FUNCTION_ARN"""
    marker = "/functions/"
    if marker not in integration_uri:
        return ""
    return integration_uri.split(marker, 1)[1].rsplit("/invocations", 1)[0]
