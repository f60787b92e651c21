"""Worked examples of services that use the hybrid counter (each folder has its README)."""
