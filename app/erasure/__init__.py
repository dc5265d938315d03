"""Erasing a player on request (GDPR art. 17): removal and one pseudonym everywhere."""
