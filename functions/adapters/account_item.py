"""The account item and the admission shard item: every attribute name they carry, the one reader
from a decoded item to what the core sees, and the clauses of the writes the stores make on them.

Shard 0 is the account item (`ACCOUNT#<name>` / `ACCOUNT`): it carries the quota's counters and its
limit, shard layout, limit version, rate, thresholds and (on the default type) the registry of the
account's other types. Shard i >= 1 (`SHARD#<name>#<i>` / `SHARD`, functions/core/admission.py)
carries the counters only. Their keys are functions/adapters/keys.py's, the table-wide attributes
(`pk`, `sk`, `type`, the activity index's keys) functions/adapters/table_layout.py's.

No other module names these attributes (scripts/item_names.py, run by `make lint`, refuses them):
adding a field to an account is a constant, a line in the reader and, if a write sets it, a clause
here. Items written by older releases are read by the defaults in `_OLDER_ITEM_DEFAULTS`, each with
why it is absent; the stored layout itself never changes (tests/handler/test_old_layout.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from functions.adapters.keys import SHARD_SORT_KEY
from functions.adapters.table_layout import ACTIVITY_BUCKET, LAST_WRITE, NO_PLAN, REGISTRY, SORT_KEY
from functions.core.admission import ShardState
from functions.core.leases import Lease, LeaseKind, in_order
from functions.core.model import LimitSource, Quota, QuotaMode, TenantRate, Usage
from functions.core.periods import Period, format_instant, parse_period
from functions.core.thresholds import thresholds_or_default

if TYPE_CHECKING:
    from functions.core.accounts import LimitChange

# The item types (table_layout.ITEM_TYPE) of the two.
ACCOUNT_TYPE = "account"
SHARD_TYPE = "admission_shard"

# --- attribute names ------------------------------------------------------------------------
# Counters, on every shard item.
ROOM = "room"  # slots the shard may still admit
ADMITTED = "admitted"  # slots it has admitted (reservations settled as creates)
BEST_EFFORT = "best_effort"  # the fast count: signed, readers clamp (Usage.best_effort)
VERSION = "version"  # bumped by every counter write: a heal's writes are conditional on it
HEAL_EPOCH = "heal_epoch"  # bumped by each heal that changed the counters
HEALED_AT = "healed_at"  # when a heal last wrote or checked the shard (the sweeper skips it until a write)
RETIRED = "retired"  # a shard that admits nothing until shard 0 grants it room again
SHARD = "shard"  # on a shard item >= 1: its index
ACCOUNT_ID = "account_id"  # the account (also projected into the activity index)
# The exact time of the last API write (LAST_WRITE, the activity index's sort key, is rounded up to
# the minute), for a heal's quiet check.
LAST_WRITE_EXACT = "last_write_exact"
# A lease is one attribute per write in flight (functions/core/leases.py), named by its request's
# token after its kind's prefix, holding "<resource id> <taken at>" for one unit, and
# "<resource id> <taken at> <units>" for more (so a lease of one unit is what it was before amounts);
# a resize's also says the version it changes: "<resource id> <taken at> <units> <from version>".
LEASE_PREFIXES = {
    LeaseKind.RESERVATION: "lease_r_",
    LeaseKind.DELETION: "lease_d_",
    LeaseKind.GROWTH: "lease_g_",
    LeaseKind.SHRINK: "lease_s_",
}
RESIZE_LEASES = (LeaseKind.GROWTH, LeaseKind.SHRINK)

# On the account item only.
LIMIT = "limit"  # a reserved word in expressions: always written through EXPRESSION_NAMES' #limit
ACTIVE = "shards"  # creates pick among shards 0 .. shards-1
SPAN = "shard_span"  # every shard ever used is below it
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
# Each limit change bumps its version (the account's ETag) and stamps when its PUT was received and
# its token, so an older PUT never overwrites a newer one.
LIMIT_VERSION = "limit_version"
LIMIT_SET_AT = "limit_set_at"
LIMIT_REQUEST = "limit_request"
# When an admin gave the quota its own: its usage thresholds, a list of percentages, ascending
# (functions/core/thresholds.py). Absent: the defaults.
THRESHOLDS = "thresholds"
# An admin's rate for the account, on its default quota's item (absent: the stack's default).
RATE = "rate_limit"
WINDOW = "rate_window_seconds"
# On the default type's account item: the names of the account's other types (a string set), so
# a read of the account finds them with the read it always made (functions/core/accounts.py).
RESOURCE_TYPES = "resource_types"
# A periodic quota's period (functions/core/periods.py): `day` or `month`, and its anchor if any
# (absent: a holding quota). Its account item then admits nothing itself: each period has a shard 0
# of its own (`ACCOUNT#<name>@<period id>`), opened by the period's first create with the limit
# and thresholds copied, and changed with them by every limit change while the period is current.
PERIOD = "period"
PERIOD_ANCHOR = "period_anchor"

# Where the limit comes from (model.LimitSource, docs/plans.md): `plan` or `override`; absent, the
# account's own (every item written before plans).
LIMIT_SOURCE = "limit_source"
# On the default type's account item of an account on a plan: the plan's name, the version of it
# last given to the account in full, and when the PUT that gave it was received (epoch ms), so an
# older PUT never overwrites a newer one's plan.
PLAN = "plan"
PLAN_VERSION = "plan_version"
PLAN_SET_AT = "plan_set_at"
# An expiring override (docs/plans.md, "Expiring grants"): when it ends, epoch ms. Absent for
# every other limit (and every item written before grants). While it is there, no reservation
# on the item admits at or after it, and the quota's shards do not grow.
GRANT_ENDS = "grant_ends"
# A quota in shadow mode (docs/plans.md, "Shadow mode"): `shadow`; absent in enforce mode (every
# item written before shadow mode). Its reservations past the limit are conditional on it.
MODE = "quota_mode"

# `limit` is a DynamoDB reserved word: the clauses below name it `#limit`.
EXPRESSION_NAMES = {"#limit": LIMIT}

# --- reading --------------------------------------------------------------------------------
# What an attribute absent from an item written by an older release reads as, and why it is absent.
# `room` has no constant default: an account item from before shards reads as its limit less what
# it admitted (shard_state), and ShardStore.read_shards writes it in place (adopt_clauses).
_OLDER_ITEM_DEFAULTS: dict[str, Any] = {
    ADMITTED: 0,  # only a shard item >= 1 whose grant has not landed yet has none
    BEST_EFFORT: 0,  # as `admitted`
    VERSION: 0,  # as `admitted`
    HEAL_EPOCH: 0,  # never healed (items from before heals have none either)
    HEALED_AT: "",  # never healed or checked: sorts before every write stamp
    RETIRED: False,  # set only while a shard is retired
    LIMIT: 0,  # shard items >= 1 carry no limit (and an account read from no item has none)
    ACTIVE: 1,  # account items from before admission shards: one shard, the account item
    SPAN: 1,  # as `shards`
    LIMIT_VERSION: 0,  # account items from before limit versions (set_limit then expects none)
    LIMIT_SET_AT: 0,  # account items from before keyed and ordered PUTs: any PUT is newer
    LIMIT_REQUEST: "",  # as `limit_set_at`
    UPDATED_AT: "",  # only an item that is no account item lacks it
}


def _get(item: Mapping[str, Any], name: str) -> Any:
    return item.get(name, _OLDER_ITEM_DEFAULTS[name])


def shard_index(item: Mapping[str, Any]) -> int:
    """Which shard a decoded account or shard item is."""
    return int(item.get(SHARD, 0)) if item.get(SORT_KEY) == SHARD_SORT_KEY else 0


def shard_state(item: Mapping[str, Any]) -> ShardState:
    """A decoded account or shard item as the admission core sees it (an empty mapping: no item)."""
    admitted = int(_get(item, ADMITTED))
    limit = int(_get(item, LIMIT))
    return ShardState(
        shard=shard_index(item),
        # An account item written before shards existed has no `room`: its room is what its limit leaves.
        room=int(item[ROOM]) if ROOM in item else limit - admitted,
        admitted=admitted,
        best_effort=int(_get(item, BEST_EFFORT)),
        retired=bool(_get(item, RETIRED)),
        version=int(_get(item, VERSION)),
        limit=limit,
        active=int(_get(item, ACTIVE)),
        span=int(_get(item, SPAN)),
        limit_version=int(_get(item, LIMIT_VERSION)),
        limit_set_at=int(_get(item, LIMIT_SET_AT)),
        limit_request=str(_get(item, LIMIT_REQUEST)),
        thresholds=thresholds_of(item),
        leases=held_leases(item),
        period=period_of(item),
        limit_source=str(item.get(LIMIT_SOURCE, LimitSource.ACCOUNT)),
        grant_ends=grant_ends_of(item),
        mode=str(item.get(MODE, QuotaMode.ENFORCE)),
    )


def grant_ends_of(item: Mapping[str, Any]) -> int | None:
    """When a decoded account item's expiring override ends (epoch ms); None: it has none."""
    return int(item[GRANT_ENDS]) if GRANT_ENDS in item else None


