# Type stubs for the compiled extension plimsoll._native (bindings-python/src).
# Hand-written and committed; CI checks them with `python -m mypy.stubtest
# plimsoll._native` against the built module and `mypy --strict` on
# tests/typing_usage.py.

from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import Any, final

from typing_extensions import Self, disjoint_base

from plimsoll.types import SoftwareRule

__version__: str
PROTOCOL: int

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
    "Step",
    "TransportError",
    "UnauthenticatedError",
    "UnsupportedError",
    "_AsyncRunner",
    "_Runner",
    "__version__",
    "error_codes",
    "error_for_code",
    "verify_run",
]

# ---------------------------------------------------------------- errors

class PlimsollError(Exception):
    """Base of every error plimsoll raises. Branch on `.code`, not the message."""

    code: str
    code_number: int
    not_dispatched: str | None
    message: str
    session_end: str | None
    unanswered: Record | None
    default_code: str

class ConfigError(ValueError):
    """The engine's configuration is impossible (`.variable` names the variable), or its proven tier is below SANDBOX_MIN_ISOLATION."""
    variable: str

class InvalidRequestError(PlimsollError, ValueError):
    """The request is malformed or out of bounds. Nothing ran."""
class ProtocolMissingError(PlimsollError):
    """The request carried no protocol number. Nothing ran."""
class ProtocolMismatchError(PlimsollError):
    """The request or daemon speaks another protocol. Nothing ran."""
class UnauthenticatedError(PlimsollError):
    """No valid credential. Nothing ran."""
class PermissionDeniedError(PlimsollError):
    """The credential lacks the scope, or may not use the grant. Nothing ran."""
class DisabledError(PlimsollError):
    """The provider is disabled: nothing runs here."""
class UnsupportedError(PlimsollError):
    """The provider cannot run this kind of request. Nothing ran."""
class InsufficientIsolationError(PlimsollError):
    """The proven tier is below the caller's floor. Nothing ran."""
class SoftwareMismatchError(PlimsollError):
    """The provider's software is outside the caller's rule. Nothing ran."""
class AtCapacityError(PlimsollError):
    """Every run slot is busy, or a rate limit was hit. Nothing ran; retry later."""
class SessionEndedError(PlimsollError):
    """The session has ended (`.session_end` says why). Nothing ran."""
class InfrastructureError(PlimsollError):
    """Something around the run broke. The call may have run."""
class RunCancelledError(PlimsollError):
    """The run was cancelled. The call may have run."""
class DeadlineExceededError(PlimsollError, TimeoutError):
    """The request's overall deadline passed. The call may have run."""
class RecordMismatchError(PlimsollError):
    """A record or chain failed verification. The call may have run."""
class IsolationEvidenceMismatchError(PlimsollError):
    """The answer's tier does not meet the floor sent. The call may have run."""
class TransportError(PlimsollError):
    """The answer could not be read or was not bound to the request. The call may have run."""

def error_codes() -> list[tuple[str, int]]:
    """Every code as `(name, number)`, in number order."""
def error_for_code(code: str, message: str) -> PlimsollError:
    """The exception a core error with `code` and `message` becomes (for tests and tools)."""

# ---------------------------------------------------------------- results

@final
class Record:
    """A run record (version 4): digests of what was asked and what came back, the evidence, the times, and in a session the chain. It is not a signature."""

    @property
    def version(self) -> int:
        """Record version (4)."""
    @property
    def request_sha256(self) -> str:
        """Digest of the request as sent."""
    @property
    def result_sha256(self) -> str:
        """Digest of the result; empty on an unanswered record."""
    @property
    def provider(self) -> str:
        """The provider."""
    @property
    def isolation(self) -> str:
        """The tier that ran."""
    @property
    def environment(self) -> str:
        """The content-addressed environment, or empty."""
    @property
    def policy(self) -> str:
        """The provider's policy digest, then `;wall=sha256:…` (the wall identity: the digest of every part that holds the wall up), then `;accepted=CVE-…` when the operator accepted advisories that apply, then `;sandbox=warm-pool` for a pooled sandbox; empty for the disabled provider."""
    @property
    def started_unix_ms(self) -> int:
        """Start, Unix ms."""
    @property
    def ended_unix_ms(self) -> int:
        """End, Unix ms."""
    @property
    def session(self) -> str:
        """The session fingerprint, or empty."""
    @property
    def sequence(self) -> int:
        """The call's place in its session (1-based), 0 for a single run."""
    @property
    def previous_sha256(self) -> str:
        """The previous call's record digest, or empty."""
    @property
    def record_sha256(self) -> str:
        """This record's digest."""
    @property
    def software_identity(self) -> str:
        """The software that ran."""
    @property
    def software_rule_id(self) -> str:
        """The id of the caller's software rule, or empty."""
    @property
    def unanswered(self) -> str:
        """On an unanswered session call: the error's Connect code."""
    @property
    def instance(self) -> str:
        """The daemon instance reference."""

