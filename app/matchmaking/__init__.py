"""Pure matchmaking algorithms (team balancing, candidate matches); no Redis here."""
