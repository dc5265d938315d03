"""Skill service: TrueSkill ratings and matchmaking over HTTP."""