@disjoint_base
class RunResult:
    """Whatever ran: evidence, record, and the exact wire JSON of the request sent and the answer received."""

    @property
    def kind(self) -> str:
        """`javascript`, `project`, `module` or `cell`."""
    @property
    def sandbox(self) -> str:
        """The provider that ran it."""
    @property
    def isolation(self) -> str:
        """The tier that ran it: configuration plus startup proof, never attestation."""
    @property
    def environment(self) -> str:
        """The content-addressed environment, or empty."""
    @property
    def software_identity(self) -> str:
        """The software identity, or empty."""
    @property
    def instance(self) -> str:
        """The instance reference."""
    @property
    def duration_ms(self) -> int:
        """Wall time, ms (not digested)."""
    @property
    def record(self) -> Record | None:
        """The run record."""
    @property
    def record_json(self) -> str | None:
        """The run record as plimsoll.v1 JSON."""
    @property
    def phases_json(self) -> str | None:
        """Where its time went, as JSON: `{\"source\":\"fresh\",\"phases\":[{\"phase\":\"admitted\",\"ms\":0.04},…]}`, monotonic milliseconds per phase (admitted, acquired, started, running, collected, cleaned_up) and where the sandbox came from (`fresh`, `snippet_pool`, `session_pool`, `session`); absent when the answer does not say."""
    @property
    def session_end(self) -> str | None:
        """For a session call: why the session ended during or after it."""
    @property
    def request_json(self) -> str:
        """The request as sent, in plimsoll.v1 JSON (for verify_run and Chain)."""
    @property
    def response_json(self) -> str:
        """The answer, in plimsoll.v1 JSON."""

@final
class JavaScriptResult(RunResult):
    """What a JavaScript snippet did. A non-zero exit is a result, not an error."""

    @property
    def stdout(self) -> bytes:
        """Standard output as kept."""
    @property
    def stderr(self) -> bytes:
        """Standard error as kept."""
    @property
    def exit_code(self) -> int:
        """The exit code; 124 when the deadline ended it."""
    @property
    def timed_out(self) -> bool:
        """The deadline ended it."""
    @property
    def stdout_truncated(self) -> bool:
        """Standard output was cut at the cap."""
    @property
    def stderr_truncated(self) -> bool:
        """Standard error was cut at the cap."""

@final
class CellResult(RunResult):
    """What a notebook cell did."""

    @property
    def stdout(self) -> bytes:
        """Standard output (the last expression's value is printed here)."""
    @property
    def stderr(self) -> bytes:
        """Standard error."""
    @property
    def exit_code(self) -> int:
        """0 ran, 1 raised, 124 deadline."""
    @property
    def timed_out(self) -> bool:
        """The deadline ended it (and its interpreter)."""
    @property
    def stdout_truncated(self) -> bool:
        """Standard output was cut at the cap."""
    @property
    def stderr_truncated(self) -> bool:
        """Standard error was cut at the cap."""
    @property
    def interpreter_started(self) -> bool:
        """The call began with a fresh interpreter: nothing defined earlier exists."""
    @property
    def interpreter_ended(self) -> bool:
        """The interpreter ended during or after this call."""

@final
class Step:
    """One project step that ran."""

    @property
    def command(self) -> str:
        """The command as sent."""
    @property
    def stdout(self) -> bytes:
        """Standard output as kept."""
    @property
    def stderr(self) -> bytes:
        """Standard error as kept."""
    @property
    def exit_code(self) -> int:
        """The exit code; 124 on a deadline."""
    @property
    def timed_out(self) -> bool:
        """A deadline ended it."""
    @property
    def duration_ms(self) -> int:
        """Wall time, ms."""
    @property
    def stdout_truncated(self) -> bool:
        """Standard output was cut at the cap."""
    @property
    def stderr_truncated(self) -> bool:
        """Standard error was cut at the cap."""

