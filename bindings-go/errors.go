package plimsoll

// #include "plimsoll.h"
import "C"

import "fmt"

// Code is a status of the C ABI: 0 is OK, 1 to 17 are plimsoll's stable error
// codes (the same numbers in every language), 100 and up are the binding's own.
type Code uint32

// The statuses, taken from plimsoll.h.
const (
	OK                        Code = C.PLIMSOLL_STATUS_OK
	InvalidRequest            Code = C.PLIMSOLL_STATUS_INVALID_REQUEST
	ProtocolMissing           Code = C.PLIMSOLL_STATUS_PROTOCOL_MISSING
	ProtocolMismatch          Code = C.PLIMSOLL_STATUS_PROTOCOL_MISMATCH
	Unauthenticated           Code = C.PLIMSOLL_STATUS_UNAUTHENTICATED
	PermissionDenied          Code = C.PLIMSOLL_STATUS_PERMISSION_DENIED
	Disabled                  Code = C.PLIMSOLL_STATUS_DISABLED
	Unsupported               Code = C.PLIMSOLL_STATUS_UNSUPPORTED
	InsufficientIsolation     Code = C.PLIMSOLL_STATUS_INSUFFICIENT_ISOLATION
	SoftwareMismatch          Code = C.PLIMSOLL_STATUS_SOFTWARE_MISMATCH
	AtCapacity                Code = C.PLIMSOLL_STATUS_AT_CAPACITY
	SessionEnded              Code = C.PLIMSOLL_STATUS_SESSION_ENDED
	Infrastructure            Code = C.PLIMSOLL_STATUS_INFRASTRUCTURE
	Cancelled                 Code = C.PLIMSOLL_STATUS_CANCELLED
	DeadlineExceeded          Code = C.PLIMSOLL_STATUS_DEADLINE_EXCEEDED
	RecordMismatch            Code = C.PLIMSOLL_STATUS_RECORD_MISMATCH
	IsolationEvidenceMismatch Code = C.PLIMSOLL_STATUS_ISOLATION_EVIDENCE_MISMATCH
	Transport                 Code = C.PLIMSOLL_STATUS_TRANSPORT
	NullArgument              Code = C.PLIMSOLL_STATUS_NULL_ARGUMENT
	InvalidUTF8               Code = C.PLIMSOLL_STATUS_INVALID_UTF8
	InvalidArgument           Code = C.PLIMSOLL_STATUS_INVALID_ARGUMENT
	ConfigInvalid             Code = C.PLIMSOLL_STATUS_CONFIG
	Closed                    Code = C.PLIMSOLL_STATUS_CLOSED
	Panic                     Code = C.PLIMSOLL_STATUS_PANIC
)

// String is the snake_case name ("disabled", "null_argument", …), from the library.
func (c Code) String() string {
	return C.GoString(C.plimsoll_status_name(C.uint32_t(c)))
}

// Description is a fixed English description of the status, from the library.
func (c Code) Description() string {
	return C.GoString(C.plimsoll_status_message(C.uint32_t(c)))
}

// Refusal says why nothing ran: the wire's NotDispatchedReason.
type Refusal uint32

// The not-dispatched reasons.
const (
	RefusalRequest     Refusal = 1
	RefusalPermission  Refusal = 2
	RefusalProtocol    Refusal = 3
	RefusalUnsupported Refusal = 4
	RefusalIsolation   Refusal = 5
	RefusalCapacity    Refusal = 6
	RefusalEnvironment Refusal = 7
)

// SessionEnd says why a session ended: the wire's SessionEnd (0 is open).
type SessionEnd uint32

// The session ends.
const (
	SessionOpen             SessionEnd = 0
	SessionClosed           SessionEnd = 1
	SessionExpired          SessionEnd = 2
	SessionDiskExceeded     SessionEnd = 3
	SessionMainProcessEnded SessionEnd = 4
	SessionBoundaryFailed   SessionEnd = 5
	SessionSandboxChanged   SessionEnd = 6
	SessionShutdown         SessionEnd = 7
	SessionReplaced         SessionEnd = 8
	SessionNotFound         SessionEnd = 9
	SessionUnclaimed        SessionEnd = 10
)

