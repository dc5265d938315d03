"""The matchmaking simulator: a population queues, is matched, plays and is rated, in a loop.

`skillservice simulate SCENARIO --out DIR` (commands.py) reads a scenario file (reading.py)
into the typed scenario (scenario.py), builds its population (population.py), runs the loop
on simulated time with the service's own matchmaking and rating code (virtual.py) or through
HTTP against a running service (live.py), each run written down as a `Record` (record.py),
and reports it (measures.py, charts.py, report.py) against Elo and random pairing
(baselines.py). Outcomes follow the rating model itself (truth.py), so a correct loop
recovers the true skills. docs/simulator.md is the user's guide.
"""
