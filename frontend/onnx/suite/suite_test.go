package suite_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// ONNX's backend-test tolerances (numpy.testing.assert_allclose: |got - want| ≤ atol + rtol·|want|,
// NaN equal to NaN).
const (
	rtol = 1e-3
	atol = 1e-7
)

// simBound is the largest case (in elements over all inputs and outputs) run on the simulator;
// larger cases run on the reference interpreter only, to keep the suite's time in CI reasonable.
const simBound = 1 << 18

const statusFile = "testdata/status.txt"

// nodeDir finds the suite: .cache/onnx-testdata (scripts/fetch-onnx-testdata.sh) or the
// installed package.
func nodeDir(t *testing.T) string {
	root, _ := filepath.Abs("../../..")
	for _, d := range []string{
		filepath.Join(root, ".cache/onnx-testdata/usr/share/libonnx-testdata/data/node"),
		"/usr/share/libonnx-testdata/data/node",
	} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	if os.Getenv("GCOMP_REQUIRE_PTXAS") != "" {
		t.Fatal("ONNX's node test data is missing: run scripts/fetch-onnx-testdata.sh (make tools)")
	}
	t.Skip("ONNX's node test data is missing: run scripts/fetch-onnx-testdata.sh (make tools) to run the suite")
	return ""
}

type outcome struct {
	status string // "pass", "pass ref; sim: REASON", "unsupported: REASON"
	fail   string // a wrong answer or a crash: the test fails whatever the status file says
}

func TestNodeSuite(t *testing.T) {
	dir := nodeDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("ONNX_CASE") // a substring, to run some cases
	got := map[string]outcome{}
	var names []string
	start := time.Now()
	for _, e := range entries {
		if !e.IsDir() || !strings.Contains(e.Name(), only) {
			continue
		}
		name := e.Name()
		names = append(names, name)
		got[name] = runCase(filepath.Join(dir, name))
		if o := got[name]; o.fail != "" {
			t.Errorf("%s: %s", name, o.fail)
		}
	}
	t.Logf("%d cases in %v", len(names), time.Since(start).Round(time.Millisecond))
	refPass, simPass := 0, 0
	for _, n := range names {
		s := got[n].status
		if s == "pass" || strings.HasPrefix(s, "pass ref") {
			refPass++
		}
		if s == "pass" {
			simPass++
		}
	}
	t.Logf("ref: %d/%d pass; sim: %d/%d pass", refPass, len(names), simPass, len(names))
	if only != "" {
		for _, n := range names {
			t.Logf("%s: %s", n, got[n].status)
		}
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# ONNX backend node suite (libonnx-testdata 1.12): one line per case, \"pass\" (reference\n")
	fmt.Fprintf(&sb, "# interpreter and PTX simulator), \"pass ref; sim: REASON\", or \"unsupported: REASON\".\n")
	fmt.Fprintf(&sb, "# Cases over %d elements (inputs and outputs) run on the reference interpreter only.\n", simBound)
	fmt.Fprintf(&sb, "# ref: %d/%d pass; sim: %d/%d pass. Regenerate with go test ./frontend/onnx/suite -update.\n", refPass, len(names), simPass, len(names))
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&sb, "%s: %s\n", n, got[n].status)
	}
	if golden.Updating() {
		if err := os.WriteFile(statusFile, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readStatus(t)
	for _, n := range names {
		w, ok := want[n]
		switch {
		case !ok:
			t.Errorf("%s: not in %s (now %q): run go test ./frontend/onnx/suite -update", n, statusFile, got[n].status)
		case w != got[n].status:
			t.Errorf("%s: %s says %q, now %q: fix the regression, or run -update if the change is an improvement", n, statusFile, w, got[n].status)
		}
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			t.Errorf("%s: in %s but not in the suite", n, statusFile)
		}
	}
}

func readStatus(t *testing.T) map[string]string {
	data, err := os.ReadFile(statusFile)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, status, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("%s: bad line %q", statusFile, line)
		}
		m[name] = status
	}
	return m
}

func readTensor(path string) (*onnxpb.TensorProto, *tensor.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var p onnxpb.TensorProto
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	x, err := onnx.Tensor(&p, "")
	return &p, x, err
}

