// Command mutate applies one-line mutants to the source, one at a time, runs the tests of the
// packages each names, and prints which the tests kill and the kill score. A mutant that survives
// is a behaviour change no test sees.
//
// Usage, from the repository root:
//
//	go run ./scripts/mutate [-run REGEXP] [MUTANTS]     (default scripts/mutate/mutants.txt)
//
// Each line of MUTANTS is FILE, OLD, NEW and PACKAGES separated by tabs: OLD must occur exactly
// once in FILE and becomes NEW (either may be a Go double-quoted string, for tabs and newlines);
// PACKAGES (space separated) are tested with `go test -count=1`. Blank lines and lines starting
// with # are skipped. The file is restored after each mutant, also on interrupt.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type mutant struct {
	line           int
	file, old, new string
	pkgs           []string
}

func main() {
	run := flag.String("run", "", "only the mutants whose \"FILE OLD\" matches this regular expression")
	flag.Parse()
	path := "scripts/mutate/mutants.txt"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	ms, err := read(path)
	if err == nil && *run != "" {
		var re *regexp.Regexp
		if re, err = regexp.Compile(*run); err == nil {
			var keep []mutant
			for _, m := range ms {
				if re.MatchString(m.file + " " + m.old) {
					keep = append(keep, m)
				}
			}
			ms = keep
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
	killed := 0
	for _, m := range ms {
		ok, took, err := try(m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mutate: %s:%d: %v\n", path, m.line, err)
			os.Exit(1)
		}
		res := "SURVIVED"
		if ok {
			res, killed = "killed", killed+1
		}
		fmt.Printf("%-8s %5.1fs  %s: %q -> %q\n", res, took.Seconds(), m.file, m.old, m.new)
	}
	fmt.Printf("killed %d of %d mutants\n", killed, len(ms))
}

func read(path string) ([]mutant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mutant
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 4 {
			return nil, fmt.Errorf("%s:%d: want FILE, OLD, NEW and PACKAGES separated by tabs", path, n)
		}
		for i := 1; i <= 2; i++ {
			if strings.HasPrefix(parts[i], `"`) {
				s, err := strconv.Unquote(parts[i])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", path, n, err)
				}
				parts[i] = s
			}
		}
		ms = append(ms, mutant{n, parts[0], parts[1], parts[2], strings.Fields(parts[3])})
	}
	return ms, sc.Err()
}

// try applies m, runs its packages' tests and restores the file; killed means the tests failed.
func try(m mutant) (killed bool, took time.Duration, err error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return false, 0, err
	}
	if c := bytes.Count(orig, []byte(m.old)); c != 1 {
		return false, 0, fmt.Errorf("%q occurs %d times in %s, want once", m.old, c, m.file)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	restore := func() { os.WriteFile(m.file, orig, 0o644) }
	go func() {
		if _, ok := <-sig; ok {
			restore()
			os.Exit(1)
		}
	}()
	defer restore()
	if err := os.WriteFile(m.file, bytes.Replace(orig, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
		return false, 0, err
	}
	start := time.Now()
	cmd := exec.Command("go", append([]string{"test", "-count=1"}, m.pkgs...)...)
	out, err := cmd.CombinedOutput()
	took = time.Since(start)
	if err == nil {
		return false, took, nil
	}
	if _, ok := err.(*exec.ExitError); !ok || bytes.Contains(out, []byte("[setup failed]")) || bytes.Contains(out, []byte("[build failed]")) {
		// A mutant that does not compile is a mistake in the list, not a kill.
		return false, took, fmt.Errorf("go test: %v\n%s", err, out)
	}
	return true, took, nil
}
