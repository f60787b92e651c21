"""What the adapters tell the core about a failed call, and the settings every function checks once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from functions.adapters.errors import may_have_landed, translate
from functions.core.rate_limits import DEFAULT_TENANT_RATE
from functions.shared.config import ConfigurationError, Settings


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "UpdateItem"
    )


@pytest.mark.parametrize(
    "error",
    [
        client_error("ThrottlingException", 400),
        client_error("ProvisionedThroughputExceededException", 400),
        client_error("ValidationException", 400),
        ConnectTimeoutError(endpoint_url="x"),
        EndpointConnectionError(endpoint_url="x"),
    ],
)
def test_failures_that_prove_nothing_landed(error: Exception) -> None:
    assert may_have_landed(error) is False
    assert translate("op", error).may_have_landed is False


@pytest.mark.parametrize(
    ("error", "throttled"),
    [
        (client_error("ThrottlingException", 400), True),
        (client_error("ProvisionedThroughputExceededException", 400), True),
        (client_error("ValidationException", 400), False),
        (client_error("InternalServerError", 500), False),
        (ReadTimeoutError(endpoint_url="x"), False),
    ],
)
def test_a_refusal_for_capacity_is_told_apart(error: Exception, throttled: bool) -> None:
    """Admission grows an account's shards when one throttles (functions/core/admission.py)."""
    assert translate("op", error).throttled is throttled


@pytest.mark.parametrize("error", [client_error("InternalServerError", 500), ReadTimeoutError(endpoint_url="x")])
def test_failures_after_which_the_write_may_have_landed(error: Exception) -> None:
    assert may_have_landed(error) is True
    failure = translate("reserve slot", error)
    assert failure.may_have_landed is True
    assert "reserve slot" in str(failure)


def test_settings_name_the_missing_variable() -> None:
    with pytest.raises(ConfigurationError, match="TABLE_NAME"):
        Settings.from_env({})
    assert Settings.from_env({"TABLE_NAME": "t"}).table_name == "t"


def test_settings_reject_a_lookback_not_longer_than_the_quiet_period() -> None:
    """Reversed, the sweeper's activity query would be a BETWEEN with its bounds swapped: AWS
    rejects it (ValidationException) and moto silently returns nothing."""
    env = {"TABLE_NAME": "t", "HEAL_QUIET_SECONDS": "600", "HEAL_LOOKBACK_SECONDS": "300"}
    with pytest.raises(ConfigurationError, match=r"HEAL_LOOKBACK_SECONDS .* HEAL_QUIET_SECONDS"):
        Settings.from_env(env)
    assert Settings.from_env({**env, "HEAL_LOOKBACK_SECONDS": "601"}).sweep.lookback.total_seconds() == 601


def test_settings_take_the_default_tenant_rate_and_refuse_one_outside_its_windows() -> None:
    assert Settings.from_env({"TABLE_NAME": "t"}).tenant_rate == DEFAULT_TENANT_RATE
    chosen = Settings.from_env({"TABLE_NAME": "t", "TENANT_RATE_LIMIT": "50", "TENANT_RATE_WINDOW_SECONDS": "2"})
    assert (chosen.tenant_rate.requests_per_second, chosen.tenant_rate.burst) == (50, 100)
    for rate, window in (("50", "61"), ("fast", "1"), ("0", "0")):
        with pytest.raises(ConfigurationError, match="TENANT_"):
            Settings.from_env({"TABLE_NAME": "t", "TENANT_RATE_LIMIT": rate, "TENANT_RATE_WINDOW_SECONDS": window})


def test_settings_reject_a_tombstone_retention_shorter_than_the_quiet_period() -> None:
    env = {"TABLE_NAME": "t", "HEAL_QUIET_SECONDS": "60", "TOMBSTONE_RETENTION_SECONDS": "30"}
    with pytest.raises(ConfigurationError, match="TOMBSTONE_RETENTION_SECONDS"):
        Settings.from_env(env)
    assert Settings.from_env({**env, "TOMBSTONE_RETENTION_SECONDS": "86400"}).tombstone_retention.days == 1


@pytest.mark.parametrize(
    "name", ["HEAL_QUIET_SECONDS", "SWEEP_PENDING_OLDER_THAN_SECONDS", "TOMBSTONE_RETENTION_SECONDS"]
)
def test_settings_name_a_variable_that_is_not_whole_seconds(name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{name} must be a whole number of seconds"):
        Settings.from_env({"TABLE_NAME": "t", name: "1.5"})


@pytest.mark.parametrize("raw", ["0", "-5", "fast", "nan", "inf"])
def test_settings_reject_a_shard_growth_rate_that_is_not_a_positive_number(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="SHARD_GROW_AT_WRITES_PER_SECOND must be a positive number"):
        Settings.from_env({"TABLE_NAME": "t", "SHARD_GROW_AT_WRITES_PER_SECOND": raw})


def test_a_rate_window_part_takes_1000_requests_a_second_unless_scaled() -> None:
    assert Settings.from_env({"TABLE_NAME": "t"}).rate_part_requests == 1000
    scaled = {"TABLE_NAME": "t", "RATE_WINDOW_PART_REQUESTS_PER_SECOND": "0.5"}  # at partition limits of 1/2000
    assert Settings.from_env(scaled).rate_part_requests == 0.5
    with pytest.raises(ConfigurationError, match="RATE_WINDOW_PART_REQUESTS_PER_SECOND must be a positive number"):
        Settings.from_env({"TABLE_NAME": "t", "RATE_WINDOW_PART_REQUESTS_PER_SECOND": "0"})


def test_the_shard_growth_rate_defaults_to_a_quarter_of_a_partition_and_may_be_scaled() -> None:
    assert Settings.from_env({"TABLE_NAME": "t"}).sharding.grow_at == 250
    scaled = {"TABLE_NAME": "t", "SHARD_GROW_AT_WRITES_PER_SECOND": "0.125"}  # 250 at partition limits of 1/2000
    assert Settings.from_env(scaled).sharding.grow_at == 0.125


def test_the_api_judges_leases_dead_as_the_sweeper_does() -> None:
    """A write that sees dead leases settles them with the sweeper's age and tombstone retention."""
    default = Settings.from_env({"TABLE_NAME": "t"})
    assert (default.sharding.dead_lease_age, default.sharding.tombstone_retention) == (
        default.sweep.quiet,
        default.tombstone_retention,
    )
    env = {"TABLE_NAME": "t", "HEAL_QUIET_SECONDS": "90", "TOMBSTONE_RETENTION_SECONDS": "7200"}
    env["SHARD_GROW_AT_WRITES_PER_SECOND"] = "0.125"
    settings = Settings.from_env(env)
    assert (settings.sharding.dead_lease_age, settings.sharding.tombstone_retention) == (
        timedelta(seconds=90),
        timedelta(hours=2),
    )
    assert settings.sharding.grow_at == 0.125
