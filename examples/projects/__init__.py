"""The projects service: a SaaS service whose projects each hold one slot of the tenant's limit (README.md)."""
