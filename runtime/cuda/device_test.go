package cuda

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/runtime/executor"
	"golang.org/x/tools/txtar"
)

const copyPTX = `.version 7.8
.target sm_80
.address_size 64

.visible .entry copy16(
	.param .u64 src,
	.param .u64 dst
)
{
	ret;
}
`

func openFake(t *testing.T, f *fakeDriver, opts Options) *Device {
	t.Helper()
	d, err := Open(f, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestDeviceRoundTrip writes, launches, reads and checks how each step
// reached the driver: staged copies from pinned memory, the context current,
// the kernel parameters packed in order, everything released by Close.
func TestDeviceRoundTrip(t *testing.T) {
	f := newFake()
	f.kernels["copy16"] = fakeCopyKernel
	d := openFake(t, f, Options{})
	if got, want := d.Name(), "cuda:0 (Fake GPU, sm_80)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	src := must[executor.Ptr](t)(d.Alloc(16))
	dst := must[executor.Ptr](t)(d.Alloc(16))
	in := []byte("0123456789abcdef")
	if err := d.Write(src, in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X' // the write was staged: the device keeps the old byte
	if err := d.Zero(dst, 16); err != nil {
		t.Fatal(err)
	}
	m := must[executor.Module](t)(d.Load([]byte(copyPTX)))
	cfg := executor.LaunchConfig{Grid: [3]int{4, 2, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 512}
	c, err := m.Launch("copy16", cfg, []executor.Ptr{src, dst + 0})
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		t.Errorf("counters without profiling: %+v", c)
	}
	out := make([]byte, 16)
	if err := d.Read(out, dst); err != nil {
		t.Fatal(err)
	}
	if string(out) != "0123456789abcdef" {
		t.Errorf("read %q", out)
	}
	want := fakeLaunch{kernel: "copy16", grid: [3]uint32{4, 2, 1}, block: [3]uint32{128, 1, 1}, shared: 512,
		params: []uint64{uint64(src), uint64(dst)}, stream: d.stream, currentCtxSet: true}
	if len(f.launches) != 1 || !launchEqual(f.launches[0], want) {
		t.Errorf("launches = %+v, want [%+v]", f.launches, want)
	}
	if f.asyncHtoD != 1 || f.syncHtoD != 0 {
		t.Errorf("copies: %d from pinned memory, %d synchronous; want 1, 0", f.asyncHtoD, f.syncHtoD)
	}
	if s := d.Stats(); s.Allocated != 32 || s.PeakAllocated != 32 || s.Pinned != 2*minStaging {
		t.Errorf("Stats() = %+v", s)
	}
	if free, total, err := d.MemInfo(); err != nil || free != 1<<20-32 || total != 1<<20 {
		t.Errorf("MemInfo() = %d, %d, %v", free, total, err)
	}
	if err := d.Free(src); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.mem) != 0 || len(f.host) != 0 || len(f.modules) != 0 || f.streams != 0 || f.ctxs != 0 {
		t.Errorf("after Close: %d allocations, %d pinned buffers, %d modules, %d streams, %d contexts", len(f.mem), len(f.host), len(f.modules), f.streams, f.ctxs)
	}
	if _, err := d.Alloc(8); err == nil || !errors.Is(err, errClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
}

func launchEqual(a, b fakeLaunch) bool {
	return a.kernel == b.kernel && a.grid == b.grid && a.block == b.block && a.shared == b.shared &&
		slices.Equal(a.params, b.params) && a.stream == b.stream && a.currentCtxSet == b.currentCtxSet
}

// TestDeviceParamPacking launches kernels with 0 to 40 parameters and
// checks the driver received each value in order.
func TestDeviceParamPacking(t *testing.T) {
	f := newFake()
	f.kernels["k"] = func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
	d := openFake(t, f, Options{})
	defer d.Close()
	m := must[executor.Module](t)(d.Load([]byte(".target sm_80\n.entry k()\n")))
	for _, n := range []int{0, 1, 2, 7, 40} {
		args := make([]executor.Ptr, n)
		want := make([]uint64, n)
		for i := range args {
			args[i] = executor.Ptr(0x7f0000000000 + 256*i + n)
			want[i] = uint64(args[i])
		}
		if _, err := m.Launch("k", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, args); err != nil {
			t.Fatal(err)
		}
		if got := f.launches[len(f.launches)-1].params; !slices.Equal(got, want) {
			t.Errorf("%d parameters: driver got %#x, want %#x", n, got, want)
		}
	}
}

// TestDeviceErrors checks the message of every failure the device reports;
// the messages are in testdata/errors.txtar.
func TestDeviceErrors(t *testing.T) {
	ok := func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
	fault := func(*fakeDriver, []uint64) (Result, Result) { return Success, ResultIllegalAddress }
	resources := func(*fakeDriver, []uint64) (Result, Result) { return ResultLaunchOutOfResources, Success }
	launch1 := executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}}
	ptx := []byte(".version 7.8\n.target sm_80\n.visible .entry ok()\n.visible .entry fault()\n.visible .entry big()\n")
	// loaded runs f on ptx loaded on the device.
	loaded := func(f func(d *Device, m executor.Module) error) func(*Device) error {
		return func(d *Device) error {
			m, err := d.Load(ptx)
			if err != nil {
				return err
			}
			return f(d, m)
		}
	}

	cases := []struct {
		name string
		opts Options
		set  func(*fakeDriver)
		run  func(*Device) error
	}{
		{"out-of-memory", Options{}, nil, func(d *Device) error {
			if _, err := d.Alloc(300 << 10); err != nil {
				return err
			}
			_, err := d.Alloc(1 << 20)
			return err
		}},
		{"negative-alloc", Options{}, nil, func(d *Device) error {
			_, err := d.Alloc(-1)
			return err
		}},
		{"free-unknown", Options{}, nil, func(d *Device) error { return d.Free(0x1234) }},
		{"compute-capability", Options{}, func(f *fakeDriver) { f.major, f.minor = 7, 5 }, func(d *Device) error {
			_, err := d.Load(ptx)
			return err
		}},
		{"arch-specific", Options{}, func(f *fakeDriver) { f.major, f.minor = 10, 0 }, func(d *Device) error {
			_, err := d.Load([]byte(".version 7.8\n.target sm_90a\n"))
			return err
		}},
		{"no-target", Options{}, nil, func(d *Device) error {
			_, err := d.Load([]byte(".version 7.8\n"))
			return err
		}},
		{"invalid-ptx", Options{}, nil, func(d *Device) error {
			_, err := d.Load([]byte(".version 7.8\n.target sm_80\n.address_size 64\nsyntax error here\n"))
			return err
		}},
		{"unknown-kernel", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			_, err := m.Launch("missing", launch1, nil)
			return err
		})},
		{"bad-dims", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			_, err := m.Launch("ok", executor.LaunchConfig{Grid: [3]int{0, 1, 1}, Block: [3]int{32, 1, 1}}, nil)
			return err
		})},
		{"launch-refused", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			_, err := m.Launch("big", executor.LaunchConfig{Grid: [3]int{2, 1, 1}, Block: [3]int{1024, 1, 1}, SharedBytes: 4096}, nil)
			return err
		})},
		{"fault-at-sync", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			if _, err := m.Launch("fault", launch1, nil); err != nil {
				return err
			}
			return d.Sync()
		})},
		{"fault-among-several", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			if _, err := m.Launch("fault", launch1, nil); err != nil {
				return err
			}
			if _, err := m.Launch("ok", executor.LaunchConfig{Grid: [3]int{8, 1, 1}, Block: [3]int{64, 1, 1}}, nil); err != nil {
				return err
			}
			p, err := d.Alloc(4)
			if err != nil {
				return err
			}
			return d.Read(make([]byte, 4), p)
		})},
		{"fault-gcomp-sync", Options{Sync: true}, nil, loaded(func(d *Device, m executor.Module) error {
			_, err := m.Launch("fault", launch1, nil)
			return err
		})},
		{"fault-profiled", Options{Profile: true}, nil, loaded(func(d *Device, m executor.Module) error {
			_, err := m.Launch("fault", launch1, nil)
			return err
		})},
		{"closed-module", Options{}, nil, loaded(func(d *Device, m executor.Module) error {
			m.Close()
			_, err := m.Launch("ok", launch1, nil)
			return err
		})},
	}
	var sections []txtar.File
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.kernels["ok"], f.kernels["fault"], f.kernels["big"] = ok, fault, resources
			if tc.set != nil {
				tc.set(f)
			}
			d := openFake(t, f, tc.opts)
			defer d.Close()
			err := tc.run(d)
			if err == nil {
				t.Fatal("no error")
			}
			sections = append(sections, txtar.File{Name: tc.name, Data: []byte(err.Error() + "\n")})
		})
	}
	golden.CheckTxtar(t, "testdata/errors.txtar", "The messages of the CUDA device's errors (TestDeviceErrors, on a fake driver).\n", sections)
}

