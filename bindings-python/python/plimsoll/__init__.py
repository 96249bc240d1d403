"""plimsoll: run code nobody trusts behind a proven isolation tier.

Two ways in, one surface:

* :class:`Engine` / :class:`AsyncEngine` run plimsoll-core in-process, configured
  like the daemon from a dict of its variables (``{"SANDBOX_PROVIDER": "wasm"}``).
* :class:`Client` / :class:`AsyncClient` drive a plimsolld, making every check the
  published client makes (answer binding, record and chain verification, the floor
  re-checked on the answer).

A non-zero exit is a result, never an exception. Every error is a
:class:`PlimsollError` with a stable ``.code``; ``.not_dispatched`` names why
nothing ran, or is ``None`` when the call may have run.
"""

from ._native import (
    PROTOCOL,
    AsyncClient,
    AsyncEngine,
    AsyncSession,
    AtCapacityError,
    CellResult,
    Chain,
    Client,
    ConfigError,
    DeadlineExceededError,
    DisabledError,
    Engine,
    InfrastructureError,
    InsufficientIsolationError,
    InvalidRequestError,
    IsolationEvidenceMismatchError,
    JavaScriptResult,
    ModuleResult,
    PermissionDeniedError,
    PlimsollError,
    ProjectResult,
    ProtocolMismatchError,
    ProtocolMissingError,
    Record,
    RecordMismatchError,
    RunCancelledError,
    RunResult,
    Session,
    SessionEndedError,
    SessionSummary,
    SoftwareMismatchError,
    Step,
    TransportError,
    UnauthenticatedError,
    UnsupportedError,
    __version__,
    error_codes,
    verify_run,
)
from .types import SoftwareRule

__all__ = [
    "PROTOCOL",
    "AsyncClient",
    "AsyncEngine",
    "AsyncSession",
    "AtCapacityError",
    "CellResult",
    "Chain",
    "Client",
    "ConfigError",
    "DeadlineExceededError",
    "DisabledError",
    "Engine",
    "InfrastructureError",
    "InsufficientIsolationError",
    "InvalidRequestError",
    "IsolationEvidenceMismatchError",
    "JavaScriptResult",
    "ModuleResult",
    "PermissionDeniedError",
    "PlimsollError",
    "ProjectResult",
    "ProtocolMismatchError",
    "ProtocolMissingError",
    "Record",
    "RecordMismatchError",
    "RunCancelledError",
    "RunResult",
    "Session",
    "SessionEndedError",
    "SessionSummary",
    "SoftwareMismatchError",
    "SoftwareRule",
    "Step",
    "TransportError",
    "UnauthenticatedError",
    "UnsupportedError",
    "__version__",
    "error_codes",
    "verify_run",
]
