package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/serve"
)

// A JSON body of millions of numbers, inside MaxBodyBytes, costs the request no more than the
// model's input: numbers are stored into the tensor as they stream and the first one past the
// model's elements ends the request (encoding/json held 48 bytes and more per number first).
// The fields may come in any order.
func TestJSONBodyBounded(t *testing.T) {
	srv := serve.New(session(t), serve.Config{MaxBodyBytes: 64 << 20})
	h := srv.Handler()
	do := func(body []byte) (int, string, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/infer", bytes.NewReader(body)))
		runtime.ReadMemStats(&after)
		var e struct{ Error string }
		if rec.Code != 200 && json.Unmarshal(rec.Body.Bytes(), &e) == nil {
			return rec.Code, e.Error, after.TotalAlloc - before.TotalAlloc
		}
		return rec.Code, rec.Body.String(), after.TotalAlloc - before.TotalAlloc
	}
	var big bytes.Buffer
	big.WriteString(`{"inputs":{"x":{"shape":[2,3],"data":[`)
	for i := range 4_000_000 {
		if i > 0 {
			big.WriteByte(',')
		}
		big.WriteString("1.5")
	}
	big.WriteString(`]}}}`)
	code, body, alloc := do(big.Bytes())
	if code != 400 || !strings.Contains(body, "input x: data has more than 6 elements, the most the model's f32[2 3] takes") {
		t.Errorf("4M numbers: %d %s", code, body)
	}
	if alloc > 1<<20 {
		t.Errorf("4M numbers for 6 elements allocated %d bytes", alloc)
	}
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"inputs":{"x":{"data":[1,2,3],"shape":[1,3],"dtype":"f32"}}}`, 200, `"data":[1.25,2]`},
		{`{"inputs":{"x":{"dtype":"","shape":[1,3],"data":[1,2,3]}}}`, 200, `"data":[1.25,2]`},
		{`{"inputs":{"x":{"shape":[1,3],"data":[1,2,3]},"x":{"shape":[1,3],"data":[1,2,3]}}}`, 400, "input x twice"},
		{`{"inputs":{"x":{"shape":[1,3],"shape":[1,3],"data":[1,2,3]}}}`, 400, `input x: field "shape" twice`},
		{`{"inputs":{"x":{"shape":[1,3],"data":[1,[2],3]}}}`, 400, `input x: element 1: [ is not a number`},
		{`{"inputs":{"x":{"shape":[1,"3"],"data":[1,2,3]}}}`, 400, `input x: shape: "3" is not a dimension`},
		{`{"inputs":{"x":[1,2,3]}}`, 400, `input x is "[", want an object`},
		{`{"inputs":{"x":{"shape":[1,3],"data":[1,2,3],"extra":1}}}`, 400, `unknown field "extra" in input x`},
		{`[]`, 400, `the body does not parse: "[" where "{" opens or closes a value`},
	} {
		code, body, _ := do([]byte(tc.body))
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d %q", tc.body, code, body, tc.code, tc.want)
		}
	}
}

// serveTCP serves srv on 127.0.0.1 with its own http.Server (HTTPServer's timeouts).
func serveTCP(t *testing.T, cfg serve.Config) string {
	t.Helper()
	srv := serve.New(session(t), cfg)
	hs := srv.HTTPServer("")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes conn within d (reading whatever it replies).
func closedWithin(conn net.Conn, d time.Duration) (string, bool) {
	conn.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(conn)
	return string(b), err == nil // io.ReadAll returns nil at EOF, the deadline's error otherwise
}

// Slow and idle clients are cut off after the Config's timeouts, and a Content-Length past
// MaxBodyBytes is refused before the body is read.
func TestServerTimeouts(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := serveTCP(t, serve.Config{MaxBodyBytes: 4096, ReadHeaderTimeout: timeout, ReadTimeout: timeout, IdleTimeout: timeout, WriteTimeout: 5 * time.Second})
	request := `{"inputs":{"x":{"shape":[1,3],"data":[1,2,3]}}}`
	for _, tc := range []struct {
		name, send string
		want       string // in what the server sends before it closes
	}{
		{"slow header", "POST /v1/infer HTTP/1.1\r\nHost: x\r\n", ""},
		{"slow body", "POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"inputs\":", ""},
		{"huge Content-Length", "POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n", "413 Request Entity Too Large"},
		{"idle keep-alive", "POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(request)) + "\r\n\r\n" + request, "200 OK"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := conn.Write([]byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		got, closed := closedWithin(conn, 5*time.Second)
		conn.Close()
		if !closed || !strings.Contains(got, tc.want) {
			t.Errorf("%s: closed %v after %v, reply %q, want it closed with %q", tc.name, closed, time.Since(start), got, tc.want)
		}
		if tc.name == "huge Content-Length" && time.Since(start) > 2*time.Second {
			t.Errorf("%s: refused after %v", tc.name, time.Since(start))
		}
	}
	// A keep-alive client served, then idle, is cut off too (the case above without a reply
	// read first): the connection still answers a request in time.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/infer", strings.NewReader(request))
	req.Write(conn)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %v %v", resp, err)
	}
	resp.Body.Close()
}
