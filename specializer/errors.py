"""The one exception type the CLI turns into a single line on stderr."""


class UserError(Exception):
    """Bad input or a missing tool: reported as one plain line, non-zero exit, no traceback."""
