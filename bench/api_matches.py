"""POST /v1/matches throughput and latency, side by side with pgbench, in one run.

    python bench/api_matches.py [--seconds 20] [--workers 2] [--connections 1,8,32,128]
                                [--batch 0|N] [--pgbouncer]

1. Starts the service the way `make run` does (`python -m app serve`, embedded
   PostgreSQL and Redis under a temp DATA_DIR, WORKERS uvicorn processes).
2. Seeds 100,000 rated players in the `default` mode.
3. wrk drives sustained 2v2 `POST /v1/matches` at CONNECTIONS connections, each request a
   new match of 4 random players.
4. pgbench runs the same transaction shape against the same database: lock 4 rating
   rows in id order, update 4, insert the match and 4 participants.

With --batch N the service is driven through `POST /v1/matches/batch`, N new 2v2 matches per
request, and pgbench runs the batch's shape, N matches a transaction (PGBENCH_BATCH_SCRIPT):
what PostgreSQL alone sustains for those writes, the service's ceiling. Its tx/s column then
counts matches, and its latencies are per transaction; the service's matches/s are N times
its requests/s.

Every connection count in --connections is run in turn, against the same service, then
pgbench. The matches the service applied are also counted in the database.
Prints throughput, p50/p99 of both and the ratio. Needs wrk and pgbench (Debian: wrk,
postgresql-client). With --pgbouncer the service reaches PostgreSQL through Debian's pgbouncer
in transaction pooling (tests/pgbouncer.py, DEFAULT_POOL_SIZE server connections); pgbench and
the seeding still go direct.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module: import bench modules
# as a package from the repository root instead of from this folder.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import tempfile

import psycopg
from psycopg.conninfo import conninfo_to_dict

from app.infra.embedded import EmbeddedServers
from bench.serving import serving
from tests.pgbouncer import PgBouncer

PLAYERS = 100_000

# A new 2v2 match among PLAYERS random players per call of one(), as a JSON body.
_WRK_MATCH = r"""
local counter = 0
-- Unique per wrk run (%(run)s) and thread (setup numbers them): ids are never reposted.
local made = 0
function setup(thread) made = made + 1; thread:set("tid", made) end
local function prefix() return "%(run)s-" .. tostring(tid) end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(key)s"
local function one()
  counter = counter + 1
  local picked, ids = {}, {}
  while #ids < 4 do
    local p = math.random(1, %(players)d)
    if not picked[p] then picked[p] = true; ids[#ids + 1] = "b" .. p end
  end
  return string.format(
    '{"match_id":"w%%s-%%d","teams":[{"players":[{"id":"%%s"},{"id":"%%s"}],"rank":1},' ..
    '{"players":[{"id":"%%s"},{"id":"%%s"}],"rank":2}]}', prefix(), counter, ids[1], ids[2], ids[3], ids[4])
end
"""

# One new match per request, as POST /v1/matches.
WRK_SCRIPT = (
    _WRK_MATCH
    + r"""
request = function() return wrk.format(nil, "/v1/matches", nil, one()) end
"""
)

# N new 2v2 matches per request, as one POST /v1/matches/batch.
WRK_BATCH_SCRIPT = (
    _WRK_MATCH
    + r"""
request = function()
  local items = {}
  for i = 1, %(batch)d do items[i] = one() end
  return wrk.format(nil, "/v1/matches/batch", nil, '{"matches":[' .. table.concat(items, ",") .. ']}')
end
"""
)

PGBENCH_SCRIPT = """
\\set a random(1, %(players)d)
\\set b random(1, %(players)d)
\\set c random(1, %(players)d)
\\set d random(1, %(players)d)
BEGIN;
SELECT player_id, mu, sigma FROM ratings
 WHERE mode = 'default' AND player_id = ANY(ARRAY['b' || :a, 'b' || :b, 'b' || :c, 'b' || :d]::varchar[])
 ORDER BY player_id FOR UPDATE;
UPDATE ratings SET mu = mu + 0.01, sigma = sigma * 0.999, conservative = mu - 3 * sigma, matches = matches + 1
 WHERE mode = 'default' AND player_id = ANY(ARRAY['b' || :a, 'b' || :b, 'b' || :c, 'b' || :d]::varchar[]);
INSERT INTO matches (match_id, mode, played_at, body_hash, quality, response)
 VALUES ('pg-' || md5(random()::text || clock_timestamp()::text), 'default', now(), 'x', 0.4, '{}');
INSERT INTO match_players
 (match_pk, player_id, mode, team, rank, weight, mu_before, sigma_before, mu_after, sigma_after)
 SELECT currval('matches_id_seq'), p, 'default', 0, 1, 1, 25, 8, 26, 7
 FROM unnest(ARRAY['b' || :a, 'b' || :b, 'b' || :c, 'b' || :d]::varchar[]) AS p ON CONFLICT DO NOTHING;
COMMIT;
"""


def seed(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO players (id) SELECT 'b' || g FROM generate_series(1, %s) g ON CONFLICT DO NOTHING",
            (PLAYERS,),
        )
        conn.execute(
            "INSERT INTO ratings (player_id, mode, mu, sigma, conservative) "
            "SELECT 'b' || g, 'default', 25, 8.333333333333334, 0 FROM generate_series(1, %s) g "
            "ON CONFLICT DO NOTHING",
            (PLAYERS,),
        )
        conn.execute("VACUUM ANALYZE ratings")


def parse_wrk(output: str) -> dict[str, float]:
    def latency(label: str) -> float:
        match = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        if not match:
            raise SystemExit(f"could not read wrk's {label}% latency:\n{output}")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    return {
        "tps": rate,
        "p50": latency("50"),
        "p99": latency("99"),
        "errors": float(non_2xx.group(1)) if non_2xx else 0.0,
    }


# The batch's shape at %(batch)d new 2v2 matches a transaction, PostgreSQL alone (the rating
# and every byte of Python left out): lock the 4N rating rows in id order, update them, insert
# N match rows, each with a stored response of the service's size (about 900 bytes of JSON,
# parsed per row), and 4N participants. The same random players in both statements: setseed.
PGBENCH_BATCH_SCRIPT = """
\\set s random(1, 1000000000)
BEGIN;
SELECT setseed(:s / 1000000000.0);
SELECT count(*) FROM (
 SELECT 1 FROM ratings WHERE mode = 'default' AND player_id IN (
  SELECT 'b' || (1 + floor(random() * %(players)d))::int FROM generate_series(1, 4 * %(batch)d))
 ORDER BY player_id FOR UPDATE) AS locked;
SELECT setseed(:s / 1000000000.0);
WITH picks AS MATERIALIZED (
 SELECT g, 'b' || (1 + floor(random() * %(players)d))::int AS p FROM generate_series(1, 4 * %(batch)d) AS g
), changed AS (
 UPDATE ratings SET mu = mu + 0.01, sigma = sigma * 0.999, conservative = mu - 3 * sigma,
  matches = matches + 1, wins = wins + 1, last_played_at = now(), updated_at = now()
 WHERE mode = 'default' AND player_id IN (SELECT p FROM picks)
), ids AS MATERIALIZED (
 SELECT g, nextval('matches_id_seq') AS id, nextval('match_applied_seq') AS seq,
  CAST(g * 0.7071067811865476 AS float8) AS x FROM generate_series(1, %(batch)d) AS g
), participants AS (
 INSERT INTO match_players
  (match_pk, player_id, mode, team, rank, weight, mu_before, sigma_before, mu_after, sigma_after)
 SELECT i.id, k.p, 'default', (k.g - 1) %% 4 / 2, 1 + (k.g - 1) %% 4 / 2, 1, i.x, i.x / 3, i.x + 1, i.x / 4
 FROM picks AS k JOIN ids AS i ON i.g = (k.g - 1) / 4 + 1 ON CONFLICT DO NOTHING
)
INSERT INTO matches (id, match_id, mode, played_at, body_hash, quality, response, applied_seq)
SELECT i.id, 'pg-' || i.id, 'default', now(), md5(CAST(i.id AS text)), i.x / 100, CAST(format(
 '{"match_id":"pg-%%1$s","mode":"default","played_at":"2026-11-24T00:00:00.000000Z","created":true,'
 || '"quality":%%2$s,"void":false,"players":[%%3$s,%%3$s,%%3$s,%%3$s]}', i.id, i.x / 100, format(
 '{"player_id":"b%%1$s","team":0,"before":{"mu":%%2$s,"sigma":%%3$s,"conservative":%%4$s},'
 || '"after":{"mu":%%2$s,"sigma":%%3$s,"conservative":%%4$s}}', i.id, i.x, i.x / 3, i.x - i.x / 7)) AS jsonb),
 i.seq
FROM ids AS i;
COMMIT;
"""


def run_pgbench(
    socket_dir: str, seconds: int, clients: int, workdir: Path, batch: int = 0
) -> dict[str, float]:
    """pgbench at `clients` connections: the single post's shape, or with `batch` the batch's."""
    script = workdir / "match.sql"
    shape = PGBENCH_BATCH_SCRIPT if batch else PGBENCH_SCRIPT
    script.write_text(shape % {"players": PLAYERS, "batch": batch})
    for old in workdir.glob("pgbench_log*"):
        old.unlink()
    out = subprocess.run(
        [
            "pgbench",
            "-n",
            "-h",
            socket_dir,
            "-U",
            "postgres",
            "-d",
            "skillservice",
            "-c",
            str(clients),
            "-j",
            str(min(2, clients)),
            "-T",
            str(seconds),
            "-f",
            str(script),
            "-l",
            "--log-prefix",
            str(workdir / "pgbench_log"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))  # type: ignore[union-attr]
    latencies = sorted(
        int(line.split()[2]) / 1000
        for log in workdir.glob("pgbench_log*")
        for line in log.read_text().splitlines()
    )
    return {
        "tps": tps,
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99)],
        "errors": 0.0,
    }


def _processes() -> dict[int, tuple[int, str, float, float]]:
    """Every process: its parent, its name, the CPU seconds it has used (user + system) and
    those of its children that have exited and been waited for."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[int, str, float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        own = (int(fields[11]) + int(fields[12])) / tick
        found[int(entry.name)] = (int(fields[1]), name, own, (int(fields[13]) + int(fields[14])) / tick)
    return found


def _descendants(table: dict[int, tuple[int, str, float, float]], root: int) -> set[int]:
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, (parent, *_) in table.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def postmaster(data_dir: Path) -> int:
    """The embedded PostgreSQL's postmaster (the first line of its postmaster.pid)."""
    found = next(data_dir.rglob("postmaster.pid"))
    return int(found.read_text().split()[0])


def cpu_split(service_pid: int, postgres_pid: int) -> dict[str, float]:
    """CPU seconds used so far by the service's processes (`serve` and its workers), by the
    embedded PostgreSQL's (the postmaster, its processes and those that have exited: a
    backend's CPU is counted when its connection closes too), and by the whole machine (wrk,
    pgbench, other work), from /proc: what a busy machine's wall clock hides."""
    table = _processes()
    cluster = _descendants(table, postgres_pid)
    ours = _descendants(table, service_pid) - cluster
    split = {
        "service": sum(table[pid][2] for pid in ours if pid in table),
        "postgres": sum(table[pid][2] for pid in cluster) + table[postgres_pid][3],
    }
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:8]]
    split["machine"] = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # not idle, iowait
    return split


