// In the consumer container: a program outside plimsoll's tree that uses the
// Go module against the installed libplimsoll, embedded and remote.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	plimsoll "example.invalid/plimsoll/bindings-go"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go:", err)
		os.Exit(1)
	}
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	engine, err := plimsoll.NewEngine(ctx, map[string]string{"SANDBOX_PROVIDER": "wasm"})
	must(err)
	defer engine.Close()
	r, err := engine.Run(ctx, &plimsoll.Request{JavaScript: "console.log(6*7)", MinimumIsolation: "process"})
	must(err)
	if string(r.Stdout) != "42\n" || r.Isolation != "process" {
		must(fmt.Errorf("embedded answered %q on %s", r.Stdout, r.Isolation))
	}
	must(r.Verify())
	_, err = engine.Run(ctx, &plimsoll.Request{JavaScript: "1", MinimumIsolation: "kernel"})
	if !errors.Is(err, plimsoll.ErrInsufficientIsolation) {
		must(fmt.Errorf("a kernel floor on process: %v", err))
	}
	fmt.Println("go embedded: 42 on process, record verified, floor refused")

	remote, err := plimsoll.NewRemote(os.Getenv("PLIMSOLL_URL"), os.Getenv("PLIMSOLL_TOKEN"), false)
	must(err)
	defer remote.Close()
	d, err := remote.Describe(ctx)
	must(err)
	r, err = remote.Run(ctx, &plimsoll.Request{JavaScript: "console.log(6*7)"})
	must(err)
	if string(r.Stdout) != "42\n" {
		must(fmt.Errorf("remote answered %q", r.Stdout))
	}
	fmt.Printf("go remote: 42 from plimsolld (%s on %s)\n", d.Sandbox, d.Isolation)
}
