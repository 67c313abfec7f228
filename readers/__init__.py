"""Answer readers: a pure Python library (no Django). See readers.base for the contract."""

from .base import ANSWER_FORMS, VERDICTS, Item, Reader, Reading, Verdict, config_hash

__all__ = ["ANSWER_FORMS", "VERDICTS", "Item", "Reader", "Reading", "Verdict", "config_hash"]
