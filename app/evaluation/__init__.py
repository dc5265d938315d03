"""Offline evaluations of the rating models on real and synthetic histories (not served)."""
