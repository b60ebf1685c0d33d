"""Registers the commands that live in their own modules."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    return None