def period_of(item: Mapping[str, Any]) -> Period | None:
    """A decoded account item's period, if it is a periodic quota's."""
    if PERIOD not in item:
        return None
    anchor = item.get(PERIOD_ANCHOR)
    return parse_period(str(item[PERIOD]), str(anchor) if anchor else None)


def usage_of(quota: Quota, shards: Sequence[Mapping[str, Any]], eventual: int) -> Usage:
    """A quota's usage as its account item (first) and its other shard items say, with its eventual
    count (a periodic quota's own counts nothing: its periods do, functions/core/accounts.py)."""
    account = shard_state(shards[0])
    return Usage(
        quota=quota,
        limit=account.limit,
        best_effort_net=sum(shard_state(item).best_effort for item in shards),
        eventual=eventual,
        rate=rate_of_item(shards[0]),
        limit_version=account.limit_version,
        thresholds=account.thresholds,
        period=account.period,
        limit_source=account.limit_source,
        plan=str(shards[0][PLAN]) if PLAN in shards[0] else None,
        plan_version=int(shards[0].get(PLAN_VERSION, 0)),
        grant_ends=account.grant_ends,
        plan_set_at=int(shards[0].get(PLAN_SET_AT, 0)),
        mode=account.mode,
    )


def has_room(item: Mapping[str, Any]) -> bool:
    """False for an account item written before shards existed (it is adopted on its first read)."""
    return ROOM in item