def applied(url: str) -> int:
    """Matches the service has applied (pgbench's rows are named pg-...)."""
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM matches WHERE match_id LIKE 'w%'").fetchone()[0])  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", default="32", help="comma-separated counts, each run in turn")
    parser.add_argument(
        "--batch", type=int, default=0, help="matches per POST /v1/matches/batch (0: single posts)"
    )
    parser.add_argument("--pool", type=int, default=20, help="DB_POOL_SIZE of each worker")
    parser.add_argument("--pgbouncer", action="store_true", help="the service goes through pgbouncer")
    parser.add_argument("--pgbouncer-pool", type=int, default=20, help="pgbouncer's default_pool_size")
    parser.add_argument("--no-pgbench", action="store_true", help="the service only")
    args = parser.parse_args()
    levels = [int(c) for c in args.connections.split(",")]
    per_request = max(1, args.batch)
    for tool in ("wrk", "pgbench"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (apt-get install wrk postgresql-client)")
    rows: list[tuple[int, dict[str, float], dict[str, float] | None]] = []
    with contextlib.ExitStack() as stack:
        extra: dict[str, str] = {}
        direct: str | None = None
        if args.pgbouncer:
            # PostgreSQL first, then pgbouncer in front of it, then the service on pgbouncer.
            workdir = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
            os.chmod(workdir, 0o755)
            stack.callback(shutil.rmtree, workdir, ignore_errors=True)
            embedded = EmbeddedServers(workdir / "data")
            stack.callback(embedded.stop)
            direct = embedded.start_postgres()
            bouncer = PgBouncer(direct, workdir / "pgbouncer", pool_size=args.pgbouncer_pool).start()
            stack.callback(bouncer.stop)
            extra["DATABASE_URL"] = bouncer.url("skillservice")
        served = stack.enter_context(serving("matches", args.workers, DB_POOL_SIZE=str(args.pool), **extra))
        socket_dir = str(conninfo_to_dict(direct)["host"]) if direct else served.socket_dir
        database = direct or served.database_url
        seed(database)
        lua = served.workdir / "post.lua"
        postgres = postmaster(Path(socket_dir) if direct else served.workdir)
        script = WRK_BATCH_SCRIPT if args.batch else WRK_SCRIPT

        def render(run: str) -> None:
            lua.write_text(script % {"key": served.key, "players": PLAYERS, "batch": args.batch, "run": run})

        for connections in levels:
            render(f"warm{connections}")
            subprocess.run(
                ["wrk", f"-t{min(2, connections)}", f"-c{connections}", "-d3s", "-s", str(lua), served.base],
                capture_output=True,
                check=True,
            )  # warm-up
            render(f"run{connections}")
            before = applied(database)
            cpu_before = cpu_split(served.pid, postgres)
            wrk = subprocess.run(
                [
                    "wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{args.seconds}s", "--latency",
                    "--timeout", "60s", "-s", str(lua), served.base,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout  # fmt: skip
            ours = parse_wrk(wrk)
            # wrk's window is at most --seconds plus the requests in flight at its end.
            cpu_after = cpu_split(served.pid, postgres)
            done = applied(database) - before
            ours["applied"] = done / args.seconds
            for part in ("service", "postgres", "machine"):
                ours[f"cpu_{part}"] = (cpu_after[part] - cpu_before[part]) * 1000 / max(1, done)
            pg = None
            if not args.no_pgbench:
                cpu_before = cpu_split(served.pid, postgres)
                pg = run_pgbench(socket_dir, args.seconds, connections, served.workdir, args.batch)
                pg["tps"] *= per_request  # matches/s (latencies stay per transaction)
                cpu_after = cpu_split(served.pid, postgres)
                for part in ("postgres", "machine"):
                    spent = cpu_after[part] - cpu_before[part]
                    pg[f"cpu_{part}"] = spent * 1000 / max(1.0, pg["tps"] * args.seconds)
            rows.append((connections, ours, pg))

    behind = f" behind pgbouncer (transaction pooling, {args.pgbouncer_pool} server connections)"
    behind = behind if direct else ""
    path = f"POST /v1/matches/batch ({args.batch} matches a request)" if args.batch else "POST /v1/matches"
    print(
        f"2v2 {path} over {PLAYERS:,} players, {args.seconds}s per row, "
        f"{args.workers} uvicorn workers, embedded PostgreSQL{behind}\n"
    )
    print(
        "| connections | service matches/s | applied/s (db) | p50 ms | p99 ms | non-2xx "
        "| pgbench tx/s | pgbench p50 | pgbench p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for connections, ours, pg in rows:
        theirs = f"{pg['tps']:.0f} | {pg['p50']:.1f} | {pg['p99']:.1f}" if pg else "- | - | -"
        print(
            f"| {connections} | {ours['tps'] * per_request:.0f} | {ours['applied']:.0f} "
            f"| {ours['p50']:.1f} | {ours['p99']:.1f} | {ours['errors']:.0f} | {theirs} |"
        )
    print(
        "\nCPU per applied match (ms, from /proc, over the timed runs): the service's processes, "
        "PostgreSQL's, and the whole machine (the load generator and any other work included); "
        "pgbench's per transaction\n"
    )
    print(
        "| connections | service CPU ms | PostgreSQL CPU ms | machine CPU ms "
        "| pgbench: PostgreSQL CPU ms | pgbench: machine CPU ms |"
    )
    print("|---|---|---|---|---|---|")
    for connections, ours, pg in rows:
        theirs = f"{pg['cpu_postgres']:.2f} | {pg['cpu_machine']:.2f}" if pg else "- | -"
        print(
            f"| {connections} | {ours['cpu_service']:.2f} | {ours['cpu_postgres']:.2f} "
            f"| {ours['cpu_machine']:.2f} | {theirs} |"
        )
    for connections, ours, pg in rows:
        if pg:
            print(
                f"{connections} connections: service / pgbench throughput "
                f"{ours['tps'] * per_request / pg['tps']:.0%} (goal >= 100%), "
                f"p99 {ours['p99']:.1f} ms vs {pg['p99']:.1f} ms (goal: no higher)"
            )


if __name__ == "__main__":
    main()
