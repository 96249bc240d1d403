package plimsoll

// #include <stdlib.h>
// #include "plimsoll.h"
import "C"

import (
	"context"
	"math"
	"time"
	"unsafe"
)

// File is a text file written into a project's or cell's work directory first.
type File struct {
	Path    string
	Content string
}

// Project is a multi-step project: files, shell steps run in order, artifacts collected.
type Project struct {
	Files     []File
	Steps     []string
	Artifacts []string
}

// Cell is notebook code for a session's kept interpreter ("javascript" or "python").
type Cell struct {
	Language string
	Code     string
	Files    []File
}

// SoftwareRule says which software a caller accepts: Mode "exact" (one
// identity) or "approved" (1 to 32).
type SoftwareRule struct {
	Mode       string
	Identities []string
}

// Request is one thing to run. Set exactly one of JavaScript, Project and
// Cell, or RawJSON (the wire's RunRequest, sent as given: its protocol number
// is not filled in).
type Request struct {
	JavaScript       string
	Project          *Project
	Cell             *Cell
	RawJSON          string
	MinimumIsolation string        // "", "process", "container", "kernel" or "vm"
	Timeout          time.Duration // 0: the provider's default (or the ctx deadline)
	TraceID          string
	GrantProfile     string
	SoftwareRule     *SoftwareRule
}

func cstr(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

func (req *Request) build(ctx context.Context) (*C.plimsoll_request, error) {
	var r *C.plimsoll_request
	var cerr *C.plimsoll_error
	var st C.plimsoll_status
	kinds := 0
	for _, set := range []bool{req.JavaScript != "", req.Project != nil, req.Cell != nil, req.RawJSON != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return nil, &Error{code: InvalidArgument, message: "set exactly one of JavaScript, Project, Cell and RawJSON", refusal: RefusalRequest}
	}
	switch {
	case req.RawJSON != "":
		j, free := cstr(req.RawJSON)
		st = C.plimsoll_request_from_json(j, &r, &cerr)
		free()
	case req.Project != nil:
		st = C.plimsoll_request_new_project(&r, &cerr)
	case req.Cell != nil:
		l, freeL := cstr(req.Cell.Language)
		c, freeC := cstr(req.Cell.Code)
		st = C.plimsoll_request_new_cell(l, c, &r, &cerr)
		freeL()
		freeC()
	default: // a snippet; "" is sent and refused as an invalid request
		c, free := cstr(req.JavaScript)
		st = C.plimsoll_request_new_javascript(c, &r, &cerr)
		free()
	}
	if err := check(st, cerr); err != nil {
		return nil, err
	}
	if err := req.fill(ctx, r); err != nil {
		C.plimsoll_request_free(r)
		return nil, err
	}
	return r, nil
}

// fill adds the payload's parts and the envelope to a fresh C request.
func (req *Request) fill(ctx context.Context, r *C.plimsoll_request) error {
	do := func(f func(**C.plimsoll_error) C.plimsoll_status) error {
		var cerr *C.plimsoll_error
		st := f(&cerr)
		return check(st, cerr)
	}
	addFiles := func(files []File) error {
		for _, f := range files {
			p, free := cstr(f.Path)
			var content *C.uint8_t
			if len(f.Content) > 0 {
				content = (*C.uint8_t)(C.CBytes([]byte(f.Content)))
			}
			err := do(func(e **C.plimsoll_error) C.plimsoll_status {
				return C.plimsoll_request_add_file(r, p, content, C.size_t(len(f.Content)), e)
			})
			free()
			C.free(unsafe.Pointer(content))
			if err != nil {
				return err
			}
		}
		return nil
	}
	if req.Project != nil {
		for _, s := range req.Project.Steps {
			c, free := cstr(s)
			err := do(func(e **C.plimsoll_error) C.plimsoll_status { return C.plimsoll_request_add_step(r, c, e) })
			free()
			if err != nil {
				return err
			}
		}
		if err := addFiles(req.Project.Files); err != nil {
			return err
		}
		for _, a := range req.Project.Artifacts {
			c, free := cstr(a)
			err := do(func(e **C.plimsoll_error) C.plimsoll_status { return C.plimsoll_request_add_artifact(r, c, e) })
			free()
			if err != nil {
				return err
			}
		}
	}
	if req.Cell != nil {
		if err := addFiles(req.Cell.Files); err != nil {
			return err
		}
	}
	for _, field := range []struct {
		value string
		set   func(*C.char, **C.plimsoll_error) C.plimsoll_status
	}{
		{req.MinimumIsolation, func(v *C.char, e **C.plimsoll_error) C.plimsoll_status {
			return C.plimsoll_request_set_minimum_isolation(r, v, e)
		}},
		{req.TraceID, func(v *C.char, e **C.plimsoll_error) C.plimsoll_status {
			return C.plimsoll_request_set_trace_id(r, v, e)
		}},
		{req.GrantProfile, func(v *C.char, e **C.plimsoll_error) C.plimsoll_status {
			return C.plimsoll_request_set_grant_profile(r, v, e)
		}},
	} {
		if field.value == "" {
			continue
		}
		c, free := cstr(field.value)
		err := do(func(e **C.plimsoll_error) C.plimsoll_status { return field.set(c, e) })
		free()
		if err != nil {
			return err
		}
	}
	timeout := req.Timeout
	if deadline, ok := ctx.Deadline(); ok && timeout == 0 {
		timeout = time.Until(deadline)
		if timeout < time.Millisecond {
			timeout = time.Millisecond
		}
	}
	if timeout > 0 {
		ms := timeout.Milliseconds()
		if ms > math.MaxInt32 {
			ms = math.MaxInt32
		}
		if err := do(func(e **C.plimsoll_error) C.plimsoll_status {
			return C.plimsoll_request_set_timeout_ms(r, C.int32_t(ms), e)
		}); err != nil {
			return err
		}
	}
	if rule := req.SoftwareRule; rule != nil {
		mode, freeMode := cstr(rule.Mode)
		defer freeMode()
		n := len(rule.Identities)
		var ids **C.char
		if n > 0 {
			ids = (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
			defer C.free(unsafe.Pointer(ids))
			arr := unsafe.Slice(ids, n)
			for i, id := range rule.Identities {
				arr[i] = C.CString(id)
				defer C.free(unsafe.Pointer(arr[i]))
			}
		}
		if err := do(func(e **C.plimsoll_error) C.plimsoll_status {
			return C.plimsoll_request_set_software_rule(r, mode, ids, C.size_t(n), e)
		}); err != nil {
			return err
		}
	}
	return nil
}