// Error is a refusal (nothing ran) or an infrastructure error (the call may
// have run). A guest's non-zero exit is never an Error. Branch on Code or
// with errors.Is against the Err… sentinels, never on the message.
type Error struct {
	code             Code
	message          string
	refusal          Refusal
	sessionEnd       SessionEnd
	unansweredRecord string
}

// Code is the stable status.
func (e *Error) Code() Code { return e.code }

// Message is the human message: it never holds a token, request body, guest
// output or session id.
func (e *Error) Message() string { return e.message }

// NotDispatched says why nothing ran; ok is false when the call may have run,
// so retrying is not automatically safe.
func (e *Error) NotDispatched() (reason Refusal, ok bool) {
	return e.refusal, e.refusal != 0
}

// SessionEnd says why the session ended, for SessionEnded errors.
func (e *Error) SessionEnd() SessionEnd { return e.sessionEnd }

// UnansweredRecord is the run record (JSON) of a session call that may have
// run but failed, or "".
func (e *Error) UnansweredRecord() string { return e.unansweredRecord }

func (e *Error) Error() string {
	return fmt.Sprintf("plimsoll: %s: %s", e.code, e.message)
}

// Is matches another *Error with the same code, so errors.Is(err, ErrDisabled) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.code == e.code
}

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidRequest            = &Error{code: InvalidRequest}
	ErrProtocolMissing           = &Error{code: ProtocolMissing}
	ErrProtocolMismatch          = &Error{code: ProtocolMismatch}
	ErrUnauthenticated           = &Error{code: Unauthenticated}
	ErrPermissionDenied          = &Error{code: PermissionDenied}
	ErrDisabled                  = &Error{code: Disabled}
	ErrUnsupported               = &Error{code: Unsupported}
	ErrInsufficientIsolation     = &Error{code: InsufficientIsolation}
	ErrSoftwareMismatch          = &Error{code: SoftwareMismatch}
	ErrAtCapacity                = &Error{code: AtCapacity}
	ErrSessionEnded              = &Error{code: SessionEnded}
	ErrInfrastructure            = &Error{code: Infrastructure}
	ErrCancelled                 = &Error{code: Cancelled}
	ErrDeadlineExceeded          = &Error{code: DeadlineExceeded}
	ErrRecordMismatch            = &Error{code: RecordMismatch}
	ErrIsolationEvidenceMismatch = &Error{code: IsolationEvidenceMismatch}
	ErrTransport                 = &Error{code: Transport}
	ErrNullArgument              = &Error{code: NullArgument}
	ErrInvalidUTF8               = &Error{code: InvalidUTF8}
	ErrInvalidArgument           = &Error{code: InvalidArgument}
	ErrConfig                    = &Error{code: ConfigInvalid}
	ErrClosed                    = &Error{code: Closed}
	ErrPanic                     = &Error{code: Panic}
)

// check turns a status and its error object into a Go error, freeing the object.
func check(status C.plimsoll_status, cerr *C.plimsoll_error) error {
	if cerr == nil {
		if status == C.PLIMSOLL_STATUS_OK {
			return nil
		}
		return &Error{code: Code(status), message: Code(status).Description()}
	}
	defer C.plimsoll_error_free(cerr)
	e := &Error{
		code:       Code(C.plimsoll_error_status(cerr)),
		message:    C.GoString(C.plimsoll_error_message(cerr)),
		refusal:    Refusal(C.plimsoll_error_not_dispatched(cerr)),
		sessionEnd: SessionEnd(C.plimsoll_error_session_end(cerr)),
	}
	if rec := C.plimsoll_error_unanswered_record_json(cerr); rec != nil {
		e.unansweredRecord = C.GoString(rec)
	}
	return e
}
