"""The one error the rating core raises for bad input."""

from __future__ import annotations


class RatingInputError(ValueError):
    """Input the rating engine cannot rate; the message says what is wrong."""


# Every path that rates a tie refuses it with this when the draw margin is 0.
TIE_WITHOUT_DRAWS = "a tie cannot be rated when draw_probability is 0"
