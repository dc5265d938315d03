"""A write is answered only after its transaction committed: a commit that fails is never a 2xx."""

from __future__ import annotations

import httpx

from tests import ddl

Headers = dict[str, str]

# A deferred constraint trigger fails at COMMIT, after the handler has finished.
_TRIGGER = """
CREATE OR REPLACE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'refused at commit' USING ERRCODE = 'serialization_failure';
END $$;
DROP TRIGGER IF EXISTS fail_at_commit ON matches;
CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON matches DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.match_id LIKE 'commit-fails-%') EXECUTE FUNCTION fail_at_commit();
"""


async def test_a_commit_that_fails_is_503_and_leaves_nothing(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    ddl.run(database_url, _TRIGGER)
    try:
        body = {
            "match_id": f"commit-fails-{mode}",
            "mode": mode,
            "teams": [{"players": [{"id": "cf1"}], "rank": 0}, {"players": [{"id": "cf2"}], "rank": 1}],
        }
        response = await client.post("/v1/matches", json=body, headers=admin_headers)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"]
        assert (
            await client.get(f"/v1/matches/commit-fails-{mode}", headers=admin_headers)
        ).status_code == 404
        assert (await client.get("/v1/players/cf1", headers=admin_headers)).status_code == 404
    finally:
        ddl.run(database_url, "DROP TRIGGER IF EXISTS fail_at_commit ON matches")
