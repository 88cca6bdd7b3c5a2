package tensorio

import (
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// WriteFileAtomic replaces only regular files (or nothing) by rename; it writes through symbolic
// links and into character devices, and refuses what it must not replace.
func TestWriteFileAtomicDestinations(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	mustWrite := func(name, text string, mode fs.FileMode) {
		if err := os.WriteFile(at(name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(at(name), mode)
	}
	symlink := func(target, name string) {
		if err := os.Symlink(target, at(name)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("regular", "old", 0o600)
	mustWrite("target", "old", 0o644)
	symlink("target", "link")
	symlink("link", "chain")
	symlink("absent", "dangling")
	symlink(at("target2"), "abslink")
	mustWrite("target2", "old", 0o644)
	os.Mkdir(at("dir"), 0o755)
	if err := syscall.Mkfifo(at("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", at("sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	tests := []struct {
		name string
		path string
		want string // "" for success, else a substring of the error
		file string // the file that must hold "new" afterwards
		mode fs.FileMode
	}{
		{"new file", at("new"), "", at("new"), 0o644},
		{"regular file keeps its mode", at("regular"), "", at("regular"), 0o600},
		{"symlink", at("link"), "", at("target"), 0o644},
		{"symlink chain", at("chain"), "", at("target"), 0o644},
		{"absolute symlink", at("abslink"), "", at("target2"), 0o644},
		{"dangling symlink", at("dangling"), "", at("absent"), 0o644},
		{"directory", at("dir"), "is a directory", "", 0},
		{"socket", at("sock"), "refusing to replace it", "", 0},
		{"missing directory", at("nodir/x"), "no such file or directory", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFileAtomic(tc.path, writeString("new"))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tensorio: "+tc.path+": ") {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(tc.file); err != nil || string(b) != "new" {
				t.Errorf("%s holds %q (%v), want new", tc.file, b, err)
			}
			if st, err := os.Stat(tc.file); err != nil || st.Mode() != tc.mode {
				t.Errorf("%s: mode %v (%v), want %v", tc.file, st.Mode(), err, tc.mode)
			}
		})
	}
	for _, link := range []string{"link", "chain", "dangling", "abslink"} {
		if st, err := os.Lstat(at(link)); err != nil || st.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s was replaced (%v)", link, err)
		}
	}
	if st, err := os.Lstat(at("sock")); err != nil || st.Mode()&fs.ModeSocket == 0 {
		t.Errorf("the socket was replaced (%v)", err)
	}
	if m, _ := filepath.Glob(at(".*")); len(m) != 0 {
		t.Errorf("temporaries left behind: %v", m)
	}

	// A named pipe is written in place: its reader gets the bytes and the pipe stays a pipe.
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(at("fifo"))
		got <- string(b)
	}()
	if err := WriteFileAtomic(at("fifo"), writeString("piped")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "piped" {
		t.Errorf("the pipe's reader got %q", s)
	}
	if st, err := os.Lstat(at("fifo")); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced (%v)", err)
	}
}

// Character devices are written directly and stay devices; a device's write error is the error.
func TestWriteFileAtomicDevices(t *testing.T) {
	for _, dev := range []string{"/dev/null", "/dev/full"} {
		if st, err := os.Stat(dev); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
			t.Skipf("%s is not a character device here", dev)
		}
	}
	if err := WriteFileAtomic("/dev/null", writeString("new")); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device (%v)", err)
	}
	err := WriteFileAtomic("/dev/full", writeString("new"))
	if err == nil || err.Error() != "tensorio: /dev/full: no space left on device" {
		t.Errorf("/dev/full: err = %v", err)
	}
}

// A command's outputs are published together: when one destination is bad or one write fails,
// no file changes and no temporary is left.
func TestWriteFilesAtomicAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := func(io.Writer) error { return io.ErrShortWrite }
	os.Mkdir(b, 0o755)
	if err := WriteFilesAtomic(FileWrite{a, writeString("new")}, FileWrite{b, writeString("new")}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("b a directory: err = %v", err)
	}
	os.Remove(b)
	if err := WriteFilesAtomic(FileWrite{a, writeString("new")}, FileWrite{b, failing}); err == nil || !strings.Contains(err.Error(), "short write") {
		t.Errorf("b's write fails: err = %v", err)
	}
	if got, _ := os.ReadFile(a); string(got) != "old" {
		t.Errorf("a = %q after failed writes, want old", got)
	}
	if names := listDir(t, dir); strings.Join(names, " ") != "a" {
		t.Errorf("the directory holds %v, want only a", names)
	}
	if err := WriteFilesAtomic(FileWrite{a, writeString("new a")}, FileWrite{b, writeString("new b")}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{a: "new a", b: "new b"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