def heal_epoch_of(item: Mapping[str, Any]) -> int:
    return int(_get(item, HEAL_EPOCH))


def healed_at_of(item: Mapping[str, Any]) -> str:
    return str(_get(item, HEALED_AT))


def updated_at_of(item: Mapping[str, Any]) -> str:
    return str(_get(item, UPDATED_AT))


def thresholds_of(item: Mapping[str, Any]) -> tuple[int, ...] | None:
    """A decoded account item's own usage thresholds (None: it has none, the defaults apply)."""
    return tuple(map(int, item[THRESHOLDS])) if THRESHOLDS in item else None


def rate_of_item(item: Mapping[str, Any]) -> TenantRate | None:
    """The account item's own rate (`item` plain, as read), if an admin gave it one."""
    if RATE not in item or WINDOW not in item:
        return None
    return TenantRate(requests_per_second=int(item[RATE]), window_seconds=int(item[WINDOW]))


def resource_types_of(item: Mapping[str, Any]) -> list[str]:
    """The account's other types, by name, as its default type's account item registers them."""
    return sorted(item.get(RESOURCE_TYPES, ()))


def lease_attribute(lease: Lease) -> str:
    return f"{LEASE_PREFIXES[lease.kind]}{lease.token}"


def lease_value(lease: Lease) -> str:
    if lease.kind in RESIZE_LEASES:
        return f"{lease.resource_id} {lease.taken_at} {lease.units} {lease.from_version}"
    if lease.units == 1:
        return f"{lease.resource_id} {lease.taken_at}"
    return f"{lease.resource_id} {lease.taken_at} {lease.units}"


def leases_of(item: Mapping[str, Any], shard: int = 0) -> tuple[Lease, ...]:
    """The leases held on an account or shard item (plain attributes), oldest first."""
    found = []
    for name, value in item.items():
        for kind, prefix in LEASE_PREFIXES.items():
            if name.startswith(prefix) and isinstance(value, str) and " " in value:
                resource_id, taken_at, *numbers = value.split(" ")
                units, from_version = _number(numbers, 0, 1), _number(numbers, 1, 0)
                found.append(Lease(kind, name[len(prefix) :], resource_id, taken_at, shard, units, from_version))
    return in_order(found)


