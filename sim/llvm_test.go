package sim

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The kernels in testdata/llvm were produced by LLVM's NVPTX backend from the
// .ll files beside them; each test checks the semantics the .ll header gives.

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func TestLLVMVadd(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/vadd.ptx")
	const n = 1000
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i)*0.1, 1/float32(i+1)
	}
	da, db := upload(t, dev, f32sBytes(a)), upload(t, dev, f32sBytes(b))
	out, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("vadd", grid(ceilDiv(n, 256), 256), da, db, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32s(download(t, dev, out, 4*n)) {
		if v != a[i]+b[i] {
			t.Fatalf("out[%d] = %v, want %v", i, v, a[i]+b[i])
		}
	}
}

func TestLLVMSaxpy(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/saxpy.ptx")
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(math.Sin(float64(i))), float32(math.Cos(float64(i)))
	}
	dx, dy := upload(t, dev, f32sBytes(x)), upload(t, dev, f32sBytes(y))
	if _, err := m.Launch("saxpy", grid(ceilDiv(n, 128), 128), uint32(n), float32(2.5), dx, dy); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32s(download(t, dev, dy, 4*n)) {
		want := float32(math.FMA(2.5, float64(x[i]), float64(y[i])))
		if v != want {
			t.Fatalf("y[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestLLVMIntops(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/intops.ptx")
	const n = 200
	x, y := make([]uint32, n), make([]uint32, n)
	special := []int32{0, 1, -1, 2, -2, 31, 32, 33, math.MaxInt32, math.MinInt32 + 1, 7, -7, 1 << 20}
	for i := range x {
		xi := int32(uint32(i) * 2654435761)
		yi := int32(uint32(i) * 40503)
		if i < len(special)*len(special) {
			xi, yi = special[i%len(special)], special[i/len(special)]
		}
		if i == 199 {
			xi, yi = math.MinInt32, 3
		}
		x[i], y[i] = uint32(xi), uint32(yi)
	}
	dx, dy := upload(t, dev, u32sBytes(x)), upload(t, dev, u32sBytes(y))
	out, _ := dev.Alloc(40 * n)
	if _, err := m.Launch("intops", grid(ceilDiv(n, 64), 64), dx, dy, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 40*n))
	for i := 0; i < n; i++ {
		X, Y := int32(x[i]), int32(y[i])
		s := uint32(Y) & 31
		d := Y
		if d == 0 {
			d = 1
		}
		want := []uint32{
			uint32((int64(X) * int64(Y)) >> 32), uint32(X << s), uint32(X >> s), uint32(X) >> s,
			uint32(X / d), uint32(X % d), uint32(min(X, Y)), max(uint32(X), uint32(Y)),
			uint32(popcount(uint32(X))), uint32(clz(uint32(X))),
		}
		for k, w := range want {
			if got[10*i+k] != w {
				t.Errorf("x=%d y=%d: out[%d] = %#x, want %#x", X, Y, k, got[10*i+k], w)
			}
		}
	}
}

func popcount(v uint32) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

func clz(v uint32) int {
	n := 0
	for i := 31; i >= 0 && v>>i&1 == 0; i-- {
		n++
	}
	return n
}

func TestLLVMTranspose(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/transpose.ptx")
	const rows, cols = 37, 50
	in := make([]float32, rows*cols)
	for i := range in {
		in[i] = float32(i)
	}
	din := upload(t, dev, f32sBytes(in))
	out, _ := dev.Alloc(4 * rows * cols)
	cfg := Config{Grid: Dim3{ceilDiv(cols, 16), ceilDiv(rows, 8), 1}, Block: Dim3{16, 8, 1}}
	if _, err := m.Launch("transpose", cfg, din, out, uint32(rows), uint32(cols)); err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, out, 4*rows*cols))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if got[c*rows+r] != in[r*cols+c] {
				t.Fatalf("out[%d][%d] = %v, want %v", c, r, got[c*rows+r], in[r*cols+c])
			}
		}
	}
}

func TestLLVMReduceShared(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/reduce_shared.ptx")
	const n = 1000
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i%17 - 8)
	}
	din := upload(t, dev, f32sBytes(in))
	nb := ceilDiv(n, 256)
	out, _ := dev.Alloc(4 * nb)
	st, err := m.Launch("reduce_shared", grid(nb, 256), din, out, uint32(n))
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, out, 4*nb))
	for b := 0; b < nb; b++ {
		var want float32
		for i := b * 256; i < min(n, b*256+256); i++ {
			want += in[i]
		}
		if got[b] != want {
			t.Errorf("out[%d] = %v, want %v", b, got[b], want)
		}
	}
	if st.Barriers != int64(nb*9) {
		t.Errorf("barriers = %d, want %d", st.Barriers, nb*9)
	}
}

