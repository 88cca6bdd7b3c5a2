package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/serve"
)

// tinyRows is tiny over the batch the function declares with b.Batch(2).
func tinyRows(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(2), 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 2).Forward(x).Relu())
}

var tinyWeights = map[string]*gcomp.Tensor{
	"fc.weight": gcomp.Float32([]float32{1, 0, 0, 0.5, 0.5, 0.5}, 2, 3),
	"fc.bias":   gcomp.Float32([]float32{0.25, -1}, 2),
}

// serveModel starts a server for m on dev with weights and returns it with its address.
func serveModel(t *testing.T, m *gcomp.Model, dev string, weights map[string]*gcomp.Tensor, cfg serve.Config) (*serve.Server, string) {
	t.Helper()
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: dev, Pool: 1, Weights: weights})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(s, cfg)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close(); s.Close() })
	return srv, hs.URL
}

// rowsOf are n seeded rows of x.
func rowsOf(n, seed int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		for j := range 3 {
			rows[i] = append(rows[i], float32(((seed+i)*5+j*3)%9)-3.5)
		}
	}
	return rows
}

// reference is tiny built at batch n run on the reference interpreter: what a request of n rows
// must get.
func reference(t *testing.T, rows [][]float32) []float64 {
	t.Helper()
	m, err := gcomp.Compile("tiny", tinyRows, gcomp.Options{Batch: len(rows)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", Pool: 1, Weights: tinyWeights})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32(slices.Concat(rows...), len(rows), 3)})
	if err != nil {
		t.Fatal(err)
	}
	y, err := out["y"].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(y))
	for i, v := range y {
		want[i] = float64(v)
	}
	return want
}

// A model built over a symbolic batch (Options.MaxBatch) serves requests of 1 to N rows, each
// run carrying exactly the rows that came: every request gets the rows the static model gives,
// and no run is padded. The static model of batch N pads every run to N, as before.
func TestSymbolicBatchNoPadding(t *testing.T) {
	const bound = 4
	symbolic, err := gcomp.Compile("tiny", tinyRows, gcomp.Options{MaxBatch: bound})
	if err != nil {
		t.Fatal(err)
	}
	static, err := gcomp.Compile("tiny", tinyRows, gcomp.Options{Batch: bound})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		model *gcomp.Model
		dev   string
		pad   func(rows int) int64 // the zero rows a run of that many rows carries
	}{
		{"symbolic ref", symbolic, "ref", func(int) int64 { return 0 }},
		{"symbolic sim", symbolic, "sim", func(int) int64 { return 0 }},
		{"static ref", static, "ref", func(rows int) int64 { return int64(bound - rows) }},
		{"static sim", static, "sim", func(rows int) int64 { return int64(bound - rows) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := serveModel(t, tc.model, tc.dev, tinyWeights, serve.Config{})
			url += "/v1/infer"
			if srv.Batch() != bound {
				t.Errorf("batch %d, want %d", srv.Batch(), bound)
			}
			var want serve.Stats
			for n := 1; n <= bound; n++ {
				rows := rowsOf(n, n)
				r := infer(t, url, rows...)
				if y := r.Outputs["y"]; !slices.Equal(y.Shape, []int{n, 2}) || !slices.Equal(y.Data, reference(t, rows)) {
					t.Errorf("%d rows: y %v %v, want the static model's %v", n, y.Shape, y.Data, reference(t, rows))
				}
				want.Requests, want.Runs, want.Rows, want.Padded = want.Requests+1, want.Runs+1, want.Rows+int64(n), want.Padded+tc.pad(n)
				if st := srv.Stats(); st != want {
					t.Errorf("after %d rows: stats %+v, want %+v", n, st, want)
				}
			}
		})
	}
}

