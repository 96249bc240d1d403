package plimsoll

// #include <stdlib.h>
// #include "plimsoll.h"
import "C"

import (
	"runtime"
	"sync"
)

// VerifyRecord checks a single run's kept answer (the wire's RunResponse JSON)
// against the request sent (RunRequest JSON): the record is present, bound to
// the request and the result, equal to the evidence, its digest holds, and
// the tier meets the floor. ErrRecordMismatch (or
// ErrIsolationEvidenceMismatch) when it does not. It does not prove which
// machine ran the code.
func VerifyRecord(requestJSON, responseJSON string) error {
	a, freeA := cstr(requestJSON)
	defer freeA()
	b, freeB := cstr(responseJSON)
	defer freeB()
	var cerr *C.plimsoll_error
	return check(C.plimsoll_verify_record(a, b, &cerr), cerr)
}

// Chain follows a session's records: each must name the session, continue the
// sequence and name the previous record. Not safe for concurrent use.
type Chain struct {
	mu  sync.Mutex
	ptr *C.plimsoll_chain
}

// NewChain starts a chain for the session with this fingerprint.
func NewChain(fingerprint string) (*Chain, error) {
	fp, free := cstr(fingerprint)
	defer free()
	var ptr *C.plimsoll_chain
	var cerr *C.plimsoll_error
	if err := check(C.plimsoll_chain_new(fp, &ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	c := &Chain{ptr: ptr}
	runtime.SetFinalizer(c, func(c *Chain) { _ = c.Close() })
	return c, nil
}

func (c *Chain) use(f func(*C.plimsoll_chain) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return &Error{code: Closed, message: "the chain is closed", refusal: RefusalRequest}
	}
	err := f(c.ptr)
	runtime.KeepAlive(c)
	return err
}

// CheckCall checks the session's next answered call and advances only if it holds.
func (c *Chain) CheckCall(requestJSON, responseJSON string) error {
	return c.use(func(p *C.plimsoll_chain) error {
		a, freeA := cstr(requestJSON)
		defer freeA()
		b, freeB := cstr(responseJSON)
		defer freeB()
		var cerr *C.plimsoll_error
		return check(C.plimsoll_chain_check_call(p, a, b, &cerr), cerr)
	})
}

// CheckClose checks a close summary against the calls seen.
func (c *Chain) CheckClose(session string, calls uint64, lastRecordSHA256 string) error {
	return c.use(func(p *C.plimsoll_chain) error {
		s, freeS := cstr(session)
		defer freeS()
		l, freeL := cstr(lastRecordSHA256)
		defer freeL()
		var cerr *C.plimsoll_error
		return check(C.plimsoll_chain_check_close(p, s, C.uint64_t(calls), l, &cerr), cerr)
	})
}

// Calls is how many calls the chain has accepted.
func (c *Chain) Calls() uint64 {
	var n uint64
	_ = c.use(func(p *C.plimsoll_chain) error { n = uint64(C.plimsoll_chain_calls(p)); return nil })
	return n
}

// Last is the last accepted record's digest, or "".
func (c *Chain) Last() string {
	var s string
	_ = c.use(func(p *C.plimsoll_chain) error { s = C.GoString(C.plimsoll_chain_last(p)); return nil })
	return s
}

// Close frees the chain; safe to call twice.
func (c *Chain) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.plimsoll_chain_free(c.ptr)
		c.ptr = nil
	}
	return nil
}