func TestLLVMWarpReduce(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/warp_reduce.ptx")
	const n = 1000
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i % 10)
	}
	din := upload(t, dev, f32sBytes(in))
	nw := ceilDiv(n, 32)
	out, _ := dev.Alloc(4 * nw)
	if _, err := m.Launch("warp_reduce", grid(ceilDiv(n, 128), 128), din, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, out, 4*nw))
	for w := 0; w < nw; w++ {
		var want float32
		for i := 32 * w; i < min(n, 32*w+32); i++ {
			want += in[i]
		}
		if got[w] != want {
			t.Errorf("out[%d] = %v, want %v", w, got[w], want)
		}
	}
}

func TestLLVMMatmulTiled(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/matmul_tiled.ptx")
	const M, N, K = 33, 40, 37
	a, b := make([]float32, M*K), make([]float32, K*N)
	for i := range a {
		a[i] = float32(i%7 - 3)
	}
	for i := range b {
		b[i] = float32(i%5 - 2)
	}
	da, db := upload(t, dev, f32sBytes(a)), upload(t, dev, f32sBytes(b))
	dc, _ := dev.Alloc(4 * M * N)
	cfg := Config{Grid: Dim3{ceilDiv(N, 16), ceilDiv(M, 16), 1}, Block: Dim3{16, 16, 1}}
	st, err := m.Launch("matmul_tiled", cfg, da, db, dc, uint32(M), uint32(N), uint32(K))
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, dc, 4*M*N))
	for r := 0; r < M; r++ {
		for c := 0; c < N; c++ {
			var want float32
			for k := 0; k < K; k++ {
				want += a[r*K+k] * b[k*N+c]
			}
			if got[r*N+c] != want {
				t.Fatalf("C[%d][%d] = %v, want %v", r, c, got[r*N+c], want)
			}
		}
	}
	if st.Class("ld.shared") == 0 || st.SharedRequests == 0 {
		t.Errorf("no shared traffic counted: %+v", st)
	}
}

func TestLLVMCollatz(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/collatz.ptx")
	const n = 300
	x := make([]uint32, n)
	for i := range x {
		x[i] = uint32(int32(i - 5))
	}
	dx := upload(t, dev, u32sBytes(x))
	out, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("collatz", grid(ceilDiv(n, 64), 64), dx, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 4*n))
	for i := 0; i < n; i++ {
		v := int32(x[i])
		want := int32(-1)
		if v > 0 {
			steps := int32(0)
			for v != 1 && steps < 1000 {
				if v%2 == 0 {
					v /= 2
				} else {
					v = 3*v + 1
				}
				steps++
			}
			want = steps
		}
		if int32(got[i]) != want {
			t.Errorf("out[%d] = %d, want %d", i, int32(got[i]), want)
		}
	}
}