// TestDeviceSyncOption: with Options.Sync every launch waits for the stream.
func TestDeviceSyncOption(t *testing.T) {
	for _, sync := range []bool{false, true} {
		f := newFake()
		f.kernels["ok"] = func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
		d := openFake(t, f, Options{Sync: sync})
		m := must[executor.Module](t)(d.Load([]byte(".target sm_80\n")))
		for range 3 {
			if _, err := m.Launch("ok", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		want := 0
		if sync {
			want = 3
		}
		if f.syncs != want {
			t.Errorf("Sync=%v: %d stream synchronizations after 3 launches, want %d", sync, f.syncs, want)
		}
		d.Close()
	}
}

func TestOptionsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}} {
		t.Setenv(SyncEnv, tc.env)
		if got := OptionsFromEnv().Sync; got != tc.want {
			t.Errorf("%s=%q: Sync = %v", SyncEnv, tc.env, got)
		}
	}
}

// TestDeviceProfile: profiled launches report the events' time.
func TestDeviceProfile(t *testing.T) {
	f := newFake()
	f.kernels["ok"] = func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
	d := openFake(t, f, Options{})
	m := must[executor.Module](t)(d.Load([]byte(".target sm_80\n")))
	cfg := executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}
	d.SetProfile(true)
	c, err := m.Launch("ok", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.Time != 1500*time.Microsecond {
		t.Errorf("counters = %+v, want Time 1.5ms", c)
	}
	d.SetProfile(false)
	if c, _ := m.Launch("ok", cfg, nil); c != nil {
		t.Errorf("counters after profiling off = %+v", c)
	}
	if f.events != 2 {
		t.Errorf("%d events, want the 2 reused ones", f.events)
	}
	d.Close()
	if f.events != 0 {
		t.Errorf("%d events left after Close", f.events)
	}
}

