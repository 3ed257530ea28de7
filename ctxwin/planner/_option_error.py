"""``OptionError``: a ``FitConfig`` option's value refused, naming the option (the CLI names its flag)."""

from __future__ import annotations

from ctxwin._errors import InvalidInputError


class OptionError(InvalidInputError):
    """A ``FitConfig`` option's value is refused; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option

    def __reduce__(self) -> tuple[type[OptionError], tuple[str, str]]:
        return OptionError, (self.option, str(self))