def _number(given: list[str], index: int, absent: int) -> int:
    """A lease value's number after its time: units (absent for one, as every lease of an older
    release), then a resize's version."""
    return int(given[index]) if len(given) > index and given[index].isdigit() else absent


def holds(item: Mapping[str, Any] | None, lease: Lease) -> bool:
    return bool(item) and item.get(lease_attribute(lease)) == lease_value(lease)  # type: ignore[union-attr]


def held_leases(item: Mapping[str, Any]) -> tuple[Lease, ...]:
    return leases_of(item, shard_index(item))


def last_write_of(item: Mapping[str, Any]) -> str | None:
    """An account or shard item's last API write time: `last_write_exact`, or `last_write_at` on an
    item written before the stamp was rounded (it carries the exact time there); None if neither."""
    written = item.get(LAST_WRITE_EXACT, item.get(LAST_WRITE))
    return None if written is None else str(written)


def latest_write(items: Iterable[Mapping[str, Any]]) -> str | None:
    """The latest API write over an account's shard items."""
    return max((written for written in map(last_write_of, items) if written is not None), default=None)


# --- writing --------------------------------------------------------------------------------
# The clauses the stores' writes put together. Placeholders (`:name`) are the caller's to fill, as
# each clause's docstring says; `#limit` comes with EXPRESSION_NAMES.

# An API write's stamps (values :stamp, the minute; :now, the exact time).
STAMP_SETS = f"{LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now"
# A limit change's record (values :received, :token; the version's value is the caller's).
LIMIT_RECORD_SETS = f"{LIMIT_SET_AT} = :received, {LIMIT_REQUEST} = :token"


def create_sets() -> str:
    """The SET clauses of a new account item (values :limit, :zero, :one, :id, :type, :now,
    :bucket, :stamp, :received, :token; names #limit, #type)."""
    return (
        f"#limit = :limit, {ROOM} = :limit, {ADMITTED} = :zero, {BEST_EFFORT} = :zero, "
        f"{HEAL_EPOCH} = :zero, {ACTIVE} = :one, {SPAN} = :one, {VERSION} = :one, "
        f"{ACCOUNT_ID} = :id, #type = :type, {CREATED_AT} = :now, {UPDATED_AT} = :now, "
        f"{ACTIVITY_BUCKET} = :bucket, {STAMP_SETS}, "
        f"{LIMIT_VERSION} = :one, {LIMIT_RECORD_SETS}"
    )


def open_period_sets() -> str:
    """The SET clauses of a period's shard 0, opened with its quota's limit (values :limit, :zero,
    :one, :active, :id, :type, :now, :bucket, :stamp, :version; names #limit, #type) and
    thresholds (thresholds_sets), its shards 0 .. :active - 1 active (the others have no item
    yet: each takes room from its donor at its first create). Its limit version is its quota's:
    a limit change moves both together."""
    return (
        f"#limit = :limit, {ROOM} = :limit, {ADMITTED} = :zero, {BEST_EFFORT} = :zero, "
        f"{HEAL_EPOCH} = :zero, {ACTIVE} = :active, {SPAN} = :active, {VERSION} = :one, "
        f"{ACCOUNT_ID} = :id, #type = :type, {CREATED_AT} = :now, {UPDATED_AT} = :now, "
        f"{ACTIVITY_BUCKET} = :bucket, {STAMP_SETS}, {LIMIT_VERSION} = :version"
    )


def period_limit_update(optional_sets: str) -> str:
    """A limit change on a period's shard 0 (values :limit, :now, :stamp, :next, :change, :one;
    name #limit), with its thresholds' SET clause if the change gives them (thresholds_sets)."""
    return (
        f"SET #limit = :limit, {UPDATED_AT} = :now, {STAMP_SETS}, {LIMIT_VERSION} = :next"
        + optional_sets
        + f" ADD {ROOM} :change, {VERSION} :one"
    )


