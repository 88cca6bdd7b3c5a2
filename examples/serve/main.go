// Command serve is an HTTP inference server for any model gcomp compiles: a model.go, .gir or
// .onnx file, served on net/http with JSON and .npy bodies and dynamic batching (package
// serve has the endpoints).
//
//	go run ./examples/serve --device sim --window 2ms examples/mlp/model.go
//	curl -s 127.0.0.1:8080/v1/model
//	curl -s -H 'Content-Type: application/json' \
//	    -d '{"inputs":{"x":{"shape":[1,64],"data":[...]}}}' 127.0.0.1:8080/v1/infer
//
// --max-batch N (a model.go that declares its batch with b.Batch) or --max-shape (an .onnx model's
// dynamic axes) builds the model once for 1 to N rows, so each run carries only the rows of the
// requests it gathered instead of padding them to the batch:
//
//	go run ./examples/serve --device sim --max-batch 8 examples/mlp/model.go
//
// SIGINT or SIGTERM shuts it down gracefully: no new connections, the requests in flight
// finish (up to --grace), then the session closes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/serve"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// list collects a repeatable flag's values.
type list []string

func (l *list) String() string     { return "" }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// shapes collects --shape NAME=D1xD2... flags.
type shapes map[string][]int

func (s shapes) String() string { return "" }
func (s shapes) Set(v string) error {
	name, shape, err := load.ParseShape(v)
	s[name] = shape
	return err
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	dev := flag.String("device", "auto", "auto, cuda:N, sim or ref")
	weights := flag.String("weights", "", "safetensors file of the parameters (default: the model's initializers)")
	seed := flag.Uint64("seed", 0, "seed of the initializers of parameters the weights do not hold")
	window := flag.Duration("window", 2*time.Millisecond, "dynamic batching: how long a request waits for others to fill the batch (0: every request runs alone)")
	pool := flag.Int("pool", runtime.GOMAXPROCS(0), "runs in flight at once")
	maxBody := flag.Int64("max-body", serve.DefaultMaxBodyBytes, "largest request body in bytes")
	grace := flag.Duration("grace", 30*time.Second, "how long shutdown waits for requests in flight")
	readTimeout := flag.Duration("read-timeout", serve.DefaultReadTimeout, "how long a client may take to send a whole request")
	writeTimeout := flag.Duration("write-timeout", serve.DefaultWriteTimeout, "how long a request may take from its header to the end of its reply")
	idleTimeout := flag.Duration("idle-timeout", serve.DefaultIdleTimeout, "how long an idle keep-alive connection stays open")
	target := flag.String("target", "sm_80", "GPU architecture")
	onnxShapes, maxShapes := shapes{}, shapes{}
	flag.Var(onnxShapes, "shape", "an .onnx input's shape, NAME=1x3x224x224 (its batch, say; repeatable)")
	maxBatch := flag.Int("max-batch", 0, "build a model.go over a batch of 1 to N rows (it declares its batch with b.Batch): runs carry only the rows that came")
	flag.Var(maxShapes, "max-shape", "bound an .onnx input's dynamic axes, NAME=8x3x224x224: built once for every size in range (repeatable)")
	var specialize list
	flag.Var(&specialize, "specialize", "for a model with dims, also compile variants for smaller ranges: NAME=BOUND (repeatable) or auto")
	flag.Parse()
	if flag.NArg() != 1 {
		return fmt.Errorf("usage: serve [flags] MODEL (model.go, .gir or .onnx)")
	}
	opts := gcomp.Options{Target: *target, Shapes: onnxShapes, MaxBatch: *maxBatch, Specialize: specialize}
	if len(maxShapes) > 0 {
		opts.MaxShapes = maxShapes
	}
	model, err := gcomp.CompileFile(flag.Arg(0), opts)
	if err != nil {
		return err
	}
	sess, err := gcomp.Open(model, gcomp.SessionOptions{Device: *dev, WeightsFile: *weights, InitWeights: true, Seed: *seed, Pool: *pool})
	if err != nil {
		return err
	}
	defer sess.Close()
	srv := serve.New(sess, serve.Config{Window: *window, MaxBodyBytes: *maxBody, Pool: *pool,
		ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout})
	hs := srv.HTTPServer(*addr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	log.Printf("serving %s (batch %d) on %s at http://%s", model.Name(), srv.Batch(), sess.Device(), *addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Printf("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	err = hs.Shutdown(sctx)
	srv.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("requests still running after %v", *grace)
	}
	return err
}
