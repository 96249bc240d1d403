// Package plimsoll wraps libplimsoll (the C ABI of plimsoll-core) for Go:
// run code nobody trusts behind a proven isolation tier, on an embedded
// engine or a remote plimsolld, and verify every answer's run record.
//
// Objects that hold C memory (Client, Session, Chain) have an idempotent
// Close; a finalizer frees them as a backstop, but the Go collector cannot
// see how much memory the C side holds, so call Close. Values (Response,
// Description) are copied into Go memory and need no closing.
//
// Every call that can block takes a context.Context: Run and Session.Run
// cancel the run itself through the library's cancel switch; NewEngine,
// Describe, OpenSession and Session.Shutdown (Close with a ctx) stop waiting
// and release what the abandoned call made once it finishes. Client.Close
// takes none: it only waits for calls already bounded by their own ctx.
//
// Build: the package finds libplimsoll with pkg-config (`#cgo pkg-config:
// plimsoll`), so install the C library first (scripts/install-capi.sh puts the
// header, libplimsoll.so.0, libplimsoll.a and plimsoll.pc under PREFIX) and set
// PKG_CONFIG_PATH when PREFIX is not a system prefix. The module path is
// example.invalid/plimsoll/bindings-go (the repository's path; see README.md):
// use it with a replace directive pointing at this directory.
package plimsoll

// #cgo pkg-config: plimsoll
// #include <stdlib.h>
// #include "plimsoll.h"
import "C"

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"unsafe"
)

// Version is the library's version string (for example "plimsoll/0.1.0 (protocol 4, record v4)").
func Version() string { return C.GoString(C.plimsoll_version()) }

// HeaderVersion is the version the header was generated for.
const HeaderVersion = C.PLIMSOLL_VERSION

// Client is an embedded engine (NewEngine) or a remote daemon (NewRemote).
// It may be used from many goroutines at once; each call blocks its goroutine's
// OS thread while it runs.
type Client struct {
	mu  sync.RWMutex // calls hold it shared; Close holds it exclusively
	ptr *C.plimsoll_client
}

// NewEngine starts an embedded engine from configuration pairs read as the
// daemon reads its environment (SANDBOX_PROVIDER=wasm, SANDBOX_RATE_PER_MIN=0,
// …). An empty configuration is the disabled provider: every run is refused
// with ErrDisabled. The process environment is never read. Starting runs the
// provider's startup proof (seconds for docker); when ctx ends first, NewEngine
// returns ErrCancelled (or ErrDeadlineExceeded) and the engine, once started,
// is closed again.
func NewEngine(ctx context.Context, config map[string]string) (*Client, error) {
	var cfg *C.plimsoll_config
	if err := check(C.plimsoll_config_new(&cfg, nil), nil); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ck, cv := C.CString(k), C.CString(config[k])
		var cerr *C.plimsoll_error
		st := C.plimsoll_config_set(cfg, ck, cv, &cerr)
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
		if err := check(st, cerr); err != nil {
			C.plimsoll_config_free(cfg)
			return nil, err
		}
	}
	var ptr *C.plimsoll_client
	err := await(ctx, "starting the engine", func() error {
		defer C.plimsoll_config_free(cfg)
		var cerr *C.plimsoll_error
		return check(C.plimsoll_client_new_engine(cfg, &ptr, &cerr), cerr)
	}, func() { C.plimsoll_client_free(ptr) })
	if err != nil {
		return nil, err
	}
	return newClient(ptr), nil
}

