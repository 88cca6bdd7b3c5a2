//go:build linux && (amd64 || arm64) && !nocuda

package nccl

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gcomp/gcomp/runtime/nccl/nccltest"
)

// stub is nccltest's stand-in library, loaded through Load, with its test
// hooks.
type stub struct {
	lib   *Library
	log   func() string
	reset func()
	async func(comm uintptr, r int32)
	alloc func(n uint64) unsafe.Pointer
	depth func() int32
}

// buildStub loads the stub library (nccltest) through Load, with its hooks.
func buildStub(t *testing.T) *stub {
	t.Helper()
	path := nccltest.Build(t)
	lib, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{lib: lib}
	for name, f := range map[string]any{"stub_log": &s.log, "stub_reset": &s.reset, "stub_set_async": &s.async, "stub_alloc": &s.alloc, "stub_depth": &s.depth} {
		purego.RegisterLibFunc(f, h, name)
	}
	return s
}

// calls is the log since the last call, one line per NCCL call.
func (s *stub) calls() []string {
	lines := strings.Split(strings.TrimSuffix(s.log(), "\n"), "\n")
	s.reset()
	return lines
}

// f32 is n floats of host memory from the stub's allocator (C memory the
// stub may keep pointers to), with its address.
func (s *stub) f32(vals ...float32) ([]float32, uintptr) {
	p := s.alloc(uint64(4 * len(vals)))
	b := unsafe.Slice((*float32)(p), len(vals))
	copy(b, vals)
	return b, uintptr(p)
}

func (s *stub) i32(vals ...int32) ([]int32, uintptr) {
	p := s.alloc(uint64(4 * len(vals)))
	b := unsafe.Slice((*int32)(p), len(vals))
	copy(b, vals)
	return b, uintptr(p)
}

func wantCalls(t *testing.T, s *stub, want ...string) {
	t.Helper()
	got := s.calls()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStubVersionAndErrorStrings(t *testing.T) {
	s := buildStub(t)
	if v, err := s.lib.Version(); v != 22304 || err != nil {
		t.Errorf("Version = %d, %v", v, err)
	}
	for r, want := range map[Result]string{
		UnhandledCudaError: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
		RemoteError:        "remote process exited or there was a network error",
		InvalidUsage:       "invalid usage (run with NCCL_DEBUG=WARN for details)",
	} {
		if got := s.lib.ErrorString(r); got != want {
			t.Errorf("ErrorString(%v) = %q, want %q", r, got, want)
		}
	}
	for r, want := range map[Result]string{Success: "ncclSuccess", UnhandledCudaError: "ncclUnhandledCudaError",
		SystemError: "ncclSystemError", RemoteError: "ncclRemoteError", InProgress: "ncclInProgress", 42: "ncclResult(42)"} {
		if r.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(r), r.String(), want)
		}
	}
	wantCalls(t, s, "ncclGetVersion")
	// Loading the same path again gives the same library.
	if again, err := Load(s.lib.Path()); again != s.lib || err != nil {
		t.Errorf("second Load = %p, %v; want %p", again, err, s.lib)
	}
}

