package plimsoll

import (
	"context"
	"errors"
)

// await runs call on its own goroutine and returns its error, or returns as
// soon as ctx is done with ErrCancelled (ErrDeadlineExceeded for a deadline).
// The C call it wraps cannot be interrupted, so when the caller stops waiting
// it still finishes in the background; undo, when not nil, then releases what
// it made (a client, a session), so nothing leaks past the abandoned call.
func await(ctx context.Context, what string, call func() error, undo func()) error {
	if ctx.Err() != nil {
		return stopped(ctx, what)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			if err := <-done; err == nil && undo != nil {
				undo()
			}
		}()
		return stopped(ctx, what)
	}
}

// stopped is the error for a call whose ctx ended before its answer.
func stopped(ctx context.Context, what string) error {
	code := Cancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = DeadlineExceeded
	}
	return &Error{code: code, message: what + ": " + ctx.Err().Error()}
}