def period_sets(period: Period | None, values: dict[str, Any]) -> str:
    """The SET clauses (and values) that make a quota periodic, if the change gives a period."""
    if period is None:
        return ""
    values[":period"] = period.kind.value
    sets = f", {PERIOD} = :period"
    if period.anchor is not None:
        values[":anchor"] = format_instant(period.anchor)
        sets += f", {PERIOD_ANCHOR} = :anchor"
    return sets


# A holding's write on shard 0 of a quota (value-free): refused by a periodic quota's account item.
HOLDING_CONDITION = f"attribute_not_exists({PERIOD})"
# A limit change that makes a holding periodic: the shard as read (value :version_read).
HOLDS_AS_READ_CONDITION = f" AND {VERSION} = :version_read"


def set_limit_update(optional_sets: str) -> str:
    """A limit change's update (values :limit, :now, :stamp, :next, :received, :token, :change,
    :one; name #limit), with the change's optional SET clauses (rate_sets, thresholds_sets)."""
    return (
        f"SET #limit = :limit, {UPDATED_AT} = :now, {STAMP_SETS}, "
        f"{LIMIT_VERSION} = :next, {LIMIT_RECORD_SETS}" + optional_sets + f" ADD {ROOM} :change, {VERSION} :one"
    )


def limit_version_condition(read_version: int, values: dict[str, Any]) -> str:
    """The limit version read, or no version at all on an account item written before versions."""
    if read_version:
        values[":version"] = read_version
        return f"{LIMIT_VERSION} = :version"
    return f"attribute_not_exists({LIMIT_VERSION})"


def change_sets(change: LimitChange, values: dict[str, Any]) -> str:
    """The SET clauses (and their values) of what a limit change may set besides the limit: its
    rate, its thresholds and its period, each only if it gives one."""
    return (
        rate_sets(change.rate, values) + thresholds_sets(change.thresholds, values) + period_sets(change.period, values)
    )


def rate_sets(rate: TenantRate | None, values: dict[str, Any]) -> str:
    """The SET clauses (and their values) of a limit change's rate limit, if it has one."""
    if rate is None:
        return ""
    values.update({":rate": rate.requests_per_second, ":window": rate.window_seconds})
    return f", {RATE} = :rate, {WINDOW} = :window"


def thresholds_sets(thresholds: tuple[int, ...] | None, values: dict[str, Any]) -> str:
    """The SET clause (and its value) of a change's thresholds, if it gives the quota its own."""
    if thresholds is None:
        return ""
    values[":thresholds"] = list(thresholds_or_default(thresholds))  # ascending, each once
    return f", {THRESHOLDS} = :thresholds"


def grant_clauses(ends: int | None, had_one: bool, values: dict[str, Any]) -> tuple[str, str]:
    """The SET clause (and its value) of a limit change's grant end, if it gives one, or the name
    to REMOVE when the quota had one and this change gives none (every other change ends it)."""
    if ends is not None:
        values[":grant_ends"] = ends
        return f", {GRANT_ENDS} = :grant_ends", ""
    return "", (GRANT_ENDS if had_one else "")


def source_clauses(source: str, current: str, values: dict[str, Any]) -> tuple[str, str]:
    """The SET clause (and its value) of where a change's limit comes from, and its REMOVE clause:
    a limit of the account's own carries no source (as every item written before plans), so a
    change back to one removes it."""
    if source != LimitSource.ACCOUNT:
        values[":source"] = source
        return f", {LIMIT_SOURCE} = :source", ""
    return "", (f" REMOVE {LIMIT_SOURCE}" if current != LimitSource.ACCOUNT else "")


def mode_clauses(mode: str | None, current: str, values: dict[str, Any]) -> tuple[str, str]:
    """The SET clause (and its value) of a change's mode, and the name to REMOVE: enforce is the
    attribute's absence (as on every item written before shadow mode); None keeps the mode."""
    if mode == QuotaMode.SHADOW:
        values[":mode"] = mode
        return f", {MODE} = :mode", ""
    return "", (MODE if mode == QuotaMode.ENFORCE and current != QuotaMode.ENFORCE else "")


