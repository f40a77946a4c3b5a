"""`make bench` (`python -m harness.bench`): what the harness costs, measured in one run on this machine.

The issue asked for four figures with targets to beat: the harness's overhead
over the bare agent processes it starts, the fake API's added latency and
throughput on loopback, in-process exploration speed, and the scenario
library's wall time serial against `-n 2`. Each concern is one module; the
command runs them in turn and writes reports/bench/bench.json and bench.md.

On a shared 2-core machine the absolute numbers move with whatever else runs,
so every comparison is taken as a ratio within one run: the variants being
compared alternate repetition by repetition, and medians are reported.
"""
