"""The project's input-error types (no dependencies): input a node or a command line rejects, with one line that
names the field and its allowed range, and then keeps serving (``nodes._common.ThinNode.guard`` catches only
these; any other exception is a bug and keeps its traceback)."""


class InputError(ValueError):
    """Input a node rejects and keeps serving (one rate-limited log line, counted on /diagnostics, no
    traceback): the base of the project's input-error types (``ThinNode.guard`` catches only these)."""


class InvalidMessage(InputError):
    """A message field outside its allowed range; ``str(exc)`` names the field and the range."""


class OversizeMessage(InvalidMessage):
    """A serialized message larger than its subscription decodes: counted apart, under ``<topic> (oversize)``
    (someone sends huge messages: a different fault from a bad field)."""


class CannotServe(InputError):
    """A valid message the node cannot act on now (e.g. the servo bus is not open, an emergency stop)."""