func TestLLVMDevfunc(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/devfunc.ptx")
	const n = 500
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i)*0.37 - 50
	}
	din := upload(t, dev, f32sBytes(in))
	out, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("devfunc", grid(ceilDiv(n, 128), 128), din, out, float32(3), uint32(n)); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32s(download(t, dev, out, 4*n)) {
		x := in[i]
		want := ((x*x)*0.5 + x*3) - 1
		if v != want {
			t.Fatalf("out[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestLLVMAtomics(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/atomics.ptx")
	const n, nbins = 1000, 16
	in := make([]uint32, n)
	var sum float32
	hist := make([]uint32, nbins)
	for i := range in {
		in[i] = uint32(i * 7 % 100)
		sum += float32(in[i])
		hist[in[i]&(nbins-1)]++
	}
	din := upload(t, dev, u32sBytes(in))
	bins := upload(t, dev, make([]byte, 4*nbins))
	total := upload(t, dev, make([]byte, 4))
	counter := upload(t, dev, make([]byte, 4))
	tickets, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("atomics", grid(ceilDiv(n, 256), 256), din, bins, uint32(nbins), total, counter, tickets, uint32(n)); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32s(download(t, dev, bins, 4*nbins)) {
		if v != hist[i] {
			t.Errorf("bins[%d] = %d, want %d", i, v, hist[i])
		}
	}
	if got := bytesF32s(download(t, dev, total, 4))[0]; got != sum {
		t.Errorf("total = %v, want %v", got, sum)
	}
	if got := binary.LittleEndian.Uint32(download(t, dev, counter, 4)); got != n {
		t.Errorf("counter = %d, want %d", got, n)
	}
	tk := bytesU32s(download(t, dev, tickets, 4*n))
	sort.Slice(tk, func(i, j int) bool { return tk[i] < tk[j] })
	for i, v := range tk {
		if v != uint32(i) {
			t.Fatalf("tickets are not a permutation: sorted[%d] = %d", i, v)
		}
	}
}

func TestLLVMF64Math(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/f64math.ptx")
	const n = 100
	x, y := make([]byte, 8*n), make([]byte, 8*n)
	xs, ys := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		xs[i] = float64(i) * 1.37
		ys[i] = float64(i-50) + 0.25
		binary.LittleEndian.PutUint64(x[8*i:], math.Float64bits(xs[i]))
		binary.LittleEndian.PutUint64(y[8*i:], math.Float64bits(ys[i]))
	}
	dx, dy := upload(t, dev, x), upload(t, dev, y)
	out, _ := dev.Alloc(24 * n)
	if _, err := m.Launch("f64math", grid(ceilDiv(n, 64), 64), dx, dy, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got := download(t, dev, out, 24*n)
	for i := 0; i < n; i++ {
		X, Y := xs[i], ys[i]
		want := []float64{math.FMA(math.Sqrt(X), Y, X/Y), math.Min(X, Y), math.Abs(Y) - X}
		for k, w := range want {
			g := math.Float64frombits(binary.LittleEndian.Uint64(got[8*(3*i+k):]))
			if g != w {
				t.Errorf("i=%d out[%d] = %v, want %v", i, k, g, w)
			}
		}
	}
}

func TestLLVMConvert(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/convert.ptx")
	const n = 300
	x := make([]float32, n)
	special := []float32{0.5, 1.5, 2.5, -0.5, -1.5, 65504, 65519.99, 65520, -65520, 1e6, 2049, 2051, 1 + 1.0/2048, 1 + 3.0/2048, 5.96e-8, 2.98e-8, 1e-8, -2.5e9 / 2}
	for i := range x {
		x[i] = float32(i-150) * 0.37
		if i < len(special) {
			x[i] = special[i]
		}
	}
	dx := upload(t, dev, f32sBytes(x))
	oi, _ := dev.Alloc(4 * n)
	oh, _ := dev.Alloc(2 * n)
	of, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("convert", grid(ceilDiv(n, 128), 128), dx, oi, oh, of, uint32(n)); err != nil {
		t.Fatal(err)
	}
	gi := bytesU32s(download(t, dev, oi, 4*n))
	gh := download(t, dev, oh, 2*n)
	gf := bytesF32s(download(t, dev, of, 4*n))
	for i := 0; i < n; i++ {
		X := x[i]
		wi := int32(X)
		wh := uint16(refF16(float64(X)))
		wf := float32(wi) + float32(f16(uint64(wh)))
		if int32(gi[i]) != wi || binary.LittleEndian.Uint16(gh[2*i:]) != wh || gf[i] != wf {
			t.Errorf("x=%v: got (%d, %#04x, %v), want (%d, %#04x, %v)", X, int32(gi[i]), binary.LittleEndian.Uint16(gh[2*i:]), gf[i], wi, wh, wf)
		}
	}
}

// refF16 converts to binary16 with round-to-nearest-even by exhaustive
// search over the 65536 encodings: slow, but independent of encode.
func refF16(x float64) uint16 {
	best, bestErr := uint16(0), math.Inf(1)
	for b := 0; b < 0x7C00; b++ {
		v := f16(uint64(b))
		if x < 0 {
			v = -v
		}
		e := math.Abs(v - x)
		if e < bestErr || e == bestErr && b&1 == 0 {
			best, bestErr = uint16(b), e
		}
	}
	// Beyond the largest finite value plus half an ulp, the result is infinity.
	if math.Abs(x) >= 65520 {
		best = 0x7C00
	}
	if x < 0 || x == 0 && math.Signbit(x) {
		best |= 0x8000
	}
	return best
}

// TestChecksOffSameResults: the fast path without checks computes the same
// bytes and counters as the checked run.
func TestChecksOffSameResults(t *testing.T) {
	run := func(noCheck bool) ([]byte, Stats) {
		dev := NewDevice()
		m := load(t, dev, "llvm/reduce_shared.ptx")
		const n = 3000
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i%29) * 0.25
		}
		din := upload(t, dev, f32sBytes(in))
		nb := ceilDiv(n, 256)
		out, _ := dev.Alloc(4 * nb)
		cfg := grid(nb, 256)
		cfg.NoCheck = noCheck
		st, err := m.Launch("reduce_shared", cfg, din, out, uint32(n))
		if err != nil {
			t.Fatal(err)
		}
		return download(t, dev, out, 4*nb), *st
	}
	b1, s1 := run(false)
	b2, s2 := run(true)
	if string(b1) != string(b2) || s1 != s2 {
		t.Errorf("checked and unchecked runs differ:\n%v\n%v", s1.String(), s2.String())
	}
}

