"""The managers' item browser (/items/): responses found by id or text, run identity, queue, review
state, reader verdicts and annotator disagreement, and one response with everything stored about it.
Manager-facing: it shows model, checkpoint, prompt, reader and annotator identities."""
