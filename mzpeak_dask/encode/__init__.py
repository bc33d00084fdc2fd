"""Plan a run and encode its partitions: the contracts between stages, the plan (survey,
data columns, partitions), prepared signals, and what a worker does to one partition."""