// TestDeviceStaging covers the staging pool: buffers are held until a
// sync and reused after it, writes beyond the in-flight limit wait for the
// stream, writes larger than the limit and devices without pinned memory
// copy synchronously, and the bytes arrive either way. Each case writes its
// sizes, syncs, and writes them again.
func TestDeviceStaging(t *testing.T) {
	cases := []struct {
		name                string
		noPinned            bool
		limit               int64
		sizes               []int
		wantAsync, wantSync int
		wantSyncs           int // by the writes, the explicit sync apart
		wantPinned          int64
	}{
		{"reuse", false, 0, []int{100, 100, 100}, 6, 0, 0, 3 * minStaging},
		{"limit", false, 2 * minStaging, []int{100, 100, 100}, 6, 0, 2, 2 * minStaging},
		{"larger-than-limit", false, minStaging, []int{minStaging + 1}, 0, 2, 2, 0},
		{"power-of-two", false, 0, []int{minStaging + 1, 5}, 4, 0, 0, 3 * minStaging},
		{"no-pinned-memory", true, 0, []int{100, 200}, 0, 4, 4, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.noPinned = tc.noPinned
			d := openFake(t, f, Options{StagingLimit: tc.limit})
			defer d.Close()
			var ptrs []executor.Ptr
			var datas [][]byte
			for round := range 2 {
				for i, n := range tc.sizes {
					p := must[executor.Ptr](t)(d.Alloc(int64(n)))
					data := bytes.Repeat([]byte{byte(10*round + i + 1)}, n)
					if err := d.Write(p, data); err != nil {
						t.Fatal(err)
					}
					ptrs, datas = append(ptrs, p), append(datas, data)
				}
				if round == 0 {
					if err := d.Sync(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if f.asyncHtoD != tc.wantAsync || f.syncHtoD != tc.wantSync {
				t.Errorf("copies: %d staged, %d synchronous; want %d, %d", f.asyncHtoD, f.syncHtoD, tc.wantAsync, tc.wantSync)
			}
			if f.syncs-1 != tc.wantSyncs {
				t.Errorf("%d stream synchronizations by the writes, want %d", f.syncs-1, tc.wantSyncs)
			}
			if s := d.Stats(); s.Pinned != tc.wantPinned {
				t.Errorf("pinned = %d, want %d", s.Pinned, tc.wantPinned)
			}
			for i, p := range ptrs {
				got := make([]byte, len(datas[i]))
				if err := d.Read(got, p); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, datas[i]) {
					t.Errorf("buffer %d: read back wrong bytes", i)
				}
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {80 << 30, "80.0 GiB"}, {3 << 40, "3.0 TiB"}} {
		if got := FormatBytes(tc.n); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestPTXTarget(t *testing.T) {
	for _, tc := range []struct {
		ptx  string
		want Arch
		ok   bool
	}{
		{".version 7.8\n.target sm_80\n", Arch{Major: 8}, true},
		{"\t.target sm_86, texmode_independent\n", Arch{Major: 8, Minor: 6}, true},
		{".target sm_90a\n", Arch{Major: 9, Specific: true}, true},
		{".target sm_100\n", Arch{Major: 10}, true},
		{"// .target sm_80\n", Arch{}, false},
		{".target compute_80\n", Arch{}, false},
	} {
		got, ok := ptxTarget([]byte(tc.ptx))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ptxTarget(%q) = %v, %v; want %v, %v", tc.ptx, got, ok, tc.want, tc.ok)
		}
	}
	if got := ptxEntries([]byte(copyPTX + "\n.entry b(\n.weak .entry c()\n")); !slices.Equal(got, []string{"copy16", "b", "c"}) {
		t.Errorf("ptxEntries = %q", got)
	}
}

// FuzzPTXTarget: the .target parser never panics, and an architecture it
// reads prints as a directive it reads back the same.
func FuzzPTXTarget(f *testing.F) {
	for _, s := range []string{copyPTX, ".target sm_90a\n", "\t.target sm_86, debug", ".target sm_1", ".target sm_99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ptx string) {
		a, ok := ptxTarget([]byte(ptx))
		ptxEntries([]byte(ptx))
		if !ok {
			return
		}
		b, ok := ptxTarget([]byte(".target " + a.String() + "\n"))
		if !ok || a != b {
			t.Errorf("%q: read %v, which reads back as %v, %v", ptx, a, b, ok)
		}
	})
}
