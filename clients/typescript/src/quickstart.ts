// The game-backend and lobby quick start, in TypeScript, on a client generated from
// openapi/openapi.json (openapi-typescript's types, sent by openapi-fetch): nothing here is
// written by hand about the wire but the calls themselves.
//
//   SKILL_URL=http://127.0.0.1:8000 SKILL_API_KEY=... npm run quickstart
//
// The key needs the scopes results:write, matchmaking and read. SKILL_MODE names the mode
// (default: "default"; 1v1), SKILL_RUN makes the ids unique (default: random). Each step
// prints one JSON line; a step the service answers otherwise than the quick start says
// stops the run with exit status 1 and the problem it got.
import { randomBytes } from "node:crypto";

import createClient from "openapi-fetch";

import type { components, paths } from "./generated/api.js";

type Problem = components["schemas"]["Problem"];
type MatchIn = components["schemas"]["MatchIn"];

const baseUrl = process.env.SKILL_URL ?? "http://127.0.0.1:8000";
const apiKey = process.env.SKILL_API_KEY;
const mode = process.env.SKILL_MODE ?? "default";
const run = process.env.SKILL_RUN ?? randomBytes(4).toString("hex");

if (!apiKey) {
  console.error("error: set SKILL_API_KEY to a key with results:write, matchmaking and read");
  process.exit(2);
}

const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });

/** A step whose answer was not the one expected. */
class Unexpected extends Error {}

/** The answer's body when its status is `status`, else Unexpected naming what came. */
function expect<T>(
  step: string,
  status: number,
  answer: { data?: T; error?: Problem; response: Response },
): T {
  if (answer.response.status !== status || answer.data === undefined) {
    const problem = answer.error ? `${answer.error.title}: ${answer.error.detail}` : "no problem+json";
    throw new Unexpected(`${step}: expected ${status}, got ${answer.response.status} (${problem})`);
  }
  return answer.data;
}

function say(step: string, fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ step, ...fields }));
}

async function gameBackend(): Promise<void> {
  const [alice, bob] = [`alice-${run}`, `bob-${run}`];
  const match: MatchIn = {
    match_id: `g-${run}`,
    mode,
    teams: [
      { players: [{ id: alice }], rank: 1 },
      { players: [{ id: bob }], rank: 2 },
    ],
  };

  // Post a finished match: 201, and every player's rating before and after.
  const posted = expect("post", 201, await api.POST("/v1/matches", { body: match }));
  const winner = posted.players.find((p) => p.player_id === alice);
  say("post", {
    status: 201,
    created: posted.created,
    winner_before: winner?.before.mu,
    winner_after: winner?.after.mu,
  });

  // The answer was lost? Send it again: 200, the stored response, applied once.
  const retried = expect("retry", 200, await api.POST("/v1/matches", { body: match }));
  say("retry", {
    status: 200,
    created: retried.created,
    same_ratings: JSON.stringify(retried.players) === JSON.stringify(posted.players),
  });

  // The same match_id for another result is a conflict, answered as problem+json.
  const reused = await api.POST("/v1/matches", {
    body: { ...match, teams: [match.teams[1]!, match.teams[0]!] },
  });
  if (reused.error === undefined) throw new Unexpected("reuse: expected 409, got a match");
  say("reuse", { status: reused.response.status, title: reused.error.title, detail: reused.error.detail });

  // The leaderboard, best first: conservative rating mu − k·sigma.
  const board = expect(
    "leaderboard",
    200,
    await api.GET("/v1/leaderboards/{mode}", { params: { path: { mode }, query: { limit: 50 } } }),
  );
  say("leaderboard", {
    status: 200,
    ours: board.entries
      .filter((e) => e.player_id === alice || e.player_id === bob)
      .map((e) => ({ rank: e.rank, player_id: e.player_id, conservative: e.rating.conservative })),
  });
}

async function lobby(): Promise<void> {
  const players = [`carol-${run}`, `dave-${run}`];
  const tickets: string[] = [];
  for (const player of players) {
    const queued = expect(
      "queue",
      201,
      await api.POST("/v1/queues/{mode}/tickets", {
        params: { path: { mode } },
        body: { players: [player], attributes: { region: "eu" } },
      }),
    );
    tickets.push(queued.ticket_id);
    say("queue", { status: 201, player, ticket_status: queued.status });
  }
  const [first, second] = tickets as [string, string];

  // Wait for a match: the long-poll answers as soon as the ticket leaves `queued`.
  const waiting = api.GET("/v1/queues/{mode}/tickets/{ticket_id}", {
    params: { path: { mode, ticket_id: first }, query: { wait: 30 } },
  });

  // The matchmaking loop: form and claim matches, best draw quality first.
  const made = expect(
    "matchmake",
    200,
    await api.POST("/v1/queues/{mode}/matchmake", { params: { path: { mode } }, body: { max_matches: 10 } }),
  );
  const proposal = made.matches.find((m) => m.ticket_ids.includes(first));
  say("matchmake", {
    status: 200,
    proposals: made.matches.length,
    both_tickets: proposal !== undefined && proposal.ticket_ids.includes(second),
    quality: proposal?.quality,
  });

  const woken = expect("long-poll", 200, await waiting);
  say("long-poll", {
    status: 200,
    ticket_status: woken.status,
    same_proposal: woken.match?.proposal_id === proposal?.proposal_id,
    teams: woken.match?.teams,
  });
}

try {
  await gameBackend();
  await lobby();
  say("done", {});
} catch (error) {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
