package plimsoll

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The C status each Go code carries: number, name, and whether nothing ran.
func TestEveryStatusMapsToItsCode(t *testing.T) {
	table := []struct {
		code     Code
		number   uint32
		name     string
		sentinel *Error
	}{
		{OK, 0, "ok", nil},
		{InvalidRequest, 1, "invalid_request", ErrInvalidRequest},
		{ProtocolMissing, 2, "protocol_missing", ErrProtocolMissing},
		{ProtocolMismatch, 3, "protocol_mismatch", ErrProtocolMismatch},
		{Unauthenticated, 4, "unauthenticated", ErrUnauthenticated},
		{PermissionDenied, 5, "permission_denied", ErrPermissionDenied},
		{Disabled, 6, "disabled", ErrDisabled},
		{Unsupported, 7, "unsupported", ErrUnsupported},
		{InsufficientIsolation, 8, "insufficient_isolation", ErrInsufficientIsolation},
		{SoftwareMismatch, 9, "software_mismatch", ErrSoftwareMismatch},
		{AtCapacity, 10, "at_capacity", ErrAtCapacity},
		{SessionEnded, 11, "session_ended", ErrSessionEnded},
		{Infrastructure, 12, "infrastructure", ErrInfrastructure},
		{Cancelled, 13, "cancelled", ErrCancelled},
		{DeadlineExceeded, 14, "deadline_exceeded", ErrDeadlineExceeded},
		{RecordMismatch, 15, "record_mismatch", ErrRecordMismatch},
		{IsolationEvidenceMismatch, 16, "isolation_evidence_mismatch", ErrIsolationEvidenceMismatch},
		{Transport, 17, "transport", ErrTransport},
		{NullArgument, 100, "null_argument", ErrNullArgument},
		{InvalidUTF8, 101, "invalid_utf8", ErrInvalidUTF8},
		{InvalidArgument, 102, "invalid_argument", ErrInvalidArgument},
		{ConfigInvalid, 103, "config", ErrConfig},
		{Closed, 104, "closed", ErrClosed},
		{Panic, 105, "panic", ErrPanic},
	}
	for _, tc := range table {
		if uint32(tc.code) != tc.number {
			t.Errorf("%s: number %d, want %d", tc.name, tc.code, tc.number)
		}
		if tc.code.String() != tc.name {
			t.Errorf("%d: name %q, want %q", tc.number, tc.code.String(), tc.name)
		}
		if tc.code.Description() == "unknown status" {
			t.Errorf("%s has no description", tc.name)
		}
		// A status without an error object still becomes a typed error.
		err := check(statusOf(tc.code), nil)
		if tc.code == OK {
			if err != nil {
				t.Errorf("OK gave %v", err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Code() != tc.code || !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: got %v", tc.name, err)
		}
		if tc.code != Disabled && errors.Is(err, ErrDisabled) {
			t.Errorf("%s matches ErrDisabled", tc.name)
		}
	}
	if Code(18).String() != "unknown" {
		t.Errorf("18 is %q", Code(18).String())
	}
}

func TestVersion(t *testing.T) {
	if !strings.HasPrefix(Version(), "plimsoll/"+HeaderVersion+" ") {
		t.Fatalf("library %q, header %q", Version(), HeaderVersion)
	}
}

func mustEngine(t *testing.T, cfg map[string]string) *Client {
	t.Helper()
	c, err := NewEngine(context.Background(), cfg)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// expectRefusal runs req and checks the code and the not-dispatched reason.
func expectRefusal(t *testing.T, run func(context.Context, *Request) (*Response, error), req *Request, want *Error, reason Refusal) {
	t.Helper()
	resp, err := run(context.Background(), req)
	if resp != nil {
		t.Errorf("a refusal returned a response")
	}
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, want) {
		t.Fatalf("got %v, want %s", err, want.code)
	}
	got, ok := pe.NotDispatched()
	if reason == 0 && ok || reason != 0 && (!ok || got != reason) {
		t.Errorf("%s: not dispatched %d/%v, want %d", pe.Code(), got, ok, reason)
	}
	if pe.Message() == "" {
		t.Errorf("%s: empty message", pe.Code())
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := NewEngine(context.Background(), map[string]string{"SANDBOX_BOGUS": "1"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "SANDBOX_BOGUS") {
		t.Errorf("unknown key: %v", err)
	}
	_, err = NewEngine(context.Background(), map[string]string{"SANDBOX_PROVIDER": "magic"})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("unknown provider: %v", err)
	}
	_, err = NewEngine(context.Background(), map[string]string{"SANDBOX_MIN_ISOLATION": "vm"})
	if !errors.Is(err, ErrInsufficientIsolation) {
		t.Errorf("below the minimum: %v", err)
	}
	_, err = NewEngine(context.Background(), map[string]string{"SANDBOX_PROVIDER": "\xff"})
	if !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

// Refusals every client gives before anything runs, whatever its provider.
func refusalsBeforeDispatch(t *testing.T, c *Client) {
	expectRefusal(t, c.Run, &Request{}, ErrInvalidRequest, RefusalRequest)
	expectRefusal(t, c.Run, &Request{RawJSON: `{"protocol":5,"javascript":{"code":"1"}}`}, ErrProtocolMismatch, RefusalProtocol)
	expectRefusal(t, c.Run, &Request{RawJSON: `{"javascript":{"code":"1"}}`}, ErrProtocolMissing, RefusalProtocol)
	expectRefusal(t, c.Run, &Request{JavaScript: "1", MinimumIsolation: "vm"}, ErrInsufficientIsolation, RefusalIsolation)
	expectRefusal(t, c.Run, &Request{JavaScript: "1", Project: &Project{}}, ErrInvalidArgument, RefusalRequest)
	expectRefusal(t, c.Run, &Request{RawJSON: "nope"}, ErrInvalidArgument, RefusalRequest)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Run(ctx, &Request{JavaScript: "1"})
	var pe *Error
	if !errors.As(err, &pe) || pe.Code() != Cancelled {
		t.Fatalf("cancelled context: %v", err)
	}
	if r, ok := pe.NotDispatched(); !ok || r != RefusalRequest {
		t.Errorf("cancelled before sending: not dispatched %d/%v", r, ok)
	}
}

func TestDisabledEngine(t *testing.T) {
	c := mustEngine(t, nil)
	d, err := c.Describe(context.Background())
	if err != nil || d.Sandbox != "disabled" || d.Isolation != "none" || d.Protocol != 4 || d.SupportsSessions {
		t.Fatalf("describe: %+v %v", d, err)
	}
	expectRefusal(t, c.Run, &Request{JavaScript: "console.log(6*7)"}, ErrDisabled, RefusalUnsupported)
	refusalsBeforeDispatch(t, c)
	_, err = c.OpenSession(context.Background(), SessionOptions{})
	if !errors.Is(err, ErrDisabled) {
		t.Errorf("session: %v", err)
	}
	concurrently(t, c, "1", ErrDisabled)
}

// concurrently runs code from several goroutines on one client.
func concurrently(t *testing.T, c *Client, code string, want error) {
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				_, err := c.Run(context.Background(), &Request{JavaScript: code})
				if !errors.Is(err, want) && !(want == nil && err == nil) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent run: %v, want %v", err, want)
	}
}

func TestClosedClientAndFinalizers(t *testing.T) {
	c := mustEngine(t, nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("a second Close failed")
	}
	_, err := c.Run(context.Background(), &Request{JavaScript: "1"})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("run after close: %v", err)
	}
	// Handles left to the collector are freed by their finalizers.
	for i := 0; i < 3; i++ {
		if _, err := NewEngine(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := NewChain("abc"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}

func TestVerifyInputs(t *testing.T) {
	req := `{"protocol":4,"javascript":{"code":"1"}}`
	err := VerifyRecord(req, `{"sandbox":"wasm","javascript":{}}`)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code() != RecordMismatch {
		t.Fatalf("no record: %v", err)
	}
	if _, ok := pe.NotDispatched(); ok {
		t.Error("a record mismatch says nothing ran")
	}
	// A malformed answer is a transport error in every language; a malformed request is invalid.
	if err := VerifyRecord(req, "[]"); !errors.Is(err, ErrTransport) {
		t.Errorf("malformed answer: %v", err)
	}
	if err := VerifyRecord("[]", "{}"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("malformed request: %v", err)
	}
	ch, err := NewChain("abc")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.CheckClose("abc", 0, ""); err != nil {
		t.Errorf("empty close: %v", err)
	}
	if err := ch.CheckClose("abc", 1, ""); !errors.Is(err, ErrRecordMismatch) {
		t.Errorf("a call never seen: %v", err)
	}
	if err := ch.CheckCall(req, `{"javascript":{}}`); !errors.Is(err, ErrRecordMismatch) || ch.Calls() != 0 {
		t.Errorf("bad call: %v (calls %d)", err, ch.Calls())
	}
}

func TestRemote(t *testing.T) {
	url := os.Getenv("PLIMSOLL_TEST_URL")
	if url == "" {
		t.Skip("PLIMSOLL_TEST_URL is unset (tests/go/run.sh starts a plimsolld)")
	}
	token := os.Getenv("PLIMSOLL_TEST_TOKEN")
	if _, err := NewRemote("ftp://x", "", false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad URL: %v", err)
	}
	c, err := NewRemote(url, token, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Describe(context.Background())
	if err != nil || d.Sandbox != "disabled" || d.Protocol != 4 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	expectRefusal(t, c.Run, &Request{JavaScript: "console.log(6*7)"}, ErrDisabled, RefusalUnsupported)
	refusalsBeforeDispatch(t, c)
	if _, err := c.OpenSession(context.Background(), SessionOptions{}); !errors.Is(err, ErrDisabled) {
		t.Errorf("session: %v", err)
	}
	concurrently(t, c, "1", ErrDisabled)

	anon, err := NewRemote(url, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	expectRefusal(t, anon.Run, &Request{JavaScript: "1"}, ErrUnauthenticated, RefusalPermission)

	nowhere, err := NewRemote("http://127.0.0.1:9", "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer nowhere.Close()
	expectRefusal(t, nowhere.Run, &Request{JavaScript: "1"}, ErrTransport, 0)
}

func wasmEngine(t *testing.T, extra map[string]string) *Client {
	t.Helper()
	cfg := map[string]string{"SANDBOX_PROVIDER": "wasm", "SANDBOX_RATE_PER_MIN": "0"}
	for k, v := range extra {
		cfg[k] = v
	}
	c, err := NewEngine(context.Background(), cfg)
	if err != nil {
		if os.Getenv("PLIMSOLL_TEST_WASM") == "1" {
			t.Fatalf("wasm engine: %v", err)
		}
		t.Skipf("no wasm provider in this build: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestWasmSnippets(t *testing.T) {
	wasmChecks(t, wasmEngine(t, nil))
}

func TestWasmRemote(t *testing.T) {
	url := os.Getenv("PLIMSOLL_TEST_WASM_URL")
	if url == "" {
		t.Skip("PLIMSOLL_TEST_WASM_URL is unset (tests/go/run.sh starts a plimsolld)")
	}
	c, err := NewRemote(url, os.Getenv("PLIMSOLL_TEST_TOKEN"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wasmChecks(t, c)
}

// Real snippets on a wasm engine or daemon: answers, records, refusals.
func wasmChecks(t *testing.T, c *Client) {
	d, err := c.Describe(context.Background())
	if err != nil || d.Sandbox != "wasm" || d.Isolation != "process" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	resp, err := c.Run(context.Background(), &Request{JavaScript: "console.log(6*7)"})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Stdout) != "42\n" || resp.ExitCode != 0 || resp.Isolation != "process" || resp.Sandbox != "wasm" || resp.Kind != "javascript" {
		t.Fatalf("answer: %+v", resp)
	}
	if len(resp.RecordSHA256) != 64 || !strings.Contains(resp.RecordJSON, resp.RecordSHA256) || resp.Sequence != 0 {
		t.Errorf("record: %q %q", resp.RecordSHA256, resp.RecordJSON)
	}
	if !strings.Contains(resp.PhasesJSON, `"phases":[{"phase":"admitted","ms":`) {
		t.Errorf("phases: %q", resp.PhasesJSON)
	}
	if err := resp.Verify(); err != nil {
		t.Errorf("verify: %v", err)
	}
	// A tampered record fails: one character of the kept stdout ("NDIK") changed.
	tampered := strings.Replace(resp.JSON, `"stdout":"NDIK"`, `"stdout":"NDMK"`, 1)
	if tampered == resp.JSON {
		t.Fatalf("no stdout to tamper with in %s", resp.JSON)
	}
	if err := VerifyRecord(resp.RequestJSON, tampered); !errors.Is(err, ErrRecordMismatch) {
		t.Errorf("tampered: %v", err)
	}
	// …and so does a record answering another request.
	other := strings.Replace(resp.RequestJSON, "6*7", "6*8", 1)
	if err := VerifyRecord(other, resp.JSON); !errors.Is(err, ErrRecordMismatch) {
		t.Errorf("another request: %v", err)
	}

	resp, err = c.Run(context.Background(), &Request{JavaScript: "console.error('no'); process.exit(3)"})
	if err != nil || resp.ExitCode != 3 || string(resp.Stderr) != "no\n" {
		t.Errorf("non-zero exit: %+v %v", resp, err)
	}
	resp, err = c.Run(context.Background(), &Request{JavaScript: "for(;;){}", Timeout: 300 * time.Millisecond})
	if err != nil || !resp.TimedOut || resp.ExitCode != 124 {
		t.Errorf("deadline: %+v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	resp, err = c.Run(ctx, &Request{JavaScript: "for(;;){}"})
	if err == nil && !resp.TimedOut {
		t.Errorf("a ctx deadline neither timed the run out nor cancelled it: %+v", resp)
	}
	resp, err = c.Run(context.Background(), &Request{JavaScript: "const s = 'x'.repeat(1 << 20); for (let i = 0; i < 8; i++) console.log(s)"})
	if err != nil || !resp.StdoutTruncated || len(resp.Stdout) == 0 {
		t.Errorf("truncation: %v %v", resp != nil && resp.StdoutTruncated, err)
	}

	refusalsBeforeDispatch(t, c)
	expectRefusal(t, c.Run, &Request{Project: &Project{Steps: []string{"true"}}}, ErrUnsupported, RefusalUnsupported)
	expectRefusal(t, c.Run, &Request{JavaScript: "1", SoftwareRule: &SoftwareRule{Mode: "exact", Identities: []string{"not-this"}}}, ErrSoftwareMismatch, RefusalEnvironment)
	concurrently(t, c, "console.log(1)", nil)
}

func TestWasmCancel(t *testing.T) {
	c := wasmEngine(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	resp, err := c.Run(ctx, &Request{JavaScript: "for(;;){}", Timeout: 20 * time.Second})
	if time.Since(start) > 10*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Code() != Cancelled {
		t.Fatalf("cancel: %v %+v", err, resp)
	}
	if _, ok := pe.NotDispatched(); ok {
		t.Error("a run cancelled while running says nothing ran")
	}
}

func TestWasmRateLimitSheds(t *testing.T) {
	c := wasmEngine(t, map[string]string{"SANDBOX_RATE_PER_MIN": "1"})
	if _, err := c.Run(context.Background(), &Request{JavaScript: "1"}); err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, c.Run, &Request{JavaScript: "1"}, ErrAtCapacity, RefusalCapacity)
}

// A typed refusal where the provider keeps no sessions (wasm).
func TestSessionsRefusedOnWasm(t *testing.T) {
	c := wasmEngine(t, nil)
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.SupportsSessions {
		t.Fatalf("the wasm provider claims sessions")
	}
	if _, err := c.OpenSession(context.Background(), SessionOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("open on a provider without sessions: %v", err)
	}
}

// A real session on docker (runc): calls chain, close summarises, a closed session refuses.
func TestSessions(t *testing.T) {
	c, err := NewEngine(context.Background(), map[string]string{
		"SANDBOX_PROVIDER":     "docker",
		"SANDBOX_MAX_SESSIONS": "2",
		"SANDBOX_RATE_PER_MIN": "0",
	})
	if err != nil {
		t.Fatalf("docker engine with sessions: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !d.SupportsSessions {
		t.Fatalf("the docker provider with SANDBOX_MAX_SESSIONS=2 reports no sessions")
	}
	s, err := c.OpenSession(context.Background(), SessionOptions{MinimumIsolation: d.Isolation})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := NewChain(s.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var last string
	for i, code := range []string{"console.log(1)", "console.log(2)"} {
		resp, err := s.Run(context.Background(), &Request{JavaScript: code})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Sequence != uint64(i+1) {
			t.Errorf("sequence %d", resp.Sequence)
		}
		if err := ch.CheckCall(resp.RequestJSON, resp.JSON); err != nil {
			t.Errorf("chain: %v", err)
		}
		last = resp.RecordSHA256
	}
	if err := s.Close(); err != nil || s.Calls() != 2 {
		t.Fatalf("close: %v (%d calls)", err, s.Calls())
	}
	if err := ch.CheckClose(s.Fingerprint(), 2, last); err != nil {
		t.Errorf("close summary: %v", err)
	}
	if _, err := s.Run(context.Background(), &Request{JavaScript: "1"}); !errors.Is(err, ErrClosed) {
		t.Errorf("run after close: %v", err)
	}
}

// The shared verification vectors (tests/vectors/verify.json, replayed by the
// Python, Node and C suites too): every single run verifies or fails with the
// same code as in those languages, and so do the unreadable kept bytes.
func TestSharedVectorsGiveTheSameOutcome(t *testing.T) {
	path := os.Getenv("PLIMSOLL_VECTORS")
	if path == "" {
		t.Fatal("PLIMSOLL_VECTORS is not set (tests/go/run.sh sets it)")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Single []struct {
			Name     string          `json:"name"`
			Request  json.RawMessage `json:"request"`
			Response json.RawMessage `json:"response"`
			Expect   string          `json:"expect"`
		} `json:"single"`
		Unreadable []struct {
			Name         string `json:"name"`
			RequestText  string `json:"requestText"`
			ResponseText string `json:"responseText"`
			Expect       string `json:"expect"`
		} `json:"unreadable"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Single) == 0 || len(v.Unreadable) == 0 {
		t.Fatalf("no vectors read from %s", path)
	}
	outcome := func(err error) string {
		if err == nil {
			return "ok"
		}
		var pe *Error
		if !errors.As(err, &pe) {
			return "not a plimsoll error: " + err.Error()
		}
		return pe.Code().String()
	}
	for _, c := range v.Single {
		if got := outcome(VerifyRecord(string(c.Request), string(c.Response))); got != c.Expect {
			t.Errorf("%s: got %s, want %s", c.Name, got, c.Expect)
		}
	}
	for _, c := range v.Unreadable {
		if got := outcome(VerifyRecord(c.RequestText, c.ResponseText)); got != c.Expect {
			t.Errorf("%s: got %s, want %s", c.Name, got, c.Expect)
		}
	}
}

// sessionVectors sends the shared session calls (tests/vectors/sessions.json)
// through c, checks every want, and gives the line per call the other
// languages must match.
func sessionVectors(t *testing.T, c *Client) string {
	t.Helper()
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		SessionEnvironment struct {
			SoftwareIdentity string `json:"softwareIdentity"`
		} `json:"sessionEnvironment"`
	}
	if err := json.Unmarshal([]byte(d.JSON), &desc); err != nil || desc.SessionEnvironment.SoftwareIdentity == "" {
		t.Fatalf("no session software identity in %s: %v", d.JSON, err)
	}
	raw, err := os.ReadFile(os.Getenv("PLIMSOLL_SESSION_VECTORS"))
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.ReplaceAll(string(raw), "$IDENTITY", desc.SessionEnvironment.SoftwareIdentity))
	var v struct {
		Open struct {
			MinimumIsolation string       `json:"minimumIsolation"`
			SoftwareRule     SoftwareRule `json:"softwareRule"`
		} `json:"open"`
		Calls []struct {
			Name    string          `json:"name"`
			Request json.RawMessage `json:"request"`
			Want    struct {
				Error            string  `json:"error"`
				MinimumIsolation *string `json:"minimumIsolation"`
				SoftwareRuleID   *string `json:"softwareRuleId"`
			} `json:"want"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || len(v.Calls) == 0 {
		t.Fatalf("session vectors: %v", err)
	}
	s, err := c.OpenSession(context.Background(), SessionOptions{MinimumIsolation: v.Open.MinimumIsolation, SoftwareRule: &v.Open.SoftwareRule})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out strings.Builder
	for _, call := range v.Calls {
		line := []string{call.Name, "ok", "", "", ""}
		resp, err := s.Run(context.Background(), &Request{RawJSON: string(call.Request)})
		var pe *Error
		switch {
		case errors.As(err, &pe):
			line[1] = pe.Code().String()
		case err != nil:
			t.Fatalf("%s: %v", call.Name, err)
		default:
			var sent struct {
				MinimumIsolation string `json:"minimumIsolation"`
			}
			var rec struct {
				RequestSha256  string `json:"requestSha256"`
				SoftwareRuleID string `json:"softwareRuleId"`
			}
			if json.Unmarshal([]byte(resp.RequestJSON), &sent) != nil || json.Unmarshal([]byte(resp.RecordJSON), &rec) != nil {
				t.Fatalf("%s: unreadable request or record", call.Name)
			}
			line[2], line[3], line[4] = rec.RequestSha256, sent.MinimumIsolation, rec.SoftwareRuleID
		}
		want := "ok"
		if call.Want.Error != "" {
			want = call.Want.Error
		}
		if line[1] != want {
			t.Errorf("%s: outcome %s, want %s", call.Name, line[1], want)
		}
		if w := call.Want.MinimumIsolation; w != nil && line[3] != *w {
			t.Errorf("%s: floor sent %q, want %q", call.Name, line[3], *w)
		}
		if w := call.Want.SoftwareRuleID; w != nil && line[4] != *w {
			t.Errorf("%s: rule id %q, want %q", call.Name, line[4], *w)
		}
		out.WriteString(strings.Join(line, "\t") + "\n")
	}
	return out.String()
}

// The shared session calls, embedded and against a real plimsolld (docker on
// runc, which tests/go/run.sh starts): the same lines as every other language.
func TestSharedSessionCalls(t *testing.T) {
	url := os.Getenv("PLIMSOLL_TEST_SESSIONS_URL")
	if url == "" || os.Getenv("PLIMSOLL_SESSION_VECTORS") == "" {
		t.Fatal("PLIMSOLL_TEST_SESSIONS_URL or PLIMSOLL_SESSION_VECTORS is unset (tests/go/run.sh sets them)")
	}
	e, err := NewEngine(context.Background(), map[string]string{"SANDBOX_PROVIDER": "docker", "SANDBOX_DOCKER_RUNTIME": "runc", "SANDBOX_MAX_SESSIONS": "2", "SANDBOX_RATE_PER_MIN": "0"})
	if err != nil {
		t.Fatalf("docker engine: %v", err)
	}
	defer e.Close()
	r, err := NewRemote(url, os.Getenv("PLIMSOLL_TEST_TOKEN"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outputs := map[string]string{"embedded": sessionVectors(t, e), "remote": sessionVectors(t, r)}
	if outputs["embedded"] != outputs["remote"] {
		t.Errorf("embedded and remote differ:\n%s\n%s", outputs["embedded"], outputs["remote"])
	}
	if dir := os.Getenv("PLIMSOLL_SESSION_VECTORS_OUT"); dir != "" {
		for link, text := range outputs {
			if err := os.WriteFile(filepath.Join(dir, "go-"+link+".tsv"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Every blocking call gives up when its ctx ends: at once for a ctx already
// done, and mid-call for a deadline that passes while the engine starts.
func TestBlockingCallsHonourTheirContext(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewEngine(done, nil); !errors.Is(err, ErrCancelled) {
		t.Fatalf("NewEngine with a cancelled ctx: %v", err)
	}
	c, err := NewEngine(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Describe(done); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Describe with a cancelled ctx: %v", err)
	}
	if _, err := c.OpenSession(done, SessionOptions{}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("OpenSession with a cancelled ctx: %v", err)
	}
	// The wasm engine compiles its guest when it starts (hundreds of ms at
	// least): a 1 ms deadline passes first, and the call returns at once.
	short, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	start := time.Now()
	if _, err := NewEngine(short, map[string]string{"SANDBOX_PROVIDER": "wasm"}); !errors.Is(err, ErrDeadlineExceeded) {
		t.Fatalf("NewEngine past its deadline: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("NewEngine waited %v past a 1 ms deadline", waited)
	}
	s := &Session{}
	if err := s.Shutdown(done); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Shutdown with a cancelled ctx: %v", err)
	}
	if d, err := c.Describe(context.Background()); err != nil || d.Sandbox != "disabled" {
		t.Fatalf("Describe: %v %v", d, err)
	}
}
