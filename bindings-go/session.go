package plimsoll

// #include "plimsoll.h"
import "C"

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
)

// SessionOptions are OpenSession's settings; zero values take the daemon's.
type SessionOptions struct {
	MinimumIsolation string        `json:"minimumIsolation,omitempty"`
	SoftwareRule     *SoftwareRule `json:"-"`
	LifetimeMs       uint32        `json:"lifetimeMs,omitempty"`
	IdleTimeoutMs    uint32        `json:"idleTimeoutMs,omitempty"`
	Languages        []string      `json:"languages,omitempty"`
}

func (o SessionOptions) json() (string, error) {
	type rule struct {
		Mode       string   `json:"mode,omitempty"`
		Identities []string `json:"identities,omitempty"`
	}
	wire := struct {
		SessionOptions
		Rule *rule `json:"softwareRule,omitempty"`
	}{SessionOptions: o}
	if o.SoftwareRule != nil {
		wire.Rule = &rule{Mode: o.SoftwareRule.Mode, Identities: o.SoftwareRule.Identities}
	}
	b, err := json.Marshal(wire)
	return string(b), err
}

// Session is one sandbox for many calls; every record continues its chain.
// Calls run one at a time. The session id stays inside the library.
type Session struct {
	mu          sync.Mutex
	ptr         *C.plimsoll_session
	client      *Client // keeps the client reachable while the session lives
	closed      bool
	calls       uint64
	fingerprint string
	isolation   string
}

// OpenSession opens a session. ErrUnsupported (or ErrDisabled) where the
// provider keeps no sessions. Opening may wait for a sandbox; when ctx ends
// first, OpenSession returns ErrCancelled (or ErrDeadlineExceeded) and the
// session, once open, is closed again.
func (c *Client) OpenSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	j, err := opts.json()
	if err != nil {
		return nil, &Error{code: InvalidArgument, message: err.Error(), refusal: RefusalRequest}
	}
	var s *Session
	err = await(ctx, "opening a session", func() error {
		return c.use(func(p *C.plimsoll_client) error {
			cj, free := cstr(j)
			defer free()
			var ptr *C.plimsoll_session
			var cerr *C.plimsoll_error
			if err := check(C.plimsoll_client_open_session(p, cj, &ptr, &cerr), cerr); err != nil {
				return err
			}
			s = &Session{
				ptr:         ptr,
				client:      c,
				fingerprint: C.GoString(C.plimsoll_session_fingerprint(ptr)),
				isolation:   C.GoString(C.plimsoll_session_isolation(ptr)),
			}
			runtime.SetFinalizer(s, func(s *Session) { s.free() })
			return nil
		})
	}, func() { _ = s.Close() })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Fingerprint names the session in its records (SHA-256 of its id).
func (s *Session) Fingerprint() string { return s.fingerprint }

// Isolation is the tier measured when the session opened.
func (s *Session) Isolation() string { return s.isolation }

// Run runs a snippet, project or cell in the session; the session's floor and
// software rule apply to every call.
func (s *Session) Run(ctx context.Context, req *Request) (*Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return nil, &Error{code: Closed, message: "the session handle is freed", refusal: RefusalRequest}
	}
	var resp *Response
	err := withRequest(ctx, req, func(r *C.plimsoll_request, cancel *C.plimsoll_cancel) error {
		var out *C.plimsoll_response
		var cerr *C.plimsoll_error
		if err := check(C.plimsoll_session_run(s.ptr, r, cancel, &out, &cerr), cerr); err != nil {
			return err
		}
		resp = readResponse(out)
		return nil
	})
	runtime.KeepAlive(s)
	return resp, err
}

// Ended says why the session ended as far as this handle has seen; SessionOpen while open.
func (s *Session) Ended() SessionEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return SessionClosed
	}
	return SessionEnd(C.plimsoll_session_ended(s.ptr))
}

// Calls is the number of calls the close summary reported (after Close).
func (s *Session) Calls() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Close ends the session, checks the summary against the chain seen, and frees
// the handle: Shutdown with no deadline. Safe to call twice; the handle is
// freed even when the close fails.
func (s *Session) Close() error { return s.Shutdown(context.Background()) }

// Shutdown is Close bounded by ctx: ending a session waits for its sandbox's
// cleanup (and, for a remote client, the daemon's answer). When ctx ends
// first it returns ErrCancelled (or ErrDeadlineExceeded) at once and the
// close finishes in the background, freeing the handle.
func (s *Session) Shutdown(ctx context.Context) error {
	return await(ctx, "closing the session", s.close, nil)
}

func (s *Session) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return nil
	}
	var err error
	if !s.closed {
		var calls C.uint64_t
		var cerr *C.plimsoll_error
		err = check(C.plimsoll_session_close(s.ptr, &calls, &cerr), cerr)
		if err == nil {
			s.calls = uint64(calls)
		}
		s.closed = true
	}
	C.plimsoll_session_free(s.ptr)
	s.ptr = nil
	runtime.KeepAlive(s.client)
	return err
}

// free releases the handle without closing (the finalizer's backstop).
func (s *Session) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.plimsoll_session_free(s.ptr)
		s.ptr = nil
	}
}
