"""The usage webhook end to end on the local runtime: a stack deployed with `-c usageWebhookUrl` and
`-c usageWebhookSecretArn` (the secret made in the emulator first, as a deployer makes it in their
account), an account driven to 80%, and the API destination's HTTP call received by a server on
127.0.0.1 with the secret as its API key (docs/events.md, "Targets without code")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra import options
from local.http_client import poll
from local.product import new_account
from tests.support.webhook import Webhook

pytestmark = pytest.mark.shares_setup  # the system with a webhook its module fixtures start


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    with Webhook() as hook:
        yield hook


@pytest.fixture(scope="module")
def hooked(webhook: Webhook) -> Iterator[Any]:
    """The whole system, deployed with the webhook's context, on an emulator of its own."""
    import boto3

    from local.emulator import EmulatorProcess
    from local.product import SINGLE_ATTEMPT, admin_client, runtime_settings
    from local.runtime import LOCAL_CREDENTIALS, LocalRuntime

    with EmulatorProcess() as emulator:
        secrets = boto3.client(
            "secretsmanager",
            endpoint_url=emulator.url,
            region_name="us-east-1",
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        secret_arn = secrets.create_secret(Name="usage-webhook", SecretString="s3cret")["ARN"]
        context = {
            options.USAGE_WEBHOOK_URL.key: webhook.url,
            options.USAGE_WEBHOOK_SECRET.key: secret_arn,
        }
        runtime = LocalRuntime(runtime_settings(emulator.url, port=0, context=context))
        runtime.deploy_and_start()
        try:
            yield admin_client(runtime, retry=SINGLE_ATTEMPT)
        finally:
            runtime.stop()


def test_every_usage_event_is_posted_to_the_webhook_with_the_secret_as_its_api_key(
    hooked: Any, webhook: Webhook
) -> None:
    account_id = new_account(hooked, "hooked", limit=5)  # 80% at 4
    for index in range(4):
        hooked.create_resource(account_id, f"r{index}")
    [(headers, event)] = poll(lambda: list(webhook.received), bool, 60)
    assert headers["x-api-key"] == "s3cret"
    assert event["detail-type"] == "Usage Threshold Crossed"
    assert (event["detail"]["accountId"], event["detail"]["threshold"], event["detail"]["direction"]) == (
        account_id,
        80,
        "up",
    )
    hooked.put_account(account_id, limit=4)  # 4 of 4: 100% up
    received = poll(lambda: [event for _, event in webhook.received], lambda events: len(events) >= 3, 60)
    later = {(event["detail-type"], event["detail"].get("threshold")) for event in received[1:]}
    assert later == {("Limit Changed", None), ("Usage Threshold Crossed", 100)}
