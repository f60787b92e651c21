"""Session tag values for the tenant role (docs/security.md, "Which tag values a tenant session may
carry"). IAM puts the tag into the tenant policy's resource ARNs, so a value with a path separator,
a wildcard or a dot segment could name another tenant's paths; the trust policy refuses a session
with one, and the local runtime mints none."""

from __future__ import annotations

# Each would reach, or could reach, beyond `/accounts/<tag>`: `globex/resources/r1` is globex's
# resource r1 under `GET /accounts/${tag}`; `*` and `?` are wildcards in a policy; `..` a dot
# segment; the rest are characters STS allows in a tag value and an account id never has; and no
# value, or one longer than an account id, names no account.
HOSTILE_TENANT_TAGS = (
    "globex/resources/r1",
    "acme/",
    "*",
    "acme*",
    "?",
    "acm?",
    "$",
    "..",
    "a.b",
    "a:b",
    "a=b",
    "a+b",
    "a@b",
    "a b",
    "",
    "x" * 65,
)
ACCOUNT_ID_TAGS = ("acme", "a", "Globex-2_b", "x" * 64)
