package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gcomp/gcomp/lm"
	"github.com/gcomp/gcomp/lmserve"
)

// serveStop, when set (by tests), replaces SIGINT and SIGTERM as the signal to drain and stop.
var serveStop <-chan struct{}

func cmdServe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on (host:port; port 0 picks a free one)")
	maxBatch := fs.Int("max-batch", 8, "sequence slots decoded together (continuous batching); 1 serves one request at a time")
	maxSeq := fs.Int("max-seq", 0, "the KV cache's length in tokens, prompt and completion (default: the model's context)")
	maxQueue := fs.Int("max-queue", 1024, "requests waiting for a slot; more get 429")
	name := fs.String("name", "", "the model's id in the API (default: the folder's name)")
	device := fs.String("device", "auto", "where to run: auto (a GPU, else the simulator), cuda:N, sim or ref")
	noSimChecks := fs.Bool("no-sim-checks", false, "run the simulator without its memory, race and barrier checks (faster)")
	drain := fs.Duration("drain-timeout", 60*time.Second, "on SIGINT or SIGTERM, how long running requests may take to finish")
	target := addTargetFlags(fs)
	dir, err := parseModelArgs(fs, args, stdout, "MODEL_DIR [--addr 127.0.0.1:8080] [--max-batch N] [--max-seq T] [--device auto|cuda:N|sim|ref]")
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp serve: "+format, args...) }
	switch {
	case *maxBatch < 1 || *maxBatch > lm.MaxBatch:
		return fail("--max-batch %d: want 1 to %d", *maxBatch, lm.MaxBatch)
	case *maxSeq < 0:
		return fail("--max-seq %d: want ≥ 0", *maxSeq)
	case *maxQueue < 1:
		return fail("--max-queue %d: want ≥ 1", *maxQueue)
	}
	copt, err := target.options()
	if err != nil {
		return fail("%v", err)
	}
	folder, err := lm.LoadFolder(dir, *maxSeq)
	if err != nil {
		return fail("%v", err)
	}
	if folder.Tokenizer == nil {
		return fail("%s has no tokenizer (tokenizer.json, vocab.json with merges.txt, or tokenizer.model): the server reads prompts as text", dir)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail("--addr %s: %v", *addr, err)
	}
	defer ln.Close()
	srv, err := lmserve.Open(folder, lmserve.OpenOptions{
		Engine:   lm.EngineOptions{Device: *device, Batch: *maxBatch, Compiler: copt, NoSimChecks: *noSimChecks},
		Name:     *name,
		MaxQueue: *maxQueue,
	})
	if err != nil {
		return fail("%v", err)
	}
	defer srv.Close()

	stop := serveStop
	if stop == nil {
		// Drain on the first signal instead of gcomp's exit-at-once handler.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
		ch := make(chan struct{})
		go func() { <-sigs; close(ch) }()
		stop = ch
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "serving %s on http://%s (%d slots, %d tokens each, %s)\n", dir, ln.Addr(), *maxBatch, folder.Model.MaxSeq(), *device)
	select {
	case err := <-served:
		return fail("%v", err)
	case <-stop:
	}
	fmt.Fprintln(stderr, "gcomp serve: draining: finishing the running requests")
	ctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	drainErr := srv.Drain(ctx)
	if err := hs.Shutdown(ctx); err != nil && drainErr == nil {
		drainErr = err
	}
	if drainErr != nil && !errors.Is(drainErr, http.ErrServerClosed) {
		return fail("draining: %v (requests still running were cut)", drainErr)
	}
	return nil
}
