"""The wire format between the isolation pool and its workers, and the shared-memory slot layout
(see readers.isolation for the protocol)."""

from __future__ import annotations

import pickle
from dataclasses import fields
from itertools import starmap
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import Any

from ..base import Item, Reading

PICKLE = pickle.HIGHEST_PROTOCOL
# One 64-byte slot (8 int64) per worker in the shared mmap; the first four words are used.
SLOT_WORDS = 8
SEQ, BID, POS, T0 = 0, 1, 2, 3

# Plain Item / Reading objects cross the pipe as tuples of their fields: ~2x cheaper to pickle.
_ITEM_FIELDS = attrgetter(*(f.name for f in fields(Item)))
_READING_FIELDS = attrgetter(*(f.name for f in fields(Reading)))


def encode_item(item: Item) -> Any:
    return _ITEM_FIELDS(item) if type(item) is Item else item


def decode_item(data: Any) -> Item:
    return Item(*data) if type(data) is tuple else data


def pack_readings(readings: list[Reading]) -> tuple[bool, list]:
    """(True, [field tuple, ...]) when every reading is a plain Reading, else (False, readings)."""
    if all(type(r) is Reading for r in readings):
        return True, [_READING_FIELDS(r) for r in readings]
    return False, readings  # a Reading subclass travels as itself


def unpack_readings(plain: bool, packed: list) -> list[Reading]:
    return list(starmap(Reading, packed)) if plain else packed


def send(conn: Connection, msg: Any) -> None:
    conn.send_bytes(pickle.dumps(msg, PICKLE))


def recv(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


ERROR_CHARS = 1000


def short(text: str) -> str:
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "…"


def describe_exception(exc: BaseException) -> str:
    try:
        return short(f"{type(exc).__name__}: {exc}")
    except Exception:  # noqa: BLE001 - str() of a hostile exception can itself fail
        return type(exc).__name__