func TestLLVMLocalStack(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/local_stack.ptx")
	const n = 300
	in := make([]uint32, n)
	for i := range in {
		in[i] = uint32(i) * 2654435761
	}
	din := upload(t, dev, u32sBytes(in))
	out, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("local_stack", grid(ceilDiv(n, 128), 128), din, out, uint32(n)); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32s(download(t, dev, out, 4*n)) {
		var buf [16]uint32
		for k := range buf {
			buf[k] = in[i] ^ uint32(k)*0x9E3779B9
		}
		want := buf[in[i]&15]
		for k := 1; k < 16; k += 2 {
			want += buf[k]
		}
		if v != want {
			t.Fatalf("out[%d] = %#x, want %#x", i, v, want)
		}
	}
}

func TestLLVMGenericVec(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/generic_vec.ptx")
	const n = 200
	in := make([]float32, 4*n)
	for i := range in {
		in[i] = float32(i%37 - 18)
	}
	din := upload(t, dev, f32sBytes(in))
	out, _ := dev.Alloc(16 * n)
	sums, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("generic_vec", grid(ceilDiv(n, 64), 64), din, out, sums, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got, gs := bytesF32s(download(t, dev, out, 16*n)), bytesF32s(download(t, dev, sums, 4*n))
	for i := 0; i < n; i++ {
		for j := 0; j < 4; j++ {
			if got[4*i+j] != in[4*i+3-j] {
				t.Fatalf("out[%d] = %v, want in[%d] reversed", i, got[4*i:4*i+4], i)
			}
		}
		nbr := i ^ 1
		want := in[4*nbr] + in[4*nbr+1] + in[4*nbr+2] + in[4*nbr+3] + in[4*i]
		if gs[i] != want {
			t.Fatalf("sums[%d] = %v, want %v", i, gs[i], want)
		}
	}
}

func TestLLVMHalfMath(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/half_math.ptx")
	const n = 500
	x, y := make([]byte, 2*n), make([]byte, 2*n)
	xs, ys := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		hx, hy := refF16(8*math.Sin(float64(i))), refF16(8*math.Cos(float64(3*i)))
		binary.LittleEndian.PutUint16(x[2*i:], hx)
		binary.LittleEndian.PutUint16(y[2*i:], hy)
		xs[i], ys[i] = f16(uint64(hx)), f16(uint64(hy))
	}
	dx, dy := upload(t, dev, x), upload(t, dev, y)
	out, _ := dev.Alloc(2 * n)
	out2, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("half_math", grid(ceilDiv(n, 128), 128), dx, dy, out, out2, uint32(n)); err != nil {
		t.Fatal(err)
	}
	o, o2 := download(t, dev, out, 2*n), download(t, dev, out2, 4*n)
	r := func(v float64) float64 { return f16(uint64(refF16(v))) } // products and sums of f16 values are exact in float64
	for i := 0; i < n; i++ {
		a, b := xs[i], ys[i]
		want := []uint16{refF16(math.Max(r(r(a*b)+a), b)), refF16(r(a*b) - a), refF16(r(b*a) - b)}
		got := []uint16{binary.LittleEndian.Uint16(o[2*i:]), binary.LittleEndian.Uint16(o2[4*i:]), binary.LittleEndian.Uint16(o2[4*i+2:])}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("i=%d (a=%v, b=%v): result %d = %#04x, want %#04x", i, a, b, j, got[j], want[j])
			}
		}
	}
}

