"""Operator CLI (`python -m ops ...`): look at an account, heal it, inspect and replay DLQ 2, sweep now.

It works against a deployed stack (default AWS credentials and region) and against the local
runtime (`--endpoint-url` with the emulator URL `make run` prints) alike. Names come from the
stack's outputs (`ops/stack.py`); each command is one function over resolved names
(`ops/commands.py`); `ops/__main__.py` parses arguments and prints.
"""