// runCase imports one case (binding shape-determining inputs from its own input files, as
// --const does), runs it and compares.
func runCase(dir string) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{status: "crash", fail: fmt.Sprintf("panic: %v", r)}
		}
	}()
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return outcome{status: "error", fail: err.Error()}
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return outcome{status: "error", fail: err.Error()}
	}
	// The case's inputs, in the order of the graph's non-initializer inputs.
	inits := map[string]bool{}
	for _, t := range m.GetGraph().GetInitializer() {
		inits[t.GetName()] = true
	}
	var inNames []string
	var isTensor []bool
	for _, in := range m.GetGraph().GetInput() {
		if !inits[in.GetName()] {
			inNames = append(inNames, in.GetName())
			isTensor = append(isTensor, in.GetType().GetTensorType() != nil)
		}
	}
	inputs := map[string]*tensor.Tensor{}
	for i, name := range inNames {
		if !isTensor[i] {
			continue // a sequence or an optional: the import refuses it
		}
		_, x, err := readTensor(filepath.Join(dir, "test_data_set_0", fmt.Sprintf("input_%d.pb", i)))
		if err != nil {
			if r, ok := onnx.IsUnsupported(err); ok {
				return outcome{status: "unsupported: input " + name + ": " + r}
			}
			if os.IsNotExist(err) {
				continue // an optional input left out
			}
			return outcome{status: "error", fail: err.Error()}
		}
		inputs[name] = x
	}
	var wants []*tensor.Tensor
	for i, out := range m.GetGraph().GetOutput() {
		if out.GetType().GetTensorType() == nil {
			wants = append(wants, nil)
			continue
		}
		_, x, err := readTensor(filepath.Join(dir, "test_data_set_0", fmt.Sprintf("output_%d.pb", i)))
		if err != nil {
			if r, ok := onnx.IsUnsupported(err); ok {
				return outcome{status: "unsupported: output: " + r}
			}
			return outcome{status: "unsupported: output " + fmt.Sprint(i) + " is not a tensor"}
		}
		wants = append(wants, x)
	}
	opt := onnx.Options{Consts: map[string]*tensor.Tensor{}}
	var model *onnx.Model
	for {
		model, err = onnx.Import("model.onnx", data, dir, opt)
		var nc *onnx.NeedConst
		if errors.As(err, &nc) && inputs[nc.Input] != nil && opt.Consts[nc.Input] == nil {
			opt.Consts[nc.Input] = inputs[nc.Input]
			continue
		}
		break
	}
	if err != nil {
		if r, ok := onnx.IsUnsupported(err); ok {
			return outcome{status: "unsupported: " + oneLine(r)}
		}
		return outcome{status: "error", fail: "import: " + err.Error()}
	}
	g := model.Graph
	in := map[string]*tensor.Tensor{}
	size := 0
	for _, n := range model.Inputs {
		if n.IR != "" {
			x := inputs[n.ONNX]
			if x == nil {
				return outcome{status: "error", fail: "no value for input " + n.ONNX}
			}
			in[n.IR] = x
			size += x.Len()
		}
	}
	for _, w := range wants {
		if w == nil {
			return outcome{status: "error", fail: "a non-tensor output was imported"}
		}
		size += w.Len()
	}
	weights, err := model.Weights.Map()
	if err != nil {
		return outcome{status: "error", fail: "weights: " + err.Error()}
	}
	got, err := ref.Run(g, in, weights)
	if err != nil {
		return outcome{status: "error", fail: "reference interpreter: " + err.Error()}
	}
	if msg := compare(model, got, wants); msg != "" {
		return outcome{status: "wrong", fail: "reference interpreter: " + msg}
	}
	if size > simBound {
		return outcome{status: fmt.Sprintf("pass ref; sim: not run (%d elements, over the bound)", size)}
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		return outcome{status: "pass ref; sim: compile: " + oneLine(err.Error())}
	}
	dev := simdev.New(simdev.Options{Workers: 1})
	defer dev.Close()
	prog, err := executor.Load(dev, res.Artifact)
	if err != nil {
		return outcome{status: "pass ref; sim: load: " + oneLine(err.Error())}
	}
	defer prog.Close()
	if err := prog.SetParams(weights); err != nil {
		return outcome{status: "error", fail: "sim params: " + err.Error()}
	}
	r, err := prog.Run(in)
	if err != nil {
		return outcome{status: "pass ref; sim: run: " + oneLine(err.Error())}
	}
	if msg := compare(model, r.Outputs, wants); msg != "" {
		return outcome{status: "wrong", fail: "sim: " + msg}
	}
	return outcome{status: "pass"}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func compare(m *onnx.Model, got map[string]*tensor.Tensor, wants []*tensor.Tensor) string {
	for i, n := range m.Outputs {
		g, w := got[n.IR], wants[i]
		if g == nil {
			return "no output " + n.ONNX
		}
		if g.Type.DType != w.Type.DType || !g.Type.Shape.Equal(w.Type.Shape) {
			return fmt.Sprintf("output %s is %s, want %s", n.ONNX, g.Type, w.Type)
		}
		for j := 0; j < w.Len(); j++ {
			a, b := g.At(j), w.At(j)
			if math.IsNaN(a) && math.IsNaN(b) || a == b {
				continue
			}
			if !(math.Abs(a-b) <= atol+rtol*math.Abs(b)) {
				return fmt.Sprintf("output %s%v = %v, want %v", n.ONNX, index(w.Type.Shape, j), a, b)
			}
		}
	}
	return ""
}

func index(s ir.Shape, i int) []int {
	idx := make([]int, len(s))
	for d := len(s) - 1; d >= 0; d-- {
		if s[d] > 0 {
			idx[d] = i % s[d]
			i /= s[d]
		}
	}
	return idx
}