// With dynamic batching, a symbolic batch's run carries the rows of the requests gathered, and
// only those: requests of 1 and 3 rows fill the bound of 4 and run at once; a lone request of 2
// rows runs after the window with its 2 rows.
func TestSymbolicBatchGathered(t *testing.T) {
	m, err := gcomp.Compile("tiny", tinyRows, gcomp.Options{MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv, url := serveModel(t, m, "ref", tinyWeights, serve.Config{Window: time.Minute})
	url += "/v1/infer"
	reqs := [][][]float32{rowsOf(1, 7), rowsOf(3, 2)}
	got := make([]reply, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = infer(t, url, reqs[i]...) }()
	}
	wg.Wait()
	for i, rows := range reqs {
		if want := reference(t, rows); !slices.Equal(got[i].Outputs["y"].Data, want) {
			t.Errorf("request %d: %v, want %v", i, got[i].Outputs["y"].Data, want)
		}
	}
	if st := srv.Stats(); st != (serve.Stats{Requests: 2, Runs: 1, Rows: 4, Padded: 0}) {
		t.Errorf("stats %+v, want both requests in one run of 4 rows", st)
	}

	srv, url = serveModel(t, m, "ref", tinyWeights, serve.Config{Window: 20 * time.Millisecond})
	url += "/v1/infer"
	if r := infer(t, url, rowsOf(2, 5)...); !slices.Equal(r.Outputs["y"].Data, reference(t, rowsOf(2, 5))) {
		t.Errorf("a lone request: %v", r.Outputs["y"].Data)
	}
	if st := srv.Stats(); st != (serve.Stats{Requests: 1, Runs: 1, Rows: 2, Padded: 0}) {
		t.Errorf("stats %+v, want a run of the request's 2 rows", st)
	}
}

// Runs are padded where the model needs it: up to a batch dim's lower end, and to the bound when
// the batch is not a dim every tensor leads with alone (another axis depends on it, or the
// outputs lead with another size). /v1/model shows the inputs' dims.
func TestSymbolicBatchPadding(t *testing.T) {
	for _, tc := range []struct {
		name, gir string
		rows      int
		padded    int64
		dims      []string
	}{
		{"from 2", "dims { batch in [2,4] }\n  input %x : f32[batch,3]\n  %0 = neg(%x) : f32[batch,3]\n  output y = %0", 1, 1, []string{"batch", "3"}},
		{"range from 2, rows above it", "dims { batch in [2,4] }\n  input %x : f32[batch,3]\n  %0 = neg(%x) : f32[batch,3]\n  output y = %0", 3, 0, []string{"batch", "3"}},
		{"batch in another axis", "dims { batch in [1,3] }\n  input %x : f32[batch,3]\n  input %z : f32[batch,batch]\n  %0 = neg(%x) : f32[batch,3]\n  output y = %0", 2, 1, []string{"batch", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gir")
			if err := os.WriteFile(path, []byte("graph m {\n  "+tc.gir+"\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := gcomp.CompileFile(path, gcomp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv, base := serveModel(t, m, "ref", nil, serve.Config{})
			in := map[string]any{"x": map[string]any{"shape": []int{tc.rows, 3}, "data": slices.Concat(rowsOf(tc.rows, 1)...)}}
			if len(m.Inputs()) == 2 {
				in["z"] = map[string]any{"shape": []int{tc.rows, 3}, "data": make([]float32, 3*tc.rows)}
			}
			body, _ := json.Marshal(map[string]any{"inputs": in})
			status, _, out := post(t, base+"/v1/infer", "application/json", "", body)
			var r reply
			if err := json.Unmarshal(out, &r); status != 200 || err != nil {
				t.Fatalf("status %d: %s", status, out)
			}
			var want []float64
			for _, v := range slices.Concat(rowsOf(tc.rows, 1)...) {
				want = append(want, float64(-v))
			}
			if y := r.Outputs["y"]; !slices.Equal(y.Shape, []int{tc.rows, 3}) || !slices.Equal(y.Data, want) {
				t.Errorf("y %v %v, want %v", y.Shape, y.Data, want)
			}
			if st := srv.Stats(); st.Padded != tc.padded || st.Rows != int64(tc.rows) {
				t.Errorf("stats %+v, want %d rows padded by %d", st, tc.rows, tc.padded)
			}
			resp, err := http.Get(base + "/v1/model")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var meta struct{ Inputs []gcomp.TensorInfo }
			if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || !slices.Equal(meta.Inputs[0].Dims, tc.dims) {
				t.Errorf("/v1/model inputs %v (%v), want x's dims %v", meta.Inputs, err, tc.dims)
			}
		})
	}
}
