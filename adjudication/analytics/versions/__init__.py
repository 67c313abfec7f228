"""Judge versions: the family split of human labels, and each version measured on its held-out side."""
