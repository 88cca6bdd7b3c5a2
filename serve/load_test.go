package serve_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/serve"
	"github.com/gcomp/gcomp/tensor"
)

// BenchmarkLoadCNN is the load test of docs/perf.md: concurrent clients on 127.0.0.1 send
// one-image .npy requests to the tutorial CNN and the benchmark reports requests/s and the
// 50th and 99th percentile latencies. "batch8" serves the CNN compiled for 8 images with
// dynamic batching (a 5 ms window), the rest of each run padded; "max8" serves it compiled once
// for 1 to 8 images (Options.MaxBatch) with the same window, each run carrying only the rows that
// came; "single" serves it compiled for 1 image, each request a run of its own. The "-1client"
// devices send their requests one after another, so batches stay small. The simulator runs
// without its checks. Bounded: every case sends a fixed number of requests, so run it once each:
//
//	go test ./serve -run '^$' -bench LoadCNN -benchtime 1x
func BenchmarkLoadCNN(b *testing.B) {
	for _, dev := range []struct {
		name, device      string
		requests, clients int
	}{
		{"ref", "ref", 256, 16},
		{"sim", "sim", 16, 8},
		{"ref-1client", "ref", 64, 1},
		{"sim-1client", "sim", 4, 1},
	} {
		for _, mode := range []struct {
			name   string
			opts   gcomp.Options
			window time.Duration
		}{
			{"single", gcomp.Options{Batch: 1}, 0},
			{"batch8", gcomp.Options{Batch: 8}, 5 * time.Millisecond},
			{"max8", gcomp.Options{MaxBatch: 8}, 5 * time.Millisecond},
		} {
			b.Run(dev.name+"/"+mode.name, func(b *testing.B) {
				m, err := gcomp.Compile("cnn", func(bd *frontend.Builder) {
					x := bd.Input("x", frontend.F32, bd.Batch(8), 3, 28, 28)
					bd.Output("logits", cnn.NewCNN(bd).Forward(x))
				}, mode.opts)
				if err != nil {
					b.Fatal(err)
				}
				const pool = 2 // the machine's cores
				s, err := gcomp.Open(m, gcomp.SessionOptions{Device: dev.device, InitWeights: true, Pool: pool, NoSimChecks: true})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				srv := serve.New(s, serve.Config{Window: mode.window, Pool: pool})
				defer srv.Close()
				hs := httptest.NewServer(srv.Handler()) // listens on 127.0.0.1
				defer hs.Close()
				body := npy(b, ir.T(ir.F32, 1, 3, 28, 28), tensor.RandomInput(&ir.Value{Name: "x", Type: ir.T(ir.F32, 1, 3, 28, 28)}, 1).F...)
				var lat []time.Duration
				var elapsed time.Duration
				b.ResetTimer()
				for range b.N {
					l, d, err := load(hs.URL+"/v1/infer", body, dev.requests, dev.clients)
					if err != nil {
						b.Fatal(err)
					}
					lat, elapsed = append(lat, l...), elapsed+d
				}
				slices.Sort(lat)
				st := srv.Stats()
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
				b.ReportMetric(float64(st.Rows)/float64(st.Runs), "rows/run")
				b.ReportMetric(float64(st.Padded)/float64(st.Runs), "padded/run")
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// load sends n requests from c clients at once and returns each request's latency and the
// wall time of all of them.
func load(url string, body []byte, n, c int) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				resp, err := client.Post(url, "application/x-npy", bytes.NewReader(body))
				if err == nil {
					var buf bytes.Buffer
					buf.ReadFrom(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d: %s", resp.StatusCode, buf.Bytes())
					}
				}
				lat[i], errs[i] = time.Since(t0), err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return lat, time.Since(start), nil
}
