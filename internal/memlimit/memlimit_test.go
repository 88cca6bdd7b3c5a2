package memlimit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The cgroup limit is the tightest of the group's and its ancestors' (v2: memory.max, "max" for
// none; v1: memory.limit_in_bytes, a huge number for none), 0 when no group limits memory.
func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name, proc string
		files      map[string]string
		want       int64
	}{
		{"v2", "0::/user.slice/job", map[string]string{"user.slice/job/memory.max": "4294967296\n"}, 4 << 30},
		{"v2 max", "0::/job", map[string]string{"job/memory.max": "max\n"}, 0},
		{"v2 parent", "0::/a/b", map[string]string{"a/b/memory.max": "max\n", "a/memory.max": "1073741824\n"}, 1 << 30},
		{"v2 child tighter", "0::/a/b", map[string]string{"a/b/memory.max": "1000\n", "a/memory.max": "2000\n"}, 1000},
		{"v2 container root", "0::/", map[string]string{"memory.max": "536870912\n"}, 512 << 20},
		{"v1", "12:cpu,cpuacct:/x\n5:memory:/docker/abc\n", map[string]string{"memory/docker/abc/memory.limit_in_bytes": "2147483648\n"}, 2 << 30},
		{"v1 unlimited", "5:memory:/", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"none", "0::/job", nil, 0},
		{"garbage", "0::/job", map[string]string{"job/memory.max": "lots\n"}, 0},
	} {
		dir := t.TempDir()
		proc := filepath.Join(dir, "cgroup")
		if err := os.WriteFile(proc, []byte(tc.proc), 0o644); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "fs")
		for name, content := range tc.files {
			p := filepath.Join(root, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := cgroupLimit(proc, root); got != tc.want {
			t.Errorf("%s: cgroupLimit = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := cgroupLimit(filepath.Join(t.TempDir(), "missing"), "/nonexistent"); got != 0 {
		t.Errorf("no /proc/self/cgroup: %d, want 0", got)
	}
}

func TestTightest(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{{nil, Unknown}, {[]int64{0, 0}, Unknown}, {[]int64{8 << 30, 0, 2 << 30}, 2 << 30}, {[]int64{3, 5}, 3}} {
		if got := tightest(tc.in...); got != tc.want {
			t.Errorf("tightest(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// Under `prlimit --as`, Limit is the address-space limit (the machine has more memory than it).
func TestAddressSpaceLimit(t *testing.T) {
	if os.Getenv("MEMLIMIT_PRINT") == "1" {
		fmt.Printf("limit=%d\n", Limit())
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("prlimit is Linux's")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	const as = 3 << 30
	if physicalMemory() <= as {
		t.Skip("the machine has less memory than the limit tried")
	}
	cmd := exec.Command(prlimit, "--as="+strconv.Itoa(as), os.Args[0], "-test.run=^TestAddressSpaceLimit$")
	cmd.Env = append(os.Environ(), "MEMLIMIT_PRINT=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := int64(as)
	if c := cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"); c > 0 && c < want {
		want = c
	}
	if !strings.Contains(string(out), fmt.Sprintf("limit=%d\n", want)) {
		t.Errorf("under prlimit --as=%d: %s, want limit=%d", as, out, want)
	}
	if Default() != Limit()/2 {
		t.Errorf("Default = %d, want half of %d", Default(), Limit())
	}
}