@final
class ProjectResult(RunResult):
    """What a project did."""

    @property
    def outcome(self) -> str:
        """How the run concluded: `completed`, `setup_failed`, `timed_out`, `protocol_error`, `runner_failed`."""
    @property
    def outcome_detail(self) -> str:
        """Human context for the outcome."""
    @property
    def steps(self) -> list[Step]:
        """One per step that ran."""
    @property
    def artifacts(self) -> list[tuple[str, bytes]]:
        """Collected artifacts, in the order returned."""
    @property
    def artifacts_truncated(self) -> bool:
        """Some artifacts were dropped at the cap."""

@final
class ModuleResult(RunResult):
    """What a module run did."""

    @property
    def outcome(self) -> str:
        """How the run concluded."""
    @property
    def outcome_detail(self) -> str:
        """Human context."""
    @property
    def width(self) -> int:
        """Output width."""
    @property
    def runs(self) -> list[tuple[int, list[float]]]:
        """One per row."""
    @property
    def stdout(self) -> bytes:
        """Standard output."""
    @property
    def stderr(self) -> bytes:
        """Standard error."""

@final
class SessionSummary:
    """A closed session's summary, as the core checked it."""

    @property
    def session(self) -> str:
        """The session fingerprint."""
    @property
    def calls(self) -> int:
        """Calls executed."""
    @property
    def last_record_sha256(self) -> str:
        """The last record's digest, or empty."""
    @property
    def ended(self) -> str:
        """`closed`, or the earlier end."""

# ---------------------------------------------------------------- verification

def verify_run(request_json: str | bytes, response_json: str | bytes) -> Record:
    """Checks a single run's answer against the request sent (the core's
    `verify::check_single`); returns its record. Raises `RecordMismatchError`,
    `IsolationEvidenceMismatchError`, or `TransportError` for unreadable JSON.
    """
@final
class Chain:
    """A session's chain as a client has seen it (the core's `verify::Chain`):
    every call must name the session, continue the sequence and name the
    previous record.
    """
    def __new__(cls, fingerprint: str) -> Self: ...
    @property
    def fingerprint(self) -> str:
        """The session fingerprint."""
    @property
    def calls(self) -> int:
        """Calls seen so far."""
    @property
    def last(self) -> str:
        """The last record digest seen, or empty."""
    def check_call(self, request_json: str | bytes, response_json: str | bytes) -> Record:
        """Checks an answered session call and, only if it holds, advances the chain."""
    def check_close(self, session: str, calls: int, last_record_sha256: str) -> None:
        """Checks a close summary against the chain seen."""

# ---------------------------------------------------------------- synchronous

