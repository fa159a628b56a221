package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// Trigger a run of the job "echo" and follow it to its end, as a CI step
// that must not pass unless the job succeeded.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// SCHEDULER_SERVER may list several replicas: "http://a:8080,http://b:8080".
	c, err := client.New(os.Getenv("SCHEDULER_SERVER"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseIdleConnections()

	t, err := c.Trigger(ctx, "echo", nil, "")
	if err != nil {
		log.Fatal(err)
	}
	run, err := c.Wait(ctx, t.RunID, 100*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Job, run.Outcome, run.Output)
	// Output: echo succeeded hello
}

// An answer other than 2xx carries the API's error code.
func ExampleAPIError() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SCHEDULER_SERVER"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseIdleConnections()

	_, err = c.Trigger(ctx, "no-such-job", nil, "")
	if e, ok := client.AsError(err); ok {
		fmt.Println(e.Status, e.Code)
	}
	// Output: 404 unknown_job
}