# An account's plan, given in full (values :plan, :plan_version, :received; names #pk and
# MEMBERSHIP_NAMES' #plan, a reserved word): on the default type's account item, which must exist,
# unless a PUT received later gave it another. Neither `version` nor a stamp: no counter moves, so
# a heal's reads stand.
MEMBERSHIP_NAMES = {"#plan": PLAN}
# The registry key moves with the plan (values :registry, the plan's name): the accounts index
# lists the account under its plan (table_layout.ACCOUNTS_INDEX).
MEMBERSHIP_UPDATE = (
    f"SET #plan = :plan, {PLAN_VERSION} = :plan_version, {PLAN_SET_AT} = :received, {REGISTRY} = :registry"
)
MEMBERSHIP_CONDITION = f"attribute_exists(#pk) AND (attribute_not_exists({PLAN_SET_AT}) OR {PLAN_SET_AT} <= :received)"
# A type returned to the account's plan dates the membership no earlier (plans.return_to_plan):
# its plan and version stay, so the registry's index is not written.
FOLLOW_PLAN_UPDATE = f"SET {PLAN_SET_AT} = :received"
FOLLOW_PLAN_CONDITION = f"#plan = :plan AND {PLAN_SET_AT} < :received"


def registry_sets(quota: Quota, values: dict[str, Any]) -> str:
    """The SET clause of a new account item's registry key: only the default type's account item
    (one per account) carries it, listed under no plan until its membership is written."""
    if not quota.is_default or quota.period:
        return ""
    values[":registry"] = NO_PLAN
    return f", {REGISTRY} = :registry"


def types_sets(resource_types: Sequence[str], values: dict[str, Any]) -> str:
    """The SET clause (and its value) of an account item's first registered types, if any."""
    if not resource_types:
        return ""
    values[":types"] = set(resource_types)
    return f", {RESOURCE_TYPES} = :types"


# Lowering the limit below shard 0's room: only while the account has one active shard (:single).
SINGLE_SHARD_CONDITION = f" AND {ACTIVE} = :single"
# Another shard that is gone or retired and empty (values :true, :zero; name #pk).
RETIRED_EMPTY_CONDITION = f"attribute_not_exists(#pk) OR ({RETIRED} = :true AND {ROOM} = :zero)"
# A deletion's lease on an account that never spread (value :one).
UNSHARDED_CONDITION = f"(attribute_not_exists({SPAN}) OR {SPAN} <= :one)"
# A reservation's condition: the shard's room holds the units taken, while it is open (value
# :admitted, the units, as reserve_changes puts it).
RESERVE_CONDITION = f"{ROOM} >= :{ADMITTED} AND attribute_not_exists({RETIRED})"
# A shadow quota's reservation past its limit (shard 0, whatever its room): only while in shadow mode.
SHADOW_RESERVE_CONDITION = f"attribute_exists({MODE}) AND attribute_not_exists({RETIRED})"
# A reservation on shard 0: not at or after the end of an expiring override it carries (value
# :at_ms, the reservation's time in epoch ms); only shard 0 ever carries one.
BEFORE_GRANT_ENDS_CONDITION = f"(attribute_not_exists({GRANT_ENDS}) OR {GRANT_ENDS} > :at_ms)"
# A layout change that grows the active shards: not while an expiring override stands.
NO_GRANT_CONDITION = f" AND attribute_not_exists({GRANT_ENDS})"


def reserve_changes(units: int) -> dict[str, int]:
    """A reservation's changes: `units` of the shard's room become admitted."""
    return {ADMITTED: +units, ROOM: -units}


def deletion_changes(units: int) -> dict[str, int]:
    """A deletion's change: the fast count less the resource's units, signed on purpose
    (DynamoApiStore.take_deletion)."""
    return {BEST_EFFORT: -units}


# The registry of types (name #types).
TYPES_NAME = RESOURCE_TYPES


def lease_update(changes: Iterable[str]) -> str:
    """Take a lease with `changes` ADDed (values :<change>, :one, :stamp, :now, :lease; name #lease)."""
    adds = ", ".join([*(f"{name} :{name}" for name in changes), f"{VERSION} :one"])
    return f"ADD {adds} SET {STAMP_SETS}, #lease = :lease"


