"""The embedded emulator's changes to moto, one module per change (docs/local-runtime.md lists them).

Each module's docstring says which behaviour of moto ("upstream": moto as released, at
MOTO_VERSION) it corrects, so that the emulator answers as DynamoDB does, or speeds up, answering
the same. tests/runtime/test_moto_patches.py holds, for each
module, a test of the patched behaviour and, where moto's own behaviour can be seen, a test that
moto as released still behaves as the change assumes: an upgrade that fixes or moves that
behaviour fails it.

Every change was written and checked against one release of moto, MOTO_VERSION, which
requirements-dev.txt pins (a test holds the two equal). The emulator refuses to start on any other:
to upgrade, install the new release, run tests/runtime/test_moto_patches.py and change what it
shows, then raise both.
"""

from __future__ import annotations

from importlib.metadata import version

from local.moto_patches import (
    action_methods_listed_once,
    backend_per_host,
    conditions_lexed_once,
    event_bus_ref,
    event_connections,
    event_targets,
    item_answers_as_json,
    no_event_source_polling,
    queries_sort_their_matches,
    stream_records_as_json,
    transact_get_items_limit,
    transaction_rollback,
    tree_walks_dispatched_once,
    update_creates_one_record,
    update_expressions_parsed_once,
    update_structure_checked_once,
)

MOTO_VERSION = "5.2.5"


class MotoVersionMismatch(RuntimeError):
    """The installed moto is not the release the changes were checked against."""


def check_version(installed: str | None = None) -> None:
    found = installed or version("moto")
    if found != MOTO_VERSION:
        raise MotoVersionMismatch(
            f"local/moto_patches was checked against moto {MOTO_VERSION}, but moto {found} is installed: "
            "install the version requirements-dev.txt pins (see local/moto_patches/__init__.py to upgrade)"
        )


def apply_corrections() -> None:
    """What makes moto answer as DynamoDB and Lambda do (both flavours). The two corrections made
    in front of moto, on the wire, are WSGI layers the emulator stacks itself:
    `client_request_tokens.ClientRequestTokens` and `empty_expression_maps.EmptyExpressionMaps`."""
    check_version()
    no_event_source_polling.apply()
    event_bus_ref.apply()
    event_connections.apply()
    event_targets.apply()
    transact_get_items_limit.apply()
    transaction_rollback.apply()
    update_creates_one_record.apply()


def apply_speed_ups() -> None:
    """What makes moto answer the same, faster (the tuned flavour)."""
    check_version()
    backend_per_host.apply()
    stream_records_as_json.apply()
    item_answers_as_json.apply()
    update_expressions_parsed_once.apply()
    conditions_lexed_once.apply()
    tree_walks_dispatched_once.apply()
    update_structure_checked_once.apply()
    queries_sort_their_matches.apply()
    action_methods_listed_once.apply()
