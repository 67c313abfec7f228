"""Shared by the add_* commands: validate a model instance and save it, or fail with the field errors."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import models


def save_validated(instance: models.Model) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
    instance.save()
