// Command gcomp compiles deep-learning models written in Go (or the .gir text form) and runs them.
//
//	gcomp build MODEL -o model.ptx [--target sm_80] [--tf32] [--amp bf16|f16]   compile (model.plan.json goes beside)
//	gcomp check MODEL                                simulate the compiled model and compare with the reference
//	gcomp dump MODEL                                 print the graph in the .gir text form
//	gcomp run MODEL|model.ptx [--device ref|sim|auto] [--weights W] [--input NAME=FILE.npy]... [--output-dir DIR]   outputs printed, or written as DIR/NAME.npy
//	gcomp init-weights MODEL -o w.safetensors        write the model's seeded initial weights
//	gcomp generate MODEL_DIR --prompt TEXT [--max-new-tokens N] [--temperature T] [--device ...]   generate text
//	gcomp tokenize MODEL_DIR --text TEXT | --decode 1,2,3   a model folder's tokenizer
//	gcomp quantize MODEL_DIR --int8|--int4 [--group 128] [--sym] -o OUT_DIR [--force]   int8/int4 weights, GPTQ layout
//	gcomp sim FILE.ptx --entry NAME --grid X --block X [--arg SPEC]...   run PTX on the simulator
//
// MODEL is a .go file declaring func Model(b *frontend.Builder) (another function with --entry),
// a .gir file, or an .onnx model (with --shape NAME=1x3x224x224 to fix symbolic dims, or
// --max-shape NAME=8x3x224x224 to bound them and build once for every size in range, and
// --const NAME=FILE.pb|.npy for inputs that decide shapes; --input also takes TensorProto .pb). Every failure prints one message and exits with status 1; nothing is written to -o
// or --output-dir unless the command succeeds. --output-dir's missing parents are made, as
// mkdir -p makes them, once the outputs are ready; a file or a symbolic link in their way is an
// error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/gcomp/gcomp/tensorio"
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"build", "compile a model to PTX and a launch plan (or --emit plan, ir, dot, kernels)", cmdBuild},
		{"check", "run a compiled model on the simulator with all checks and compare with the reference", cmdCheck},
		{"dump", "print a model's graph in the .gir text form", cmdDump},
		{"run", "run a model and write its outputs as .npy files", cmdRun},
		{"init-weights", "write a model's seeded initial weights as safetensors", cmdInitWeights},
		{"sim", "run a PTX kernel on the PTX simulator (no GPU needed)", cmdSim},
		{"devices", "list the GPUs, the simulator and the reference interpreter, and which one --device auto picks", cmdDevices},
		{"generate", "generate text from a Hugging Face model folder (GPT-2, Llama family) with a KV cache, streaming tokens", cmdGenerate},
		{"serve", "serve a language model folder over HTTP with continuous batching (OpenAI-style completions, streaming)", cmdServe},
		{"quantize", "quantize a Llama-family model folder's linear layers to int8 or int4 (round to nearest), written in GPTQ's layout", cmdQuantize},
		{"tokenize", "encode text to token ids, or decode ids to text, with a model folder's tokenizer", cmdTokenize},
		{"train", "train a classifier on Fashion-MNIST: progress, test accuracy per epoch, safetensors checkpoints, metrics log", cmdTrain},
		{"plot", "draw loss and accuracy curves from a training metrics log (JSON lines) as a PNG", cmdPlot},
		{"version", "print gcomp's version", cmdVersion},
	}
}

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go exitOnInterrupt(sigs, os.Stderr, os.Exit)
	status := Main(os.Args[1:], os.Stdout, quietOnInterrupt{os.Stderr})
	if interrupted.Load() {
		select {} // the interrupt handler prints its one line and exits
	}
	os.Exit(status)
}

// interrupted is set before an interrupt removes the temporaries: a write that then fails (its
// temporary gone) is a consequence of the interrupt, not an error of its own to report.
var interrupted atomic.Bool

// quietOnInterrupt drops what the command writes to stderr once it has been interrupted, so the
// user sees the interrupt's one line only.
type quietOnInterrupt struct{ w io.Writer }

func (q quietOnInterrupt) Write(p []byte) (int, error) {
	if interrupted.Load() {
		return len(p), nil
	}
	return q.w.Write(p)
}

// exitOnInterrupt waits for SIGINT or SIGTERM, then removes the temporaries of writes in
// progress (a half-written .NAME.tmpNNN, a .gcomp-out-* directory) and exits with status 1.
func exitOnInterrupt(sigs <-chan os.Signal, stderr io.Writer, exit func(int)) {
	sig := <-sigs
	interrupted.Store(true)
	tensorio.RemoveTemporaries()
	fmt.Fprintf(stderr, "gcomp: interrupted (%v)\n", sig)
	exit(1)
}

// errUsage marks an error whose message has been printed already.
var errUsage = errors.New("usage")

// Main runs gcomp with args and returns the exit status. A panic anywhere below is turned into an
// internal-error message: users never see a Go stack trace.
func Main(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "gcomp: internal error: %v\n(please report this with the model that caused it)\n", r)
			if os.Getenv("GCOMP_TRACE") != "" {
				stderr.Write(debug.Stack())
			}
			status = 1
		}
	}()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			out := &errWriter{w: stdout}
			err := c.run(args[1:], out, stderr)
			if out.err != nil && (err == nil || errors.Is(err, out.err)) {
				// A report that did not reach its reader (stdout on a full disk, a closed pipe) is a failure.
				err = fmt.Errorf("gcomp %s: writing standard output: %v", c.name, out.err)
			}
			if err != nil {
				if errors.Is(err, errHelp) {
					return 0
				}
				if !errors.Is(err, errUsage) {
					fmt.Fprintln(stderr, strings.TrimRight(err.Error(), "\n"))
				}
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "gcomp: unknown command %q (run 'gcomp help')\n", args[0])
	return 1
}

// errWriter remembers the first error writing to w; later writes are dropped.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "gcomp compiles deep-learning models written in Go into CUDA kernels.\n\nUsage: gcomp COMMAND [arguments]\n\nCommands:")
	cs := append([]command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nAn .onnx model's symbolic input dims are fixed with --shape NAME=1x3x224x224, or bounded with\n--max-shape NAME=8x3x224x224 to build once for every size in range (build, run, check, dump).")
	fmt.Fprintln(w, "\nRun 'gcomp COMMAND -h' for a command's flags.")
}

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(stdout, "gcomp %s\n", v)
	return nil
}
