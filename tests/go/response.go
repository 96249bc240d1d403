package plimsoll

// #include "plimsoll.h"
import "C"

import "unsafe"

// Step is one project step that ran.
type Step struct {
	Command         string
	Stdout, Stderr  []byte
	ExitCode        int32
	TimedOut        bool
	Duration        int64 // ms
	StdoutTruncated bool
	StderrTruncated bool
}

// Artifact is a file collected after a project.
type Artifact struct {
	Path    string
	Content []byte
}

// Response is a run's verified answer: where and behind what it ran, what it
// did, and its run record. Stdout, Stderr, ExitCode and the flags are the
// snippet's, the cell's, or a project's last step's.
type Response struct {
	Kind               string // "javascript", "project", "module" or "cell"
	Sandbox            string // the provider that ran it
	Isolation          string // the tier: configuration plus startup proof, never attestation
	SoftwareIdentity   string
	DurationMs         int64
	Stdout, Stderr     []byte
	ExitCode           int32
	TimedOut           bool
	StdoutTruncated    bool
	StderrTruncated    bool
	InterpreterStarted bool
	InterpreterEnded   bool
	Outcome            uint32 // projects and modules: 1 completed, 2 setup failed, 3 timed out, 4 protocol error, 5 runner failed
	OutcomeName        string
	OutcomeDetail      string
	Steps              []Step
	Artifacts          []Artifact
	ArtifactsTruncated bool
	SessionEnded       SessionEnd // a session call: the session's end, if it ended
	RecordJSON         string     // the run record
	RecordSHA256       string
	Sequence           uint64 // the call's place in its session's chain; 0 for a single run
	JSON               string // the wire's RunResponse
	RequestJSON        string // the request as sent and digested
}

func goBytes(s C.plimsoll_slice) []byte {
	if s.len == 0 {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(s.data), C.int(s.len))
}

// readResponse copies a C response into Go memory and frees it.
func readResponse(r *C.plimsoll_response) *Response {
	defer C.plimsoll_response_free(r)
	out := &Response{
		Kind:               C.GoString(C.plimsoll_response_kind(r)),
		Sandbox:            C.GoString(C.plimsoll_response_sandbox(r)),
		Isolation:          C.GoString(C.plimsoll_response_isolation(r)),
		SoftwareIdentity:   C.GoString(C.plimsoll_response_software_identity(r)),
		DurationMs:         int64(C.plimsoll_response_duration_ms(r)),
		Stdout:             goBytes(C.plimsoll_response_stdout(r)),
		Stderr:             goBytes(C.plimsoll_response_stderr(r)),
		ExitCode:           int32(C.plimsoll_response_exit_code(r)),
		TimedOut:           bool(C.plimsoll_response_timed_out(r)),
		StdoutTruncated:    bool(C.plimsoll_response_stdout_truncated(r)),
		StderrTruncated:    bool(C.plimsoll_response_stderr_truncated(r)),
		InterpreterStarted: bool(C.plimsoll_response_interpreter_started(r)),
		InterpreterEnded:   bool(C.plimsoll_response_interpreter_ended(r)),
		Outcome:            uint32(C.plimsoll_response_outcome(r)),
		OutcomeName:        C.GoString(C.plimsoll_response_outcome_name(r)),
		OutcomeDetail:      C.GoString(C.plimsoll_response_outcome_detail(r)),
		ArtifactsTruncated: bool(C.plimsoll_response_artifacts_truncated(r)),
		SessionEnded:       SessionEnd(C.plimsoll_response_session_ended(r)),
		RecordSHA256:       C.GoString(C.plimsoll_response_record_sha256(r)),
		Sequence:           uint64(C.plimsoll_response_record_sequence(r)),
		JSON:               C.GoString(C.plimsoll_response_json(r)),
		RequestJSON:        C.GoString(C.plimsoll_response_request_json(r)),
	}
	if rec := C.plimsoll_response_record_json(r); rec != nil {
		out.RecordJSON = C.GoString(rec)
	}
	for i := C.size_t(0); i < C.plimsoll_response_step_count(r); i++ {
		out.Steps = append(out.Steps, Step{
			Command:         C.GoString(C.plimsoll_response_step_command(r, i)),
			Stdout:          goBytes(C.plimsoll_response_step_stdout(r, i)),
			Stderr:          goBytes(C.plimsoll_response_step_stderr(r, i)),
			ExitCode:        int32(C.plimsoll_response_step_exit_code(r, i)),
			TimedOut:        bool(C.plimsoll_response_step_timed_out(r, i)),
			Duration:        int64(C.plimsoll_response_step_duration_ms(r, i)),
			StdoutTruncated: bool(C.plimsoll_response_step_stdout_truncated(r, i)),
			StderrTruncated: bool(C.plimsoll_response_step_stderr_truncated(r, i)),
		})
	}
	for i := C.size_t(0); i < C.plimsoll_response_artifact_count(r); i++ {
		out.Artifacts = append(out.Artifacts, Artifact{
			Path:    C.GoString(C.plimsoll_response_artifact_path(r, i)),
			Content: goBytes(C.plimsoll_response_artifact_content(r, i)),
		})
	}
	return out
}

// Verify checks the response's record against the request it answered again
// (it was checked once before Run returned); see VerifyRecord.
func (r *Response) Verify() error { return VerifyRecord(r.RequestJSON, r.JSON) }