func TestLLVMMmaAsync(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/mma_async.ptx")
	A, B := make([]float64, 16*16), make([]float64, 16*8)
	ab, bb := make([]byte, 2*len(A)), make([]byte, 2*len(B))
	for i := range A {
		A[i] = float64(i%7 - 3)
		binary.LittleEndian.PutUint16(ab[2*i:], refF16(A[i]))
	}
	for i := range B {
		B[i] = float64(i%5 - 2)
		binary.LittleEndian.PutUint16(bb[2*i:], refF16(B[i]))
	}
	da, db := upload(t, dev, ab), upload(t, dev, bb)
	dd, _ := dev.Alloc(4 * 16 * 8)
	if _, err := m.Launch("mma_async", grid(1, 32), da, db, dd); err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, dd, 4*16*8))
	for r := 0; r < 16; r++ {
		for c := 0; c < 8; c++ {
			want := 0.0
			for k := 0; k < 16; k++ {
				want += A[r*16+k] * B[k*8+c]
			}
			if float64(got[r*8+c]) != want {
				t.Fatalf("D[%d][%d] = %v, want %v", r, c, got[r*8+c], want)
			}
		}
	}
}

func TestLLVMSyncAtomics(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "llvm/sync_atomics.ptx")
	const n = 1000
	in := make([]uint32, n)
	hist := make([]uint32, 16)
	for i := range in {
		in[i] = uint32(i * 7 % 100)
		hist[in[i]&15]++
	}
	none := make([]uint32, 16)
	for i := range none {
		none[i] = 0xFFFFFFFF
	}
	din := upload(t, dev, u32sBytes(in))
	bins := upload(t, dev, make([]byte, 64))
	slot := upload(t, dev, u32sBytes(none[:1]))
	olds, _ := dev.Alloc(4 * n)
	owner := upload(t, dev, u32sBytes(none))
	wins, _ := dev.Alloc(4 * n)
	nb, _ := dev.Alloc(4 * n)
	if _, err := m.Launch("sync_atomics", grid(ceilDiv(n, 128), 128), din, bins, slot, olds, owner, wins, nb, uint32(n)); err != nil {
		t.Fatal(err)
	}
	for b, v := range bytesU32s(download(t, dev, bins, 64)) {
		if v != hist[b] {
			t.Errorf("bins[%d] = %d, want %d", b, v, hist[b])
		}
	}
	seen := append(bytesU32s(download(t, dev, olds, 4*n)), bytesU32s(download(t, dev, slot, 4))...)
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	for i, v := range seen {
		if want := uint32(i); i == n && v != 0xFFFFFFFF || i < n && v != want {
			t.Fatalf("exchanged values are not 0 .. n-1 and the initial value: sorted[%d] = %#x", i, v)
		}
	}
	ow, w := bytesU32s(download(t, dev, owner, 64)), bytesU32s(download(t, dev, wins, 4*n))
	won := make([]int, 16)
	for i, v := range w {
		if v == 1 {
			won[in[i]&15]++
			if ow[in[i]&15] != uint32(i) {
				t.Errorf("thread %d won bin %d, owned by %d", i, in[i]&15, ow[in[i]&15])
			}
		}
	}
	for b := range won {
		if want := min(int(hist[b]), 1); won[b] != want || want == 0 && ow[b] != 0xFFFFFFFF {
			t.Errorf("bin %d: %d winners (owner %#x), want %d", b, won[b], ow[b], want)
		}
	}
	for i, v := range bytesU32s(download(t, dev, nb, 4*n)) {
		if v != uint32(i^1) {
			t.Fatalf("nb[%d] = %d, want %d", i, v, i^1)
		}
	}
}

// TestLLVMCorpusUpToDate: every committed .ptx of the corpus is what llc 14
// produces from its .ll now (scripts/gen-llvm-ptx.sh --check). Without
// llc 14 the test skips, or fails when GCOMP_REQUIRE_PTXAS=1 demands the
// toolchain, as the ptxas tests do.
func TestLLVMCorpusUpToDate(t *testing.T) {
	llc := ""
	for _, c := range []string{"llc-14", "llc"} {
		if p, err := exec.LookPath(c); err == nil {
			if out, err := exec.Command(p, "--version").Output(); err == nil && strings.Contains(string(out), "LLVM version 14.") {
				llc = p
				break
			}
		}
	}
	if llc == "" {
		if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
			t.Fatal("GCOMP_REQUIRE_PTXAS=1 but no LLVM 14 llc on PATH")
		}
		t.Skip("SKIPPING: no LLVM 14 llc on PATH (set GCOMP_REQUIRE_PTXAS=1 to make this a failure)")
	}
	cmd := exec.Command("sh", filepath.Join("..", "scripts", "gen-llvm-ptx.sh"), "--check")
	cmd.Env = append(os.Environ(), "LLC="+llc)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