// NewRemote makes a client for the plimsolld at baseURL (https, or http on
// loopback unless insecureHTTP). token may be "" for none. Every answer is
// verified: bound to the request, record and chain checked, floor re-checked.
func NewRemote(baseURL, token string, insecureHTTP bool) (*Client, error) {
	curl := C.CString(baseURL)
	defer C.free(unsafe.Pointer(curl))
	var ctok *C.char
	if token != "" {
		ctok = C.CString(token)
		defer C.free(unsafe.Pointer(ctok))
	}
	var ptr *C.plimsoll_client
	var cerr *C.plimsoll_error
	if err := check(C.plimsoll_client_new_remote(curl, ctok, C.bool(insecureHTTP), &ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return newClient(ptr), nil
}

func newClient(ptr *C.plimsoll_client) *Client {
	c := &Client{ptr: ptr}
	runtime.SetFinalizer(c, func(c *Client) { _ = c.Close() })
	return c
}

// Close frees the client. When it and every session made from it are closed,
// an engine's sessions end and its runtime stops. Safe to call twice; it waits
// for calls in progress.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.plimsoll_client_free(c.ptr)
		c.ptr = nil
	}
	return nil
}

// use runs f with the live handle, or fails with ErrClosed.
func (c *Client) use(f func(*C.plimsoll_client) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return &Error{code: Closed, message: "the client is closed", refusal: RefusalRequest}
	}
	err := f(c.ptr)
	runtime.KeepAlive(c)
	return err
}

// Description is what an engine or daemon serves: configuration plus startup
// proof, never attestation.
type Description struct {
	Sandbox          string // the provider: "disabled", "wasm", "docker", …
	Isolation        string // the proven tier: "none", "process", "container", "kernel", "vm"
	Protocol         uint32
	SupportsProject  bool
	SupportsSessions bool
	JSON             string // the wire's DescribeResponse
}

// Describe asks what the engine or daemon serves (a network call for a
// remote client; ctx bounds the wait).
func (c *Client) Describe(ctx context.Context) (*Description, error) {
	var d *Description
	err := await(ctx, "describe", func() error {
		return c.use(func(p *C.plimsoll_client) error {
			var cd *C.plimsoll_description
			var cerr *C.plimsoll_error
			if err := check(C.plimsoll_client_describe(p, &cd, &cerr), cerr); err != nil {
				return err
			}
			defer C.plimsoll_description_free(cd)
			d = &Description{
				Sandbox:          C.GoString(C.plimsoll_description_sandbox(cd)),
				Isolation:        C.GoString(C.plimsoll_description_isolation(cd)),
				Protocol:         uint32(C.plimsoll_description_protocol(cd)),
				SupportsProject:  bool(C.plimsoll_description_supports_project(cd)),
				SupportsSessions: bool(C.plimsoll_description_supports_sessions(cd)),
				JSON:             C.GoString(C.plimsoll_description_json(cd)),
			}
			return nil
		})
	}, nil)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Run runs a snippet or project and waits for its verified answer. A guest's
// non-zero exit is a normal Response. Cancelling ctx ends the call with
// ErrCancelled; a ctx deadline also becomes the run's budget when the request
// sets none.
func (c *Client) Run(ctx context.Context, req *Request) (*Response, error) {
	var resp *Response
	err := c.use(func(p *C.plimsoll_client) error {
		return withRequest(ctx, req, func(r *C.plimsoll_request, cancel *C.plimsoll_cancel) error {
			var out *C.plimsoll_response
			var cerr *C.plimsoll_error
			if err := check(C.plimsoll_client_run(p, r, cancel, &out, &cerr), cerr); err != nil {
				return err
			}
			resp = readResponse(out)
			return nil
		})
	})
	return resp, err
}

// withRequest builds the C request, wires ctx to a cancel switch, calls f, and frees both.
func withRequest(ctx context.Context, req *Request, f func(*C.plimsoll_request, *C.plimsoll_cancel) error) error {
	r, err := req.build(ctx)
	if err != nil {
		return err
	}
	defer C.plimsoll_request_free(r)
	var cancel *C.plimsoll_cancel
	if err := check(C.plimsoll_cancel_new(&cancel, nil), nil); err != nil {
		return err
	}
	defer C.plimsoll_cancel_free(cancel)
	if ctx.Err() != nil {
		C.plimsoll_cancel_trigger(cancel)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			C.plimsoll_cancel_trigger(cancel)
		case <-done:
		}
	}()
	err = f(r, cancel)
	close(done)
	<-finished // the switch is freed only once nothing can trigger it
	return err
}
