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
    variable: str

class InvalidRequestError(PlimsollError, ValueError): ...
class ProtocolMissingError(PlimsollError): ...
class ProtocolMismatchError(PlimsollError): ...
class UnauthenticatedError(PlimsollError): ...
class PermissionDeniedError(PlimsollError): ...
class DisabledError(PlimsollError): ...
class UnsupportedError(PlimsollError): ...
class InsufficientIsolationError(PlimsollError): ...
class SoftwareMismatchError(PlimsollError): ...
class AtCapacityError(PlimsollError): ...
class SessionEndedError(PlimsollError): ...
class InfrastructureError(PlimsollError): ...
class RunCancelledError(PlimsollError): ...
class DeadlineExceededError(PlimsollError, TimeoutError): ...
class RecordMismatchError(PlimsollError): ...
class IsolationEvidenceMismatchError(PlimsollError): ...
class TransportError(PlimsollError): ...

def error_codes() -> list[tuple[str, int]]: ...
def error_for_code(code: str, message: str) -> PlimsollError: ...

# ---------------------------------------------------------------- results

@final
class Record:
    @property
    def version(self) -> int: ...
    @property
    def request_sha256(self) -> str: ...
    @property
    def result_sha256(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def isolation(self) -> str: ...
    @property
    def environment(self) -> str: ...
    @property
    def policy(self) -> str: ...
    @property
    def started_unix_ms(self) -> int: ...
    @property
    def ended_unix_ms(self) -> int: ...
    @property
    def session(self) -> str: ...
    @property
    def sequence(self) -> int: ...
    @property
    def previous_sha256(self) -> str: ...
    @property
    def record_sha256(self) -> str: ...
    @property
    def software_identity(self) -> str: ...
    @property
    def software_rule_id(self) -> str: ...
    @property
    def unanswered(self) -> str: ...
    @property
    def instance(self) -> str: ...

@disjoint_base
class RunResult:
    @property
    def kind(self) -> str: ...
    @property
    def sandbox(self) -> str: ...
    @property
    def isolation(self) -> str: ...
    @property
    def environment(self) -> str: ...
    @property
    def software_identity(self) -> str: ...
    @property
    def instance(self) -> str: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def record(self) -> Record | None: ...
    @property
    def record_json(self) -> str | None: ...
    @property
    def session_end(self) -> str | None: ...
    @property
    def request_json(self) -> str: ...
    @property
    def response_json(self) -> str: ...

@final
class JavaScriptResult(RunResult):
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def stdout_truncated(self) -> bool: ...
    @property
    def stderr_truncated(self) -> bool: ...

@final
class CellResult(RunResult):
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def stdout_truncated(self) -> bool: ...
    @property
    def stderr_truncated(self) -> bool: ...
    @property
    def interpreter_started(self) -> bool: ...
    @property
    def interpreter_ended(self) -> bool: ...

@final
class Step:
    @property
    def command(self) -> str: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def stdout_truncated(self) -> bool: ...
    @property
    def stderr_truncated(self) -> bool: ...

@final
class ProjectResult(RunResult):
    @property
    def outcome(self) -> str: ...
    @property
    def outcome_detail(self) -> str: ...
    @property
    def steps(self) -> list[Step]: ...
    @property
    def artifacts(self) -> list[tuple[str, bytes]]: ...
    @property
    def artifacts_truncated(self) -> bool: ...

@final
class ModuleResult(RunResult):
    @property
    def outcome(self) -> str: ...
    @property
    def outcome_detail(self) -> str: ...
    @property
    def width(self) -> int: ...
    @property
    def runs(self) -> list[tuple[int, list[float]]]: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...

@final
class SessionSummary:
    @property
    def session(self) -> str: ...
    @property
    def calls(self) -> int: ...
    @property
    def last_record_sha256(self) -> str: ...
    @property
    def ended(self) -> str: ...

# ---------------------------------------------------------------- verification

def verify_run(request_json: str | bytes, response_json: str | bytes) -> Record: ...
@final
class Chain:
    def __new__(cls, fingerprint: str) -> Self: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def calls(self) -> int: ...
    @property
    def last(self) -> str: ...
    def check_call(self, request_json: str | bytes, response_json: str | bytes) -> Record: ...
    def check_close(self, session: str, calls: int, last_record_sha256: str) -> None: ...

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
    def __new__(cls, env: Mapping[str, str] | None = None) -> Self: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> bool: ...

@final
class Client(_Runner):
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
    @property
    def fingerprint(self) -> str: ...
    @property
    def isolation(self) -> str: ...
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
    ) -> CellResult: ...
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
    def close(self) -> SessionSummary: ...
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
    def __new__(cls, env: Mapping[str, str] | None = None) -> Self: ...
    @staticmethod
    def start(env: Mapping[str, str] | None = None) -> Awaitable[AsyncEngine]: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]: ...

@final
class AsyncClient(_AsyncRunner):
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
    @property
    def fingerprint(self) -> str: ...
    @property
    def isolation(self) -> str: ...
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
    ) -> Awaitable[CellResult]: ...
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
    def close(self) -> Awaitable[SessionSummary]: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]: ...
