// Command gcomp compiles deep-learning models written in Go (or the .gir text form) and runs them.
//
//	gcomp build MODEL -o model.ptx [--target sm_80] [--tf32]   compile (model.plan.json goes beside)
//	gcomp check MODEL                                simulate the compiled model and compare with the reference
//	gcomp dump MODEL                                 print the graph in the .gir text form
//	gcomp run MODEL|model.ptx --device ref|sim [--weights W] [--input NAME=FILE.npy]... --output-dir DIR
//	gcomp init-weights MODEL -o w.safetensors        write the model's seeded initial weights
//	gcomp sim FILE.ptx --entry NAME --grid X --block X [--arg SPEC]...   run PTX on the simulator
//
// MODEL is a .go file declaring func Model(b *frontend.Builder) (another function with --entry),
// a .gir file, or an .onnx model (with --shape NAME=1x3x224x224 for symbolic dims and
// --const NAME=FILE.pb|.npy for inputs that decide shapes; --input also takes TensorProto .pb). Every failure prints one message and exits with status 1; nothing is written to -o
// or --output-dir unless the command succeeds.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
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
		{"train", "train a classifier on Fashion-MNIST: progress, test accuracy per epoch, safetensors checkpoints, metrics log", cmdTrain},
		{"plot", "draw loss and accuracy curves from a training metrics log (JSON lines) as a PNG", cmdPlot},
		{"version", "print gcomp's version", cmdVersion},
	}
}

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
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
			if err := c.run(args[1:], stdout, stderr); err != nil {
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "gcomp compiles deep-learning models written in Go into CUDA kernels.\n\nUsage: gcomp COMMAND [arguments]\n\nCommands:")
	cs := append([]command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
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