// TestStubCommInitAll drives two ranks of one process from one goroutine, in
// a group, through every collective; the stub computes the results, so the
// pointers, counts, types, operations and roots all reached C in place.
func TestStubCommInitAll(t *testing.T) {
	s := buildStub(t)
	comms, err := s.lib.CommInitAll([]int{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(comms) != 2 || comms[1].Rank() != 1 || comms[1].Size() != 2 {
		t.Fatalf("comms = %v", comms)
	}
	wantCalls(t, s, "ncclCommInitAll n=2 devs=3,5")

	a0, p0 := s.f32(1, 2, 3, 4)
	a1, p1 := s.f32(10, 20, 30, 40)
	group(t, s.lib, func() {
		check(t, comms[0].AllReduce(p0, p0, 4, Float32, Sum, 0x1234))
		check(t, comms[1].AllReduce(p1, p1, 4, Float32, Sum, 0x5678))
	})
	for i, want := range []float32{11, 22, 33, 44} {
		if a0[i] != want || a1[i] != want {
			t.Errorf("AllReduce sum [%d] = %v, %v; want %v", i, a0[i], a1[i], want)
		}
	}
	wantCalls(t, s, "ncclGroupStart depth=1",
		"ncclAllReduce rank=0 send=inplace count=4 dtype=7 op=0 stream=0x1234 depth=1",
		"ncclAllReduce rank=1 send=inplace count=4 dtype=7 op=0 stream=0x5678 depth=1",
		"ncclGroupEnd depth=1")

	// Broadcast from rank 1 into separate buffers.
	_, b0 := s.f32(0, 0)
	_, b1 := s.f32(7, 8)
	r0, q0 := s.f32(0, 0)
	r1, q1 := s.f32(0, 0)
	group(t, s.lib, func() {
		check(t, comms[0].Broadcast(b0, q0, 2, Float32, 1, 0))
		check(t, comms[1].Broadcast(b1, q1, 2, Float32, 1, 0))
	})
	if r0[0] != 7 || r0[1] != 8 || r1[0] != 7 || r1[1] != 8 {
		t.Errorf("Broadcast: %v %v", r0, r1)
	}
	s.calls()

	// AllGather: rank r's block at r×sendcount.
	_, g0 := s.i32(1, 2)
	_, g1 := s.i32(3, 4)
	o0, h0 := s.i32(0, 0, 0, 0)
	o1, h1 := s.i32(0, 0, 0, 0)
	group(t, s.lib, func() {
		check(t, comms[0].AllGather(g0, h0, 2, Int32, 0))
		check(t, comms[1].AllGather(g1, h1, 2, Int32, 0))
	})
	for i, want := range []int32{1, 2, 3, 4} {
		if o0[i] != want || o1[i] != want {
			t.Errorf("AllGather [%d] = %d, %d; want %d", i, o0[i], o1[i], want)
		}
	}
	wantCalls(t, s, "ncclGroupStart depth=1",
		"ncclAllGather rank=0 sendcount=2 dtype=2 stream=(nil) depth=1",
		"ncclAllGather rank=1 sendcount=2 dtype=2 stream=(nil) depth=1",
		"ncclGroupEnd depth=1")

	// ReduceScatter with Avg: rank r holds block r of the average.
	_, x0 := s.i32(2, 4, 6, 8)
	_, x1 := s.i32(4, 8, 12, 16)
	y0, z0 := s.i32(0, 0)
	y1, z1 := s.i32(0, 0)
	group(t, s.lib, func() {
		check(t, comms[0].ReduceScatter(x0, z0, 2, Int32, Avg, 0))
		check(t, comms[1].ReduceScatter(x1, z1, 2, Int32, Avg, 0))
	})
	if y0[0] != 3 || y0[1] != 6 || y1[0] != 9 || y1[1] != 12 {
		t.Errorf("ReduceScatter avg: %v %v, want [3 6] [9 12]", y0, y1)
	}
	wantCalls(t, s, "ncclGroupStart depth=1",
		"ncclReduceScatter rank=0 recvcount=2 dtype=2 op=4 stream=(nil) depth=1",
		"ncclReduceScatter rank=1 recvcount=2 dtype=2 op=4 stream=(nil) depth=1",
		"ncclGroupEnd depth=1")

	for _, c := range comms {
		check(t, c.Destroy())
	}
	wantCalls(t, s, "ncclCommDestroy rank=0", "ncclCommDestroy rank=1")
}

// TestStubCommInitRank: the unique id reaches C whole (all 128 bytes, by
// pointer through ncclCommInitRankScalable; see doc.go) with NCCL's default
// configuration.
func TestStubCommInitRank(t *testing.T) {
	s := buildStub(t)
	id, err := s.lib.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	if cString(id[:]) != "stub-id-1" || id[127] != 0x7f {
		t.Fatalf("GetUniqueID = %q ... %#x", cString(id[:]), id[127])
	}
	var comms [2]*Comm
	group(t, s.lib, func() {
		for r := range comms {
			comms[r], err = s.lib.CommInitRank(2, id, r)
			check(t, err)
		}
	})
	wantCalls(t, s, "ncclGetUniqueId stub-id-1", "ncclGroupStart depth=1",
		"ncclCommInitRankScalable nranks=2 rank=0 nid=1 id=stub-id-1 last=127 config=NULL depth=1",
		"ncclCommInitRankScalable nranks=2 rank=1 nid=1 id=stub-id-1 last=127 config=NULL depth=1",
		"ncclGroupEnd depth=1")
	a, p := s.f32(1.5)
	b, q := s.f32(2.5)
	check(t, comms[0].AllReduce(p, p, 1, Float32, Avg, 0))
	check(t, comms[1].AllReduce(q, q, 1, Float32, Avg, 0))
	if a[0] != 2 || b[0] != 2 {
		t.Errorf("AllReduce avg = %v, %v; want 2", a[0], b[0])
	}
	_, err = s.lib.CommInitRank(2, id, 2)
	var e *Error
	if !errors.As(err, &e) || e.Result != InvalidArgument || e.Call != "ncclCommInitRank" {
		t.Fatalf("rank 2 of 2: %v", err)
	}
	if want := "ncclCommInitRank: ncclInvalidArgument: invalid argument (run with NCCL_DEBUG=WARN for details) (bad nranks or rank)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestStubGroupNesting(t *testing.T) {
	s := buildStub(t)
	check(t, s.lib.GroupStart())
	check(t, s.lib.GroupStart())
	if d := s.depth(); d != 2 {
		t.Errorf("depth %d after two GroupStart", d)
	}
	check(t, s.lib.GroupEnd())
	check(t, s.lib.GroupEnd())
	err := s.lib.GroupEnd()
	if !errors.Is(err, &Error{Result: InvalidUsage}) {
		t.Fatalf("unmatched GroupEnd: %v", err)
	}
	if want := "ncclGroupEnd: ncclInvalidUsage: invalid usage (run with NCCL_DEBUG=WARN for details) (ncclGroupEnd without ncclGroupStart)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	wantCalls(t, s, "ncclGroupStart depth=1", "ncclGroupStart depth=2", "ncclGroupEnd depth=2", "ncclGroupEnd depth=1", "ncclGroupEnd unmatched")
}

// TestStubAsyncErrorAndAbort: a peer's failure shows as the communicator's
// asynchronous error with NCCL's name and text; Abort frees the
// communicator, after which the binding refuses to touch it.
func TestStubAsyncErrorAndAbort(t *testing.T) {
	s := buildStub(t)
	comms, err := s.lib.CommInitAll([]int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	check(t, comms[0].AsyncError())
	s.async(comms[0].h, int32(RemoteError))
	err = comms[0].AsyncError()
	if !errors.Is(err, &Error{Result: RemoteError}) {
		t.Fatalf("AsyncError = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "rank 0's communicator (ncclCommGetAsyncError): ncclRemoteError: remote process exited or there was a network error") {
		t.Errorf("AsyncError = %q", err)
	}
	_, p := s.f32(1)
	if err := comms[0].AllReduce(p, p, 1, Float32, Sum, 0); !errors.Is(err, &Error{Result: RemoteError}) {
		t.Errorf("AllReduce on a failed communicator: %v", err)
	}
	s.calls()
	check(t, comms[0].Abort())
	for name, err := range map[string]error{
		"AllReduce":  comms[0].AllReduce(p, p, 1, Float32, Sum, 0),
		"AsyncError": comms[0].AsyncError(),
		"Abort":      comms[0].Abort(),
		"Destroy":    comms[0].Destroy(),
	} {
		if err == nil || !strings.Contains(err.Error(), "rank 0's communicator was") || !strings.Contains(err.Error(), "aborted") {
			t.Errorf("%s after Abort: %v", name, err)
		}
	}
	wantCalls(t, s, "ncclCommAbort rank=0") // nothing after the abort reached C
	// The other rank's call is left pending (its peer is gone): Destroy
	// reports the library's error, Abort frees it.
	check(t, comms[1].AllReduce(p, p, 1, Float32, Sum, 0))
	if err := comms[1].Destroy(); !errors.Is(err, &Error{Result: InvalidUsage}) {
		t.Errorf("Destroy with a pending call: %v", err)
	}
	check(t, comms[1].Abort())
}

func TestLoadMissingLibrary(t *testing.T) {
	for _, tc := range []struct{ name, lib, env string }{
		{"explicit path", "/nonexistent/libnccl.so.2", ""},
		{"environment", "", "/nonexistent/from-env/libnccl.so.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LibraryEnv, tc.env)
			_, err := Load(tc.lib)
			if !errors.Is(err, ErrNoLibrary) {
				t.Fatalf("Load: %v, want ErrNoLibrary", err)
			}
			for _, want := range []string{"no NCCL library (libnccl.so.2) found; install NVIDIA's libnccl2 package", tc.lib + tc.env + ": cannot open shared object file"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load: %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestLibraryPath(t *testing.T) {
	t.Setenv(LibraryEnv, "")
	if got := LibraryPath(""); got != "libnccl.so.2" {
		t.Errorf("LibraryPath(\"\") = %q", got)
	}
	t.Setenv(LibraryEnv, "/opt/x/libnccl.so.2")
	if got := LibraryPath(""); got != "/opt/x/libnccl.so.2" {
		t.Errorf("with %s: LibraryPath(\"\") = %q", LibraryEnv, got)
	}
	if got := LibraryPath("/y/libnccl.so"); got != "/y/libnccl.so" {
		t.Errorf("explicit: LibraryPath = %q", got)
	}
}

func group(t *testing.T, l *Library, f func()) {
	t.Helper()
	check(t, l.GroupStart())
	f()
	check(t, l.GroupEnd())
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