@disjoint_base
class _Runner:
    def describe(self) -> dict[str, Any]: ...
    def run_javascript(
        self,
        code: str,
        *,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> JavaScriptResult: ...
    def run_project(
        self,
        files: Mapping[str, str] | None,
        steps: Sequence[str],
        *,
        artifacts: Sequence[str] = ...,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> ProjectResult: ...
    def run_json(self, request: str | bytes) -> RunResult: ...
    def open_session(
        self,
        *,
        minimum_isolation: str = "",
        software_rule: SoftwareRule | None = None,
        lifetime_ms: int = 0,
        idle_timeout_ms: int = 0,
        languages: Sequence[str] = ...,
    ) -> Session: ...
    def close(self) -> None: ...

@final
class Engine(_Runner):
    """The embedded engine, configured like the daemon from a dict of its variables
    (`{"SANDBOX_PROVIDER": "wasm"}`); with none, the disabled provider refuses every run.
    Starting runs the provider's startup proof; calls block with the GIL released.
    """
    def __new__(cls, env: Mapping[str, str] | None = None) -> Self: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> bool: ...

@final
class Client(_Runner):
    """A client for plimsolld making every check the published client makes: answer
    binding, record verification, the floor re-checked on the answer, session chains.
    """
    def __new__(
        cls,
        base_url: str,
        *,
        token: str | None = None,
        insecure_http: bool = False,
        timeout: float | None = None,
    ) -> Self: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> bool: ...

@final
class Session:
    """A session of an `Engine` or a `Client`: one sandbox for many calls, one at a time."""
    @property
    def fingerprint(self) -> str:
        """The session fingerprint (the SHA-256 of its id, which every record carries)."""
    @property
    def isolation(self) -> str:
        """The tier measured at open."""
    def run_javascript(
        self,
        code: str,
        *,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> JavaScriptResult:
        """Runs a JavaScript snippet in the session."""
    def run_cell(
        self,
        language: str,
        code: str,
        *,
        files: Mapping[str, str] | None = None,
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> CellResult:
        """Runs a notebook cell (`javascript` or `python`) in the session's kept interpreter."""
    def run_project(
        self,
        files: Mapping[str, str] | None,
        steps: Sequence[str],
        *,
        artifacts: Sequence[str] = ...,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> ProjectResult:
        """Runs a project in the session's work directory."""
    def run_json(self, request: str | bytes) -> RunResult:
        """Runs a call given in its plimsoll.v1 JSON form (the session id is added)."""
    def close(self) -> SessionSummary:
        """Closes the session and returns its summary. A second close raises `SessionEndedError`."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> bool: ...

# ---------------------------------------------------------------- asyncio

@disjoint_base
class _AsyncRunner:
    def describe(self) -> Awaitable[dict[str, Any]]: ...
    def run_javascript(
        self,
        code: str,
        *,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> Awaitable[JavaScriptResult]: ...
    def run_project(
        self,
        files: Mapping[str, str] | None,
        steps: Sequence[str],
        *,
        artifacts: Sequence[str] = ...,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> Awaitable[ProjectResult]: ...
    def run_json(self, request: str | bytes) -> Awaitable[RunResult]: ...
    def open_session(
        self,
        *,
        minimum_isolation: str = "",
        software_rule: SoftwareRule | None = None,
        lifetime_ms: int = 0,
        idle_timeout_ms: int = 0,
        languages: Sequence[str] = ...,
    ) -> Awaitable[AsyncSession]: ...
    def close(self) -> Awaitable[None]: ...

@final
class AsyncEngine(_AsyncRunner):
    """`Engine` for asyncio: every call returns an awaitable; cancelling it cancels the run."""
    def __new__(cls, env: Mapping[str, str] | None = None) -> Self: ...
    @staticmethod
    def start(env: Mapping[str, str] | None = None) -> Awaitable[AsyncEngine]:
        """staticmethod(function) -> method

        Convert a function to be a static method.

        A static method does not receive an implicit first argument.
        To declare a static method, use this idiom:

             class C:
                 @staticmethod
                 def f(arg1, arg2, argN):
                     ...

        It can be called either on the class (e.g. C.f()) or on an instance
        (e.g. C().f()). Both the class and the instance are ignored, and
        neither is passed implicitly as the first argument to the method.

        Static methods in Python are similar to those found in Java or C++.
        For a more advanced concept, see the classmethod builtin.
        """
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]: ...

@final
class AsyncClient(_AsyncRunner):
    """`Client` for asyncio."""
    def __new__(
        cls,
        base_url: str,
        *,
        token: str | None = None,
        insecure_http: bool = False,
        timeout: float | None = None,
    ) -> Self: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]: ...

@final
class AsyncSession:
    """A session of an `AsyncEngine` or an `AsyncClient`."""
    @property
    def fingerprint(self) -> str:
        """The session fingerprint (the SHA-256 of its id, which every record carries)."""
    @property
    def isolation(self) -> str:
        """The tier measured at open."""
    def run_javascript(
        self,
        code: str,
        *,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> Awaitable[JavaScriptResult]:
        """Runs a JavaScript snippet in the session."""
    def run_cell(
        self,
        language: str,
        code: str,
        *,
        files: Mapping[str, str] | None = None,
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> Awaitable[CellResult]:
        """Runs a notebook cell (`javascript` or `python`) in the session's kept interpreter."""
    def run_project(
        self,
        files: Mapping[str, str] | None,
        steps: Sequence[str],
        *,
        artifacts: Sequence[str] = ...,
        grant_profile: str = "",
        minimum_isolation: str = "",
        timeout_ms: int = 0,
        software_rule: SoftwareRule | None = None,
        trace_id: str = "",
    ) -> Awaitable[ProjectResult]:
        """Runs a project in the session's work directory."""
    def run_json(self, request: str | bytes) -> Awaitable[RunResult]:
        """Runs a call given in its plimsoll.v1 JSON form (the session id is added)."""
    def close(self) -> Awaitable[SessionSummary]:
        """Closes the session and returns its summary. A second close raises `SessionEndedError`."""
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]: ...
