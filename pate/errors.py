"""The one error a user sees as a single line: a mistake in the config or the data, or a refusal that protects the
privacy of the data (a damaged secret release, a dataset's budget spent). train.py prints its message, no
traceback, and exits ``EXIT_USER_ERROR``. Defined here, below every other module, so that the cache and the budget
ledger raise it as the pipeline's checks do (``pate.pipeline.checks`` re-exports it)."""

EXIT_USER_ERROR = 2  # the exit status of a run ended by a UserError, wherever it is caught


class UserError(ValueError):
    """A mistake in the config or the data, or a refusal that protects the data: train.py prints its one-line
    message, no traceback, and exits ``EXIT_USER_ERROR``."""


__all__ = ["EXIT_USER_ERROR", "UserError"]
