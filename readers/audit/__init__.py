"""The metamorphic verifier audit of seed 001 (arXiv:2609.01354), as a library.

Pure Python, no Django: `transforms` is the suite of answer rewrites (CERTIFIED-EQUIV,
CONTRACT-DEP, ADVERSARIAL), `runner` reads every (gold, variant) pair with every reader through
the isolation pool and computes the audit's tables, `golds` loads golds from a file.
See docs/audit.md.
"""

from .golds import GoldsError, load_golds
from .transforms import ADVERSARIAL, CERTIFIED, CLASSES, CONTRACT_DEP, TRANSFORMS, Transform, Variant, build_variants

__all__ = [
    "ADVERSARIAL",
    "CERTIFIED",
    "CLASSES",
    "CONTRACT_DEP",
    "TRANSFORMS",
    "GoldsError",
    "Transform",
    "Variant",
    "build_variants",
    "load_golds",
]
