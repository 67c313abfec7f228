"""The adjudicator's room: the conflicting items to decide, one item with the annotators' labels
as "Annotator 1 / 2", and final labels."""
