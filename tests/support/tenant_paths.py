"""What a tenant of account `acme` may call, as IAM authorization (infra/access.py) and the JWT
authorizer (functions/core/token_access.py) both allow it: its own account's reads and resources,
every type's included, never a limit, never another account's paths; and the admin's alone."""

from __future__ import annotations

# (method, path, whether acme's tenant may call it)
TENANT_ACME_PATHS = [
    ("GET", "/accounts/acme", True),
    ("POST", "/accounts/acme/resources", True),
    ("GET", "/accounts/acme/resources", True),
    ("GET", "/accounts/acme/resources/r1", True),
    ("DELETE", "/accounts/acme/resources/r1", True),
    ("GET", "/accounts/acme/types", True),
    ("GET", "/accounts/acme/types/seats", True),
    ("GET", "/accounts/acme/types/default", True),
    ("POST", "/accounts/acme/types/seats/resources", True),
    ("GET", "/accounts/acme/types/seats/resources", True),
    ("GET", "/accounts/acme/types/seats/resources/r1", True),
    ("DELETE", "/accounts/acme/types/seats/resources/r1", True),
    ("DELETE", "/accounts/acme/types/default/resources/r1", True),
    ("PATCH", "/accounts/acme/resources/r1", True),  # a resize of its own resource
    ("PATCH", "/accounts/acme/types/seats/resources/r1", True),
    ("GET", "/accounts/acme/admission", True),  # would a create be admitted
    ("GET", "/accounts/acme/types/seats/admission", True),
    ("GET", "/accounts/acme/history", True),  # its periodic quotas' totals
    ("GET", "/accounts/acme/types/builds/history", True),
    ("PUT", "/accounts/acme", False),  # only an admin sets a limit
    ("PUT", "/accounts/acme/types/seats", False),
    ("PUT", "/accounts/acme/types/default", False),
    ("GET", "/accounts/acme2", False),  # a prefix is another tenant
    ("GET", "/accounts/acme2/types/seats", False),
    ("POST", "/accounts/globex/resources", False),
    ("GET", "/accounts/globex/types", False),
    ("POST", "/accounts/globex/types/seats/resources", False),
    ("DELETE", "/accounts/globex/types/seats/resources/r1", False),
    ("PATCH", "/accounts/globex/resources/r1", False),
    ("GET", "/accounts/globex/admission", False),
    ("GET", "/accounts/globex/history", False),
    ("GET", "/accounts/globex/types/builds/history", False),
]

# The admin's alone, for every tenant (docs/plans.md): the plans, and a type's override's removal.
# A tenant reads its own account's plan and each type's limitSource on its account's GET.
ADMIN_ONLY_PATHS = [
    ("DELETE", "/accounts/acme/types/seats/override"),
    ("GET", "/plans"),
    ("GET", "/plans/pro"),
    ("PUT", "/plans/pro"),
    ("GET", "/accounts"),  # the account registry: every tenant's ids
]
