"""EventBridge, where moto stops short: each event a bus of the stack carries is printed in the run
log, and delivered to the targets moto leaves out (SNS topics, API destinations), as EventBridge
delivers them.

moto's PutEvents matches the bus's rules and delivers to log groups, SQS queues, archives and other
buses itself (local/moto_patches/event_targets.py has it skip the rest). To see every event, the
runtime adds a rule of its own to each bus of the stack, matching every event, with a queue of
its own as the target, and reads that queue. For each event read, every other rule of the bus whose
pattern matches it (EventBridge's pattern syntax is the one Lambda's event filters use:
local/filters.py) and whose target moto does not deliver to gets it: an SNS topic is published the
event's JSON, as EventBridge does ("Amazon SNS" targets in the EventBridge user guide: the message
is the event, without an input transformer); an API destination gets its HTTP request, made for
real. Other targets are logged as not delivered locally.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from local.filters import matches_any
from local.moto_patches.event_targets import delivered_by_moto

logger = logging.getLogger("local.runtime")

TAP_RULE = "local-runtime-tap"
# Matches every event: a prefix of nothing.
EVERY_EVENT = {"source": [{"prefix": ""}]}


@dataclass(frozen=True)
class BusTap:
    bus: str
    queue_url: str


class BusRouter:
    def __init__(self, client: Callable[[str], Any], stop: threading.Event) -> None:
        self._events, self._sqs, self._sns = client("events"), client("sqs"), client("sns")
        self._secrets = client("secretsmanager")
        self._stop = stop
        self.delivered = 0  # events printed (and routed)

    def tap(self, bus: str) -> BusTap:
        """Add the runtime's rule and queue to `bus`."""
        # A queue name takes letters, digits, hyphens and underscores, 80 at most; a bus name dots too.
        queue_url = self._sqs.create_queue(QueueName=f"{TAP_RULE}-{bus}".replace(".", "-")[:80])["QueueUrl"]
        queue_arn = self._sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
        self._events.put_rule(Name=TAP_RULE, EventBusName=bus, EventPattern=json.dumps(EVERY_EVENT))
        self._events.put_targets(
            Rule=TAP_RULE, EventBusName=bus, Targets=[{"Id": "runtime", "Arn": queue_arn["QueueArn"]}]
        )
        return BusTap(bus, queue_url)

    def run(self, tap: BusTap) -> None:
        while not self._stop.is_set():
            # A long poll: the emulator answers as soon as an event arrives, and an idle system asks
            # once a second, not four times (stopping waits out at most one poll).
            messages = self._sqs.receive_message(QueueUrl=tap.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in messages.get("Messages", []):
                self.route(tap.bus, json.loads(message["Body"]))
                self._sqs.delete_message(QueueUrl=tap.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def route(self, bus: str, event: dict[str, Any]) -> None:
        logger.info("%-16s %s %s", "event", event.get("detail-type"), json.dumps(event.get("detail"), sort_keys=True))
        self.delivered += 1
        for rule, targets in self._rules(bus):
            if not matches_any([json.loads(rule["EventPattern"])], event):
                continue
            for target in targets:
                self._deliver(rule["Name"], target, event)

    def _rules(self, bus: str) -> Iterable[tuple[dict[str, Any], list[dict[str, Any]]]]:
        for page in self._events.get_paginator("list_rules").paginate(EventBusName=bus):
            for rule in page.get("Rules", []):
                if rule["Name"] == TAP_RULE or "EventPattern" not in rule or rule.get("State") != "ENABLED":
                    continue
                try:
                    targets = self._events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus)["Targets"]
                except self._events.exceptions.ResourceNotFoundException:
                    continue  # deleted since it was listed: no longer the bus's rule
                yield rule, [target for target in targets if not delivered_by_moto(target["Arn"])]

    def _deliver(self, rule: str, target: dict[str, Any], event: dict[str, Any]) -> None:
        arn = target["Arn"]
        if arn.split(":")[2] == "sns":
            self._sns.publish(TopicArn=arn, Message=json.dumps(event))
            logger.info("%-16s rule %s -> %s", "event routed", rule, arn.rsplit(":", 1)[-1])
        elif ":api-destination/" in arn:
            status = self._call_api_destination(arn.split(":api-destination/", 1)[1].split("/", 1)[0], event)
            logger.info("%-16s rule %s -> api destination, HTTP %s", "event routed", rule, status)
        else:
            logger.warning("%-16s rule %s: target %s is not delivered locally", "event", rule, arn)

    def _call_api_destination(self, name: str, event: dict[str, Any]) -> int | str:
        """The destination's HTTP request, as EventBridge makes it: its method to its endpoint, the
        event as the JSON body, and the connection's API key header, whose value EventBridge keeps
        in the connection's secret (EventBridge user guide, "API destinations"; "Connections")."""
        destination = self._events.describe_api_destination(Name=name)
        connection_name = destination["ConnectionArn"].split(":connection/", 1)[1].split("/", 1)[0]
        connection = self._events.describe_connection(Name=connection_name)
        headers = {"Content-Type": "application/json"}
        if connection["AuthorizationType"] == "API_KEY":
            secret = json.loads(self._secrets.get_secret_value(SecretId=connection["SecretArn"])["SecretString"])
            headers[connection["AuthParameters"]["ApiKeyAuthParameters"]["ApiKeyName"]] = secret["api_key_value"]
        request = urllib.request.Request(
            destination["InvocationEndpoint"],
            data=json.dumps(event).encode(),
            headers=headers,
            method=destination["HttpMethod"],
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return int(answer.status)
        except (urllib.error.URLError, TimeoutError) as error:
            return f"failed: {error}"
