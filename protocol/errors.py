"""The one domain exception of the bundle.

Library code raises :class:`BundleError` with a single line that says what is wrong,
where, and what to do. The CLI prints that line and exits non-zero, without a traceback.
"""


class BundleError(Exception):
    """A user-facing failure: one line, no traceback.

    Args:
        message: what is wrong, where, and what to do (one line).
        exit_code: process exit status the CLI uses (default 2).
    """

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
