package serve_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/serve"
)

// Any body, JSON or .npy, gets a reply: 200 or a 4xx, never a panic or a 500.
func FuzzInfer(f *testing.F) {
	f.Add([]byte(`{"inputs":{"x":{"shape":[1,3],"data":[1,2,3]}}}`), false)
	f.Add([]byte(`{"inputs":{"x":{"dtype":"f32","shape":[2,3],"data":[1,"NaN","Infinity",4,5,6e40]}}}`), false)
	f.Add([]byte(`{"inputs":{"x":{"shape":[99999999999,3],"data":[]}}}`), false)
	f.Add(npy(f, ir.T(ir.F32, 2, 3), 1, 2, 3, 4, 5, 6), true)
	srv := serve.New(session(f), serve.Config{MaxBodyBytes: 1 << 16})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte, isNPY bool) {
		req := httptest.NewRequest(http.MethodPost, "/v1/infer", bytes.NewReader(body))
		if isNPY {
			req.Header.Set("Content-Type", "application/x-npy")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
