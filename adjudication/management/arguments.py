"""Options several commands share, declared once so that their names, defaults and help agree."""

from __future__ import annotations

from argparse import ArgumentParser

from django.conf import settings


def add_isolation_arguments(parser: ArgumentParser, *, help_suffix: str = "") -> None:
    """--budget and --processes of the commands that read in the isolation pool themselves."""
    parser.add_argument(
        "--budget",
        type=float,
        default=settings.READER_BUDGET_SECONDS,
        help="hard wall-clock budget per reading, seconds" + help_suffix,
    )
    parser.add_argument(
        "--processes", type=int, default=settings.READER_PROCESSES, help="reader processes" + help_suffix
    )


def add_wait_arguments(parser: ArgumentParser) -> None:
    """--no-wait and --timeout of the commands that enqueue work for Celery workers."""
    parser.add_argument("--no-wait", action="store_true", help="enqueue and return without waiting for workers")
    parser.add_argument("--timeout", type=float, default=0, help="give up waiting after this many seconds (0 = never)")
