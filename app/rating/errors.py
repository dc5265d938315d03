"""The one error the rating core raises for bad input."""

from __future__ import annotations


class RatingInputError(ValueError):
    """Input the rating engine cannot rate; the message says what is wrong."""
