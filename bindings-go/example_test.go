package plimsoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	plimsoll "example.invalid/plimsoll/bindings-go"
)

// Run a JavaScript snippet on the embedded wasm engine (QuickJS in wasmtime,
// tier "process") and check its record.
func ExampleNewEngine() {
	ctx := context.Background()
	client, err := plimsoll.NewEngine(ctx, map[string]string{"SANDBOX_PROVIDER": "wasm"})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	resp, err := client.Run(ctx, &plimsoll.Request{JavaScript: "console.log(6 * 7)"})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(resp.Stdout))
	fmt.Println(resp.Isolation, resp.ExitCode, resp.Verify() == nil)
	// Output:
	// 42
	// process 0 true
}

// Demand a floor: a run that needs the kernel tier is refused before any code
// runs on an engine that proved only the process tier.
func ExampleClient_Run_minimumIsolation() {
	ctx := context.Background()
	client, err := plimsoll.NewEngine(ctx, map[string]string{"SANDBOX_PROVIDER": "wasm"})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	_, err = client.Run(ctx, &plimsoll.Request{JavaScript: "1", MinimumIsolation: "kernel"})
	var perr *plimsoll.Error
	if errors.As(err, &perr) {
		reason, nothingRan := perr.NotDispatched()
		fmt.Println(errors.Is(err, plimsoll.ErrInsufficientIsolation), nothingRan, reason != 0)
	}
	// Output: true true true
}

// Run against a plimsolld: every answer is verified (bound to the request,
// record and chain checked) before Run returns it.
func ExampleNewRemote() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := plimsoll.NewRemote(os.Getenv("PLIMSOLL_URL"), os.Getenv("PLIMSOLL_TOKEN"), false)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	resp, err := client.Run(ctx, &plimsoll.Request{JavaScript: "console.log('hi')", MinimumIsolation: "process"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s on %s\n", resp.Stdout, resp.Isolation)
}
