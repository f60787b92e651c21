"""A stage's throttle, locally (local/stage_throttle.py): a token bucket shared by every method,
read from the deployed template, answering 429 in the API's error envelope with Retry-After."""

from __future__ import annotations

from infra import options
from infra.synth import synthesize_stack_template
from local.apigateway import ApiGateway, Route
from local.gateway_responses import GatewayResponses
from local.http_client import HttpApi
from local.stage_throttle import StageThrottle
from tests.runtime.test_apigateway import EchoFunction
from tests.support.template import synth_template_json


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_absorbed_then_requests_pass_at_the_rate() -> None:
    clock = Clock()
    bucket = StageThrottle(rate=2, burst=3, clock=clock)
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.5  # one token back
    assert [bucket.take(), bucket.take()] == [True, False]
    clock.now += 10  # never more than the burst
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]


def test_the_limits_come_from_the_stage_the_stack_deploys() -> None:
    default = StageThrottle.from_template(synth_template_json())
    assert default is not None
    assert (default.rate, default.burst) == (options.API_RATE_LIMIT.default, options.API_BURST_LIMIT.default)
    chosen = StageThrottle.from_template(
        synthesize_stack_template({options.API_RATE_LIMIT.key: "3", options.API_BURST_LIMIT.key: "2"})
    )
    assert chosen is not None
    assert (chosen.rate, chosen.burst) == (3, 2)


def test_beyond_the_stages_throttle_the_gateway_answers_429_without_calling_the_function() -> None:
    function = EchoFunction()
    responses = GatewayResponses.from_template(synth_template_json())
    throttle = StageThrottle(rate=0.001, burst=2)
    api = ApiGateway([Route("/{proxy+}", "ANY", function)], "prod", "127.0.0.1", 0, None, responses, throttle)  # type: ignore[list-item]
    api.start()
    try:
        client = HttpApi(api.url)
        answers = [client.request("GET", "/accounts/acme") for _ in range(3)]
    finally:
        api.stop()
    assert [answer.status for answer in answers] == [201, 201, 429]
    assert answers[2].body["error"]["code"] == "Throttled"
    assert answers[2].body["error"]["message"] == "Too Many Requests"
    assert answers[2].headers["Retry-After"] == "1"
    assert len(function.events) == 2
