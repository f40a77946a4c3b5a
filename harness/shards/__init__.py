"""`--shard i/n` and `harness merge-reports`: one matrix split over n machines, and their folders merged into one report.

assignment.py says which (scenario, target) run belongs to which shard;
codec.py turns the results into JSON and back, field by field, so nothing a
report renders is lost between a shard and the merge; record.py writes and
reads each shard's shard.json (its place, its inputs' digests, its results);
merge.py checks a set of shard folders belong together and puts their runs
back in the single run's order.
"""
