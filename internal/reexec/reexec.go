package reexec

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// Start runs the test binary with env added to the environment and no tests
// selected. The child's first line of output arrives on the channel; the
// child is killed when the test ends.
func Start(t testing.TB, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		first <- sc.Text()
		for sc.Scan() { // drain, so the child never blocks writing
		}
	}()
	return cmd, first
}