def settled_adds(admitted: int, best_effort: int, values: dict[str, Any]) -> str:
    """The ADD clauses of a settle (`version + 1`, and the changes that are not zero; a released
    slot, `admitted - 1`, goes back to the shard's room), their values put in `values`."""
    values[":one"] = 1
    adds = [f"{VERSION} :one"]
    for attribute, delta in {ADMITTED: admitted, ROOM: -admitted, BEST_EFFORT: best_effort}.items():
        if delta:
            adds.append(f"{attribute} :{attribute}")
            values[f":{attribute}"] = delta
    return ", ".join(adds)


# A settle's condition on the heal epoch the reservation saw (value :epoch).
EPOCH_CONDITION = f" AND {HEAL_EPOCH} = :epoch"
# An API write's stamps on a settle.
SETTLE_STAMPS = f" SET {STAMP_SETS}"

# Adopting an account item from before shards (values :room, :one, :limit, :admitted; name #limit).
ADOPT_UPDATE = f"SET {ROOM} = :room, {ACTIVE} = :one, {SPAN} = :one"
ADOPT_CONDITION = f"attribute_not_exists({ROOM}) AND #limit = :limit AND {ADMITTED} = :admitted"

# Moving room out of a shard (values :minus, :one): a donor's grant, or a gather to shard 0.
ROOM_OUT_UPDATE = f"ADD {ROOM} :minus, {VERSION} :one"
# The donor gives :slots, only while open unless it is shard 0.
GIVE_CONDITION = f"{ROOM} >= :slots"
OPEN_CONDITION = f" AND attribute_not_exists({RETIRED})"
# The receiving shard (values :slots, :one, :id, :type, :shard, :bucket, :zero, :true; names #type,
# #shard), created by its first grant, and only granted while dry.
RECEIVE_UPDATE = (
    f"ADD {ROOM} :slots, {VERSION} :one "
    f"SET {ACCOUNT_ID} = :id, #type = :type, #shard = :shard, {ACTIVITY_BUCKET}"
    f" = :bucket, {ADMITTED} = if_not_exists({ADMITTED}, :zero), "
    f"{BEST_EFFORT} = if_not_exists({BEST_EFFORT}, :zero), "
    f"{HEAL_EPOCH} = if_not_exists({HEAL_EPOCH}, :zero) REMOVE {RETIRED}"
)
RECEIVE_CONDITION = f"attribute_not_exists({ROOM}) OR {ROOM} < :one OR {RETIRED} = :true"
SHARD_NAME = {"#shard": SHARD}
# Gathering a shard's room back to shard 0 (values :minus, :room, :one; :true when retiring).
RETIRING_SETS = f" SET {RETIRED} = :true"
BUMP_VERSION = f"ADD {VERSION} :one"
ROOM_CONDITION = f"{ROOM} = :room"
RETURN_ROOM_UPDATE = f"ADD {ROOM} :room, {VERSION} :one"
# Changing the active shards (values :to, :new_span, :active, :span, :one).
LAYOUT_UPDATE = f"SET {ACTIVE} = :to, {SPAN} = :new_span ADD {VERSION} :one"
LAYOUT_CONDITION = f"{ACTIVE} = :active AND {SPAN} = :span"


def heal_assignments(best_effort: int, admitted: int | None, room: int | None) -> dict[str, Any]:
    """What a heal sets on a shard: the fast count, and when it folds the shards (admitted given)
    the admitted count and room."""
    if admitted is None:
        return {BEST_EFFORT: best_effort}
    return {BEST_EFFORT: best_effort, ADMITTED: admitted, ROOM: room}


# A folded shard: emptied and retired.
FOLDED = {BEST_EFFORT: 0, ADMITTED: 0, ROOM: 0, RETIRED: True}
# Folding leaves one active shard.
ONE_ACTIVE = {ACTIVE: 1}


def heal_update(assignments: Iterable[str], epoch: bool) -> str:
    """A heal's write on one shard (values :<assignment>, :now; :one with a new epoch)."""
    sets = ", ".join([*(f"{name} = :{name}" for name in assignments), f"{HEALED_AT} = :now"])
    return f"SET {sets}" + (f" ADD {HEAL_EPOCH} :one" if epoch else "")


# A heal writes only the version it read (value :version).
VERSION_CONDITION = f"{VERSION} = :version"
