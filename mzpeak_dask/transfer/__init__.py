"""URL inputs and outputs of a conversion: read by ranges or staged locally, uploaded
atomically."""
