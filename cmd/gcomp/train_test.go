package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// tinyClassifier is a Fashion-MNIST classifier small enough for the simulator: 4 steps of 16 on
// the data package's 64 fixture images.
const tinyClassifier = `package tiny

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 1, 28, 28)
	fc1, fc2 := nn.NewLinear(b, "fc1", 784, 8), nn.NewLinear(b, "fc2", 8, CLASSES)
	b.Output("logits", fc2.Forward(fc1.Forward(nn.Flatten{}.Forward(x)).Relu()))
}
`

// trainFixture writes model files into a fresh directory, changes to it and returns the --data
// flag of the fixture images.
func trainFixture(t *testing.T) string {
	dir := t.TempDir()
	data, err := filepath.Abs(filepath.Join("..", "..", "data", "testdata", "mnist"))
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"tiny.go":     strings.Replace(tinyClassifier, "CLASSES", "10", 1),
		"five.go":     strings.Replace(tinyClassifier, "CLASSES", "5", 1),
		"wide.go":     strings.Replace(strings.Replace(tinyClassifier, "CLASSES", "10", 1), "784, 8), nn.NewLinear(b, \"fc2\", 8,", "784, 16), nn.NewLinear(b, \"fc2\", 16,", 1),
		"nologits.go": strings.Replace(strings.Replace(tinyClassifier, "CLASSES", "10", 1), `"logits"`, `"scores"`, 1),
		"twoin.go": strings.Replace(strings.Replace(tinyClassifier, "CLASSES", "10", 1), "b.Output(",
			`b.Input("y", ir.I64, 16); b.Output(`, 1),
		"withloss.go": strings.Replace(strings.Replace(tinyClassifier, "CLASSES", "10", 1), "b.Output(",
			`b.Output("loss", b.Zeros(ir.F32)); b.Output(`, 1),
		"batched.go": strings.Replace(strings.Replace(tinyClassifier, "CLASSES", "10", 1), "ir.F32, 16,", "ir.F32, b.Batch(16),", 1),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return "mnist:" + data
}

