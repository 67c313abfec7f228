"""The annotator's room, blinded: claims under leases, labels and their revisions, the annotator's
pages and API. It imports nothing that knows model, checkpoint, run or reader identity
(tests/test_architecture.py checks the rule; docs/architecture.md states it): what it shows comes
from rows it reads itself, through page data holding plain values."""
