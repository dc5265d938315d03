"""The errors the rating core raises for bad input."""

from __future__ import annotations


class RatingInputError(ValueError):
    """Input the rating engine cannot rate; the message says what is wrong."""


class RatingTypeError(RatingInputError, TypeError):
    """Input of the wrong kind where the trueskill package raises TypeError (a rating given
    as a team, teams of mixed kinds, a Gaussian without a sigma). It is a RatingInputError,
    and so a ValueError, too: code written for either package catches it."""


# Every path that rates a tie refuses it with this when the draw margin is 0.
TIE_WITHOUT_DRAWS = "a tie cannot be rated when draw_probability is 0"
