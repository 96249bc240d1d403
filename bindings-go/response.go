package plimsoll

// #include <stdlib.h>
// #include "plimsoll.h"
import "C"

import (
	"fmt"
	"unsafe"
)

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
// snippet's, the cell's, the module's, or a project's last step's. Every
// field is read through plimsoll_response_get by the core's field names
// (docs/fields.md).
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
	Outcome            string // projects and modules: completed, setup_failed, timed_out, protocol_error, runner_failed
	OutcomeDetail      string
	Steps              []Step
	Artifacts          []Artifact
	ArtifactsTruncated bool
	SessionEnd         string // a session call: why the session ended, if it did ("" while open)
	RecordJSON         string // the run record
	PhasesJSON         string // where its time went: {"source":…,"phases":[{"phase":"admitted","ms":…},…]}, or ""
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

// fields reads one answer's fields by path; a path its kind lacks reads as
// the zero value (ok false).
type fields struct{ r *C.plimsoll_response }

func (f fields) get(path string) (C.plimsoll_value, bool) {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	var v C.plimsoll_value
	ok := C.plimsoll_response_get(f.r, p, &v, nil) == C.PLIMSOLL_STATUS_OK
	return v, ok
}

func (f fields) text(path string) string {
	if v, ok := f.get(path); ok && v.kind == C.PLIMSOLL_VALUE_KIND_TEXT {
		return C.GoString(v.text)
	}
	return ""
}

func (f fields) bytes(path string) []byte {
	if v, ok := f.get(path); ok && v.kind == C.PLIMSOLL_VALUE_KIND_BYTES {
		return goBytes(v.bytes)
	}
	return []byte{}
}

func (f fields) int(path string) int64 {
	v, ok := f.get(path)
	switch {
	case ok && v.kind == C.PLIMSOLL_VALUE_KIND_INTEGER:
		return int64(v.integer)
	case ok && v.kind == C.PLIMSOLL_VALUE_KIND_LIST:
		return int64(v.count)
	}
	return 0
}

func (f fields) flag(path string) bool {
	v, ok := f.get(path)
	return ok && v.kind == C.PLIMSOLL_VALUE_KIND_FLAG && bool(v.flag)
}

// readResponse copies a C response into Go memory and frees it.
func readResponse(r *C.plimsoll_response) *Response {
	defer C.plimsoll_response_free(r)
	f := fields{r}
	out := &Response{
		Kind:               f.text("kind"),
		Sandbox:            f.text("sandbox"),
		Isolation:          f.text("isolation"),
		SoftwareIdentity:   f.text("software_identity"),
		DurationMs:         f.int("duration_ms"),
		Outcome:            f.text("outcome"),
		OutcomeDetail:      f.text("outcome_detail"),
		ArtifactsTruncated: f.flag("artifacts_truncated"),
		SessionEnd:         f.text("session_end"),
		RecordJSON:         f.text("record_json"),
		PhasesJSON:         f.text("phases_json"),
		RecordSHA256:       f.text("record.record_sha256"),
		Sequence:           uint64(f.int("record.sequence")),
		JSON:               f.text("response_json"),
		RequestJSON:        f.text("request_json"),
	}
	for i := int64(0); i < f.int("steps"); i++ {
		p := fmt.Sprintf("steps.%d.", i)
		out.Steps = append(out.Steps, Step{
			Command:         f.text(p + "command"),
			Stdout:          f.bytes(p + "stdout"),
			Stderr:          f.bytes(p + "stderr"),
			ExitCode:        int32(f.int(p + "exit_code")),
			TimedOut:        f.flag(p + "timed_out"),
			Duration:        f.int(p + "duration_ms"),
			StdoutTruncated: f.flag(p + "stdout_truncated"),
			StderrTruncated: f.flag(p + "stderr_truncated"),
		})
	}
	for i := int64(0); i < f.int("artifacts"); i++ {
		p := fmt.Sprintf("artifacts.%d.", i)
		out.Artifacts = append(out.Artifacts, Artifact{Path: f.text(p + "path"), Content: f.bytes(p + "content")})
	}
	// The streams: the kind's own, or a project's last step's.
	stream := ""
	if n := len(out.Steps); n > 0 {
		stream = fmt.Sprintf("steps.%d.", n-1)
	}
	out.Stdout, out.Stderr = f.bytes(stream+"stdout"), f.bytes(stream+"stderr")
	out.ExitCode = int32(f.int(stream + "exit_code"))
	out.TimedOut = f.flag(stream+"timed_out") || out.Outcome == "timed_out"
	out.StdoutTruncated, out.StderrTruncated = f.flag(stream+"stdout_truncated"), f.flag(stream+"stderr_truncated")
	out.InterpreterStarted, out.InterpreterEnded = f.flag("interpreter_started"), f.flag("interpreter_ended")
	return out
}

// Verify checks the response's record against the request it answered again
// (it was checked once before Run returned); see VerifyRecord.
func (r *Response) Verify() error { return VerifyRecord(r.RequestJSON, r.JSON) }