func runTrain(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"train"}, args...), &out, &errb); code != 0 {
		t.Fatalf("gcomp train %s: exit status %d:\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// Training two epochs in one run and training one, saving, and resuming for one more write the
// same checkpoint, bit for bit, on the reference interpreter and the simulator; the metrics logs
// of both runs parse as gcomp plot reads them and hold the same records but the timings.
func TestTrainResume(t *testing.T) {
	data := trainFixture(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ref adam", []string{"--device", "ref", "--optimizer", "adam", "--lr", "0.01"}},
		{"ref sgd momentum", []string{"--device", "ref", "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "1e-4"}},
		{"ref adamw f16", []string{"--device", "ref", "--optimizer", "adamw", "--amp", "f16", "--seed", "3"}},
		{"sim adam", []string{"--device", "sim", "--optimizer", "adam", "--lr", "0.01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			common := append([]string{"tiny.go", "--data", data}, tc.args...)
			runTrain(t, append(common, "--epochs", "2", "--save", "two.safetensors", "--log", "two.jsonl")...)
			runTrain(t, append(common, "--epochs", "1", "--save", "one.safetensors", "--log", "resumed.jsonl")...)
			out, _ := runTrain(t, append(common, "--epochs", "1", "--resume", "one.safetensors", "--save", "resumed.safetensors", "--log", "resumed.jsonl")...)
			if !strings.HasPrefix(out, "epoch 2/2: train loss ") || !strings.Contains(out, "test accuracy ") {
				t.Errorf("summary of the resumed run: %q", out)
			}
			two, err := os.ReadFile("two.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			resumed, err := os.ReadFile("resumed.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(two, resumed) {
				t.Errorf("the resumed run's checkpoint differs from the uninterrupted run's")
			}
			logs := [2][]metric{readLog(t, "two.jsonl"), readLog(t, "resumed.jsonl")}
			// Per epoch: one step record (4 steps: the record of the epoch's last step), then the summary.
			if len(logs[0]) != 4 || logs[0][2].step != 8 || math.IsNaN(logs[0][3].testAccuracy) {
				t.Errorf("log records %+v, want a step record and a summary per epoch", logs[0])
			}
			if len(logs[0]) != len(logs[1]) {
				t.Fatalf("logs differ:\n%+v\n%+v", logs[0], logs[1])
			}
			for i := range logs[0] {
				if fmt.Sprint(logs[0][i]) != fmt.Sprint(logs[1][i]) { // NaN for absent fields
					t.Errorf("log record %d: %+v, resumed %+v", i, logs[0][i], logs[1][i])
				}
			}
		})
	}
}

// readLog reads a metrics log's records, without their line numbers.
func readLog(t *testing.T, name string) []metric {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := readMetrics(name, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.records {
		l.records[i].line = 0
	}
	return l.records
}

// Prefetching changes when batches are prepared and copied, not what is computed: on ref, on sim
// and on cuda:0 over the simulator-backed driver (copy stream, events, pinned memory; with
// prefetch under schedules that run either stream first), two epochs with and without
// --prefetch write the same checkpoint, bit for bit, and log the same losses.
func TestTrainPrefetch(t *testing.T) {
	data := trainFixture(t)
	schedule := func(s simdriver.Schedule) cuda.Driver {
		return simdriver.NewWithOptions(simdriver.Options{Schedule: s})
	}
	for _, tc := range []struct {
		device string
		off    cuda.Driver   // the driver of the run without prefetch
		on     []cuda.Driver // the drivers of the runs with it
	}{
		{"ref", nil, []cuda.Driver{nil}},
		{"sim", nil, []cuda.Driver{nil}},
		{"cuda:0", simdriver.New(), []cuda.Driver{schedule(simdriver.LowStreamFirst), schedule(simdriver.HighStreamFirst)}},
	} {
		t.Run(tc.device, func(t *testing.T) {
			if testing.Short() {
				tc.on = tc.on[:1]
			}
			defer func() { testDriver = nil }()
			train := func(drv cuda.Driver, prefetch bool, name string) ([]byte, []metric) {
				testDriver = drv
				_, stderr := runTrain(t, "tiny.go", "--data", data, "--device", tc.device, "--epochs", "2", "--optimizer", "adam", "--lr", "0.01",
					fmt.Sprintf("--prefetch=%v", prefetch), "--save", name+".safetensors", "--log", name+".jsonl")
				if !strings.Contains(stderr, "on "+tc.device) {
					t.Fatalf("not trained on %s: %s", tc.device, stderr)
				}
				ckpt, err := os.ReadFile(name + ".safetensors")
				if err != nil {
					t.Fatal(err)
				}
				return ckpt, readLog(t, name+".jsonl")
			}
			wantCkpt, wantLog := train(tc.off, false, "off")
			for i, drv := range tc.on {
				ckpt, log := train(drv, true, fmt.Sprintf("on%d", i))
				if !bytes.Equal(ckpt, wantCkpt) {
					t.Errorf("run %d: the checkpoint with prefetch differs from the one without", i)
				}
				if fmt.Sprint(log) != fmt.Sprint(wantLog) {
					t.Errorf("run %d: log with prefetch %+v, without %+v", i, log, wantLog)
				}
			}
		})
	}
}

// The compiled step on the simulator trains like the reference interpreter: after an epoch the
// checkpoints agree within the comparison tolerance, and both hold the parameters under their
// state_dict names and the optimizer state under the step's names.
func TestTrainSimMatchesRef(t *testing.T) {
	data := trainFixture(t)
	for _, dev := range []string{"ref", "sim"} {
		runTrain(t, "tiny.go", "--data", data, "--device", dev, "--optimizer", "adam", "--lr", "0.01", "--save", dev+".safetensors")
	}
	read := func(name string) (map[string]*tensorio.Array, map[string]string) {
		a, meta, err := tensorio.ReadSafetensorsFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return a, meta
	}
	want, meta := read("ref.safetensors")
	got, _ := read("sim.safetensors")
	var names []string
	for name := range want {
		names = append(names, name)
	}
	if len(want) != 13 || want["fc1.weight"] == nil || want["opt.fc2.bias.exp_avg_sq"] == nil || want["opt.step"] == nil {
		t.Errorf("checkpoint tensors %v, want 4 parameters, 8 Adam slots and opt.step", names)
	}
	if meta["format"] != "pt" || meta["gcomp.optimizer"] != "adam" || meta[metaEpoch] != "1" || meta[metaSteps] != "4" {
		t.Errorf("checkpoint metadata %v", meta)
	}
	compareCheckpoints(t, got, want)
}

// compareCheckpoints checks that every tensor of want is in got, equal within the comparison
// tolerance.
func compareCheckpoints(t *testing.T, got, want map[string]*tensorio.Array) {
	t.Helper()
	for name := range want {
		w, err1 := tensor.FromArray(want[name])
		g, err2 := tensor.FromArray(got[name])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if o := check.Compare(name, g, w, false); !o.Pass() {
			t.Errorf("%s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
}

// --batch traces a model that declares its batch (b.Batch) at another batch: the step takes 32
// rows where the file says 16, so the 64 fixture images make 2 steps per epoch, not 4.
func TestTrainChosenBatch(t *testing.T) {
	data := trainFixture(t)
	for _, tc := range []struct {
		batch, steps string
	}{{"", "4 steps of 16 per epoch"}, {"32", "2 steps of 32 per epoch"}} {
		args := []string{"batched.go", "--data", data, "--device", "ref", "--optimizer", "sgd", "--lr", "0.1", "--save", "out.safetensors"}
		if tc.batch != "" {
			args = append(args, "--batch", tc.batch)
		}
		_, stderr := runTrain(t, args...)
		if !strings.Contains(stderr, tc.steps) {
			t.Errorf("--batch %q: stderr lacks %q:\n%s", tc.batch, tc.steps, stderr)
		}
	}
}

// Every mistake is one line, exit status 1, and leaves no checkpoint and no log behind.
func TestTrainBadInput(t *testing.T) {
	data := trainFixture(t)
	runTrain(t, "tiny.go", "--data", data, "--device", "ref", "--optimizer", "sgd", "--lr", "0.1", "--save", "sgd.safetensors")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no save", []string{"tiny.go", "--data", data}, "--save FILE.safetensors is required"},
		{"no model", []string{"--data", data, "--save", "out.safetensors"}, "no model file given"},
		{"unknown data", []string{"tiny.go", "--data", "cifar10", "--save", "out.safetensors"}, `unknown --data "cifar10"`},
		{"empty data dir", []string{"tiny.go", "--data", "fashion-mnist:", "--save", "out.safetensors"}, `unknown --data "fashion-mnist:"`},
		{"missing data", []string{"tiny.go", "--data", "mnist:nodata", "--save", "out.safetensors"}, "nodata"},
		{"not fashion-mnist", []string{"tiny.go", "--data", "fashion-mnist:" + strings.TrimPrefix(data, "mnist:"), "--save", "out.safetensors"}, "64 images of 28x28, Fashion-MNIST has 60000"},
		{"zero epochs", []string{"tiny.go", "--data", data, "--epochs", "0", "--save", "out.safetensors"}, "--epochs 0: want at least 1"},
		{"negative limit", []string{"tiny.go", "--data", data, "--limit", "-1", "--save", "out.safetensors"}, "--limit -1"},
		{"unknown optimizer", []string{"tiny.go", "--data", data, "--optimizer", "lbfgs", "--save", "out.safetensors"}, `unknown optimizer "lbfgs"`},
		{"sgd without lr", []string{"tiny.go", "--data", data, "--optimizer", "sgd", "--save", "out.safetensors"}, "sgd needs a learning rate"},
		{"negative lr", []string{"tiny.go", "--data", data, "--lr", "-1", "--save", "out.safetensors"}, "invalid learning rate -1"},
		{"momentum for adam", []string{"tiny.go", "--data", data, "--momentum", "0.9", "--save", "out.safetensors"}, "--momentum is for sgd"},
		{"bad amp", []string{"tiny.go", "--data", data, "--amp", "fp8", "--save", "out.safetensors"}, `unknown AMP dtype "fp8"`},
		{"bad device", []string{"tiny.go", "--data", data, "--device", "tpu", "--save", "out.safetensors"}, `unknown device "tpu"`},
		{"save dir missing", []string{"tiny.go", "--data", data, "--save", "nodir/out.safetensors"}, "directory nodir does not exist"},
		{"log dir missing", []string{"tiny.go", "--data", data, "--save", "out.safetensors", "--log", "nodir/out.jsonl"}, "directory nodir does not exist"},
		{"batch of a fixed-batch model", []string{"tiny.go", "--data", data, "--batch", "32", "--save", "out.safetensors"}, "tiny.go: batch 32 asked for, but the model never declares its batch: call b.Batch(N)"},
		{"no logits", []string{"nologits.go", "--data", data, "--save", "out.safetensors"}, "has no output logits"},
		{"own loss", []string{"withloss.go", "--data", data, "--save", "out.safetensors"}, "already has an output loss"},
		{"two inputs", []string{"twoin.go", "--data", data, "--save", "out.safetensors"}, "want one input of images"},
		{"too few classes", []string{"five.go", "--data", data, "--save", "out.safetensors"}, "the model's logits have 5 classes"},
		{"too few images", []string{"tiny.go", "--data", data, "--limit", "10", "--save", "out.safetensors"}, "10 training images make no batch of 16"},
		{"zero lr", []string{"tiny.go", "--data", data, "--lr", "0", "--save", "out.safetensors"}, "invalid learning rate 0 (--lr): want a positive number"},
		{"NaN lr", []string{"tiny.go", "--data", data, "--lr", "NaN", "--save", "out.safetensors"}, "invalid learning rate NaN"},
		{"checkpoint from a device", []string{"tiny.go", "--data", data, "--resume", "/dev/zero", "--save", "out.safetensors"}, "tensorio: /dev/zero: "},
		{"missing checkpoint", []string{"tiny.go", "--data", data, "--resume", "none.safetensors", "--save", "out.safetensors"}, "none.safetensors"},
		{"other optimizer", []string{"tiny.go", "--data", data, "--resume", "sgd.safetensors", "--save", "out.safetensors"}, `a checkpoint of optimizer "sgd", this run uses adam`},
		{"schedule with resume", []string{"tiny.go", "--data", data, "--resume", "sgd.safetensors", "--lr-schedule", "cosine", "--save", "out.safetensors"}, "--resume continues the checkpoint's learning-rate schedule"},
		{"unknown schedule", []string{"tiny.go", "--data", data, "--lr-schedule", "linear", "--save", "out.safetensors"}, `--lr-schedule "linear": want step, cosine or onecycle`},
		{"step schedule without size", []string{"tiny.go", "--data", data, "--lr-schedule", "step", "--save", "out.safetensors"}, "--lr-schedule step needs --lr-step-size N"},
		{"zero step size", []string{"tiny.go", "--data", data, "--lr-schedule", "step", "--lr-step-size", "0", "--save", "out.safetensors"}, "step size 0 epochs"},
		{"gamma without schedule", []string{"tiny.go", "--data", data, "--lr-gamma", "0.5", "--save", "out.safetensors"}, "need --lr-schedule"},
		{"schedule flags with data-parallel ranks", []string{"tiny.go", "--data", data, "--device", "sim:0,sim:1", "--lr-schedule", "step", "--save", "out.safetensors"}, "--lr-schedule step needs --lr-step-size N"},
		{"onecycle with a minimum", []string{"tiny.go", "--data", data, "--lr-schedule", "onecycle", "--lr-min", "0.1", "--save", "out.safetensors"}, "--lr-min is for --lr-schedule cosine"},
		{"onecycle with momentum", []string{"tiny.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--lr-schedule", "onecycle", "--save", "out.safetensors"}, "--momentum: --lr-schedule onecycle cycles sgd's momentum"},
		{"onecycle with gamma", []string{"tiny.go", "--data", data, "--lr-schedule", "onecycle", "--lr-gamma", "0.5", "--save", "out.safetensors"}, "--lr-step-size and --lr-gamma are for --lr-schedule step"},
		{"other model", []string{"wide.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--resume", "sgd.safetensors", "--save", "out.safetensors"}, "gcomp train: sgd.safetensors: tensor fc1.weight is f32[8,784], the step wants f32[16,784]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(append([]string{"train"}, tc.args...), &stdout, &stderr); code != 1 {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("stderr = %q, want one line containing %q", msg, tc.want)
			}
			for _, f := range []string{"out.safetensors", "out.jsonl"} {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("%s was written by a failing command", f)
					os.Remove(f)
				}
			}
		})
	}
}

// The MLP example learns from a slice of the real Fashion-MNIST when it is installed: one epoch
// of 20 steps on the first 1280 images reaches 65% test accuracy on the first 1280 test images
// (10% is chance).
func TestTrainFashionMNISTSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not reading Fashion-MNIST")
	}
	if _, err := os.Stat(data.FashionMNISTDir); err != nil {
		t.Skip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")
	}
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "fashion", "mlp", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	out, _ := runTrain(t, model, "--data", "fashion-mnist", "--limit", "1280", "--device", "ref", "--save", "mlp.safetensors")
	var acc float64
	if i := strings.Index(out, "test accuracy "); i < 0 {
		t.Fatalf("no test accuracy in %q", out)
	} else if _, err := fmt.Sscanf(out[i:], "test accuracy %f%%", &acc); err != nil {
		t.Fatal(err)
	}
	if acc < 55 {
		t.Errorf("test accuracy %.2f%% after one epoch, want at least 55%%", acc)
	}
}

// --stats compiles the whole train step (f32, and with --amp bf16) and prints its cost report
// instead of training; it needs no --save and writes nothing.
func TestTrainStats(t *testing.T) {
	fixtureData := trainFixture(t)
	fixtures, _ := os.ReadDir(".")
	var reports [2]struct {
		Kernels       int     `json:"kernels"`
		EagerKernels  int     `json:"eager_kernels"`
		ArenaBytes    int64   `json:"arena_bytes"`
		ModeledTimeUS float64 `json:"modeled_time_us"`
	}
	for i, amp := range []string{"", "bf16"} {
		args := []string{"tiny.go", "--data", fixtureData, "--optimizer", "adam", "--stats=json"}
		if amp != "" {
			args = append(args, "--amp", amp)
		}
		stdout, _ := runTrain(t, args...)
		if err := json.Unmarshal([]byte(stdout), &reports[i]); err != nil {
			t.Fatalf("--stats=json printed %q: %v", stdout, err)
		}
		if r := reports[i]; r.Kernels == 0 || r.Kernels >= r.EagerKernels || r.ModeledTimeUS <= 0 {
			t.Errorf("amp %q: report %+v", amp, r)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != len(fixtures) {
		t.Errorf("--stats wrote files: %v", entries)
	}
	stdout, _ := runTrain(t, "tiny.go", "--optimizer", "sgd", "--lr", "0.1", "--stats")
	if !strings.Contains(stdout, "train step of tiny.go, sgd") || !strings.Contains(stdout, "modeled time") {
		t.Errorf("--stats printed:\n%s", stdout)
	}
}
