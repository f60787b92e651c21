"""How an audit names what it audited (functions/core/audit.py): an operator reading a finding (the
sweeper's log, `ops audit`) must tell an account's types apart; the default type's findings read as
they did before types."""

from __future__ import annotations

from functions.core.audit import AuditFinding
from functions.core.model import Quota


def test_a_types_finding_names_its_type_and_the_default_types_reads_as_before() -> None:
    assert AuditFinding(Quota("acme"), "exact").to_json() == {"account_id": "acme", "verdict": "exact", "problems": []}
    typed = AuditFinding(Quota("acme", "seats"), "drift", ("eventual 2 but 1 counted units",))
    assert typed.to_json() == {
        "account_id": "acme",
        "resource_type": "seats",
        "verdict": "drift",
        "problems": ["eventual 2 but 1 counted units"],
    }
