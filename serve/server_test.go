package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/serve"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// tiny is y = relu(x·Wᵀ + b) on a batch of 2 rows of 3 features.
func tiny(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 2).Forward(x).Relu())
}

// session opens tiny on ref with fc.weight [[1,0,0],[0.5,0.5,0.5]] and fc.bias [0.25,-1]:
// row [a,b,c] gives [relu(a+0.25), relu((a+b+c)/2-1)].
func session(t testing.TB) *gcomp.Session {
	t.Helper()
	m, err := gcomp.Compile("tiny", tiny, gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", Pool: 2, Weights: map[string]*gcomp.Tensor{
		"fc.weight": gcomp.Float32([]float32{1, 0, 0, 0.5, 0.5, 0.5}, 2, 3),
		"fc.bias":   gcomp.Float32([]float32{0.25, -1}, 2),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func start(t *testing.T, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	srv := serve.New(session(t), cfg)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, hs
}

func post(t *testing.T, url, contentType, accept string, body []byte) (int, string, []byte) {
	t.Helper()
	status, ct, data, err := do(url, contentType, accept, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, ct, data
}

// do is post for any goroutine: it reports failures instead of ending the test.
func do(url, contentType, accept string, body []byte) (int, string, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data, err
}

func npy(t testing.TB, typ ir.Type, vals ...float64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tensorio.WriteNPY(&b, tensor.FromFloats(typ, vals).Array()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Bad requests are one 4xx each with a JSON error that says what is wrong.
func TestBadRequests(t *testing.T) {
	_, hs := start(t, serve.Config{MaxBodyBytes: 4096})
	url := hs.URL + "/v1/infer"
	tests := []struct {
		name, contentType, accept, body string
		status                          int
		want                            string
	}{
		{"text body", "text/plain", "", "1 2 3", 415, "Content-Type text/plain: want application/json or application/x-npy"},
		{"bad content type", "a/b/c", "", "{}", 415, `Content-Type "a/b/c"`},
		{"not JSON", "", "", "{", 400, "the body does not parse: unexpected EOF"},
		{"two values", "", "", `{"inputs":{}} {}`, 400, "more than one JSON value"},
		{"unknown field", "", "", `{"input":{}}`, 400, `unknown field "input"`},
		{"unknown input", "", "", `{"inputs":{"z":{"shape":[1,3],"data":[1,2,3]}}}`, 400, `the model has no input "z" (inputs: x)`},
		{"missing input", "", "", `{"inputs":{}}`, 400, "no value for input x (f32[2 3])"},
		{"null input", "", "", `{"inputs":{"x":null}}`, 400, "input x is null"},
		{"wrong rank", "", "", `{"inputs":{"x":{"shape":[3],"data":[1,2,3]}}}`, 400, "input x has shape [3], the model wants [2 3]"},
		{"wrong row shape", "", "", `{"inputs":{"x":{"shape":[1,4],"data":[1,2,3,4]}}}`, 400, "input x has shape [1 4]"},
		{"too many rows", "", "", `{"inputs":{"x":{"shape":[3,3],"data":[1,2,3,4,5,6,7,8,9]}}}`, 400, "input x has 3 rows, the model takes 1 to 2"},
		{"no rows", "", "", `{"inputs":{"x":{"shape":[0,3],"data":[]}}}`, 400, "input x has 0 rows"},
		{"short data", "", "", `{"inputs":{"x":{"shape":[1,3],"data":[1,2]}}}`, 400, "input x: shape [1 3] has 3 elements, data has 2"},
		{"wrong dtype", "", "", `{"inputs":{"x":{"dtype":"i64","shape":[1,3],"data":[1,2,3]}}}`, 400, "input x is i64, the model wants f32"},
		{"not a number", "", "", `{"inputs":{"x":{"shape":[1,3],"data":[1,"two",3]}}}`, 400, `input x: element 1: "two" is not a number`},
		{"too large", "", "", `{"inputs":{"x":{"shape":[1,3],"data":[` + strings.Repeat("1,", 3000) + `1]}}}`, 413, "the request body is larger than 4096 bytes"},
		{"npy garbage", "application/x-npy", "", "not numpy", 400, "the body does not parse"},
		{"npy wrong shape", "application/x-npy", "", string(npy(t, ir.T(ir.F32, 1, 4), 1, 2, 3, 4)), 400, "input x has shape [1 4], the model wants [2 3] (any rows from 1 to 2)"},
		{"npy wrong dtype", "application/x-npy", "", string(npy(t, ir.T(ir.F64, 1, 3), 1, 2, 3)), 400, "input x is f64, the model wants f32"},
		{"npy reply of no output", "", "application/x-npy; q=1", `{"inputs":{"x":{"shape":[1,3],"data":[1,2,3]}}}`, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, ct, body := post(t, url, tc.contentType, tc.accept, []byte(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d (%s)", status, tc.status, body)
			}
			if tc.status == 200 {
				return
			}
			var e struct{ Error string }
			if err := json.Unmarshal(body, &e); err != nil || ct != "application/json" {
				t.Fatalf("the reply is not a JSON error (%s): %s", ct, body)
			}
			if !strings.Contains(e.Error, tc.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tc.want)
			}
		})
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/infer: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

type reply struct {
	Outputs map[string]struct {
		DType string
		Shape []int
		Data  []float64
	}
}

// infer posts rows as JSON and decodes the reply; it may run in any goroutine (a failure is
// reported and gives an empty reply).
func infer(t *testing.T, url string, rows ...[]float32) reply {
	t.Helper()
	x := map[string]any{"shape": []int{len(rows), 3}, "data": slices.Concat(rows...)}
	body, _ := json.Marshal(map[string]any{"inputs": map[string]any{"x": x}})
	var r reply
	status, _, out, err := do(url, "application/json", "", body)
	if err == nil && status != 200 {
		err = fmt.Errorf("status %d: %s", status, out)
	}
	if err == nil {
		err = json.Unmarshal(out, &r)
	}
	if err != nil {
		t.Error(err)
	}
	return r
}

// Requests of one or two rows get their rows of the outputs, in JSON or .npy.
func TestInfer(t *testing.T) {
	_, hs := start(t, serve.Config{})
	url := hs.URL + "/v1/infer"
	r := infer(t, url, []float32{1, 2, 3})
	if y := r.Outputs["y"]; y.DType != "f32" || !slices.Equal(y.Shape, []int{1, 2}) || !slices.Equal(y.Data, []float64{1.25, 2}) {
		t.Errorf("one row: %+v", r)
	}
	r = infer(t, url, []float32{1, 2, 3}, []float32{-1, 4, 4})
	if y := r.Outputs["y"]; !slices.Equal(y.Shape, []int{2, 2}) || !slices.Equal(y.Data, []float64{1.25, 2, 0, 2.5}) {
		t.Errorf("two rows: %+v", r)
	}
	status, ct, body := post(t, url, "application/x-npy", "application/x-npy", npy(t, ir.T(ir.F32, 1, 3), -1, 4, 4))
	if status != 200 || ct != "application/x-npy" {
		t.Fatalf("npy: status %d, %s: %s", status, ct, body)
	}
	a, err := tensorio.ReadNPY(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensor.FromArray(a)
	if err != nil || !slices.Equal(y.F, []float64{0, 2.5}) || y.Type.String() != "f32[1,2]" {
		t.Errorf("npy reply %v %v (%v)", y.Type, y.F, err)
	}
	resp, err := http.Get(hs.URL + "/v1/model")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		Name   string
		Batch  int
		Inputs []gcomp.TensorInfo
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || meta.Name != "tiny" || meta.Batch != 2 || len(meta.Inputs) != 1 {
		t.Errorf("/v1/model: %+v (%v)", meta, err)
	}
}

// Concurrent one-row requests share runs: two fill the batch of 2 and run at once, without
// waiting out the window; a lone request runs after the window, padded.
func TestDynamicBatching(t *testing.T) {
	srv, hs := start(t, serve.Config{Window: time.Minute, Pool: 2})
	url := hs.URL + "/v1/infer"
	rows := [][]float32{{1, 2, 3}, {-1, 4, 4}}
	want := [][]float64{{1.25, 2}, {0, 2.5}}
	var wg sync.WaitGroup
	got := make([]reply, 2)
	for i := range rows {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = infer(t, url, rows[i]) }()
	}
	wg.Wait()
	for i := range rows {
		if !slices.Equal(got[i].Outputs["y"].Data, want[i]) {
			t.Errorf("request %d: %v, want %v", i, got[i].Outputs["y"].Data, want[i])
		}
	}
	if st := srv.Stats(); st != (serve.Stats{Requests: 2, Runs: 1, Rows: 2, Padded: 0}) {
		t.Errorf("stats %+v, want the two requests in one run", st)
	}

	srv, hs = start(t, serve.Config{Window: 20 * time.Millisecond})
	if r := infer(t, hs.URL+"/v1/infer", rows[1]); !slices.Equal(r.Outputs["y"].Data, want[1]) {
		t.Errorf("a lone request: %v", r.Outputs["y"].Data)
	}
	if st := srv.Stats(); st != (serve.Stats{Requests: 1, Runs: 1, Rows: 1, Padded: 1}) {
		t.Errorf("stats %+v", st)
	}
}

// Shutdown lets a request waiting in a batch finish; after Close requests get 503.
func TestGracefulShutdown(t *testing.T) {
	srv := serve.New(session(t), serve.Config{Window: 300 * time.Millisecond})
	hs := httptest.NewServer(srv.Handler())
	done := make(chan reply)
	go func() { done <- infer(t, hs.URL+"/v1/infer", []float32{1, 2, 3}) }()
	time.Sleep(50 * time.Millisecond) // the request waits in its batch's window
	hs.Config.Shutdown(context.Background())
	if r := <-done; !slices.Equal(r.Outputs["y"].Data, []float64{1.25, 2}) {
		t.Errorf("the request in flight got %+v", r)
	}
	srv.Close()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/infer", strings.NewReader("{}")))
	if rec.Code != 503 {
		t.Errorf("after Close: %d %s", rec.Code, rec.Body)
	}
	hs.Close()
}
