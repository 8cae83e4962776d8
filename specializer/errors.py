"""The one exception type the CLI turns into a single line on stderr."""


class UserError(Exception):
    """Bad input or a missing tool: reported as one plain line, non-zero exit, no traceback."""

    def __reduce__(self):
        # any subclass (qemu.Hang(seconds), ...) crosses a process boundary whole, whatever its
        # __init__ takes: a build run beside others hands its error back pickled (parallel.py)
        return _remade, (type(self), self.args, self.__dict__)


def _remade(cls, args: tuple, state: dict) -> UserError:
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e
