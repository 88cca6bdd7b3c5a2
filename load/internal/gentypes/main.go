// Command gentypes writes the type information of the packages a model file may import, as one
// export-data bundle, so that the loader can type-check model files with go/types without a Go
// toolchain. Run through `go generate ./load`.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/tools/go/gcexportdata"
)

func main() {
	out := flag.String("o", "", "output file")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gentypes -o FILE PACKAGE...")
		os.Exit(2)
	}
	// The compiler's export data for each package, as `go list -export` builds it.
	list, err := exec.Command("go", append([]string{"list", "-trimpath", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, flag.Args()...)...).Output()
	if err != nil {
		fail(fmt.Errorf("go list: %v", err))
	}
	fset := token.NewFileSet()
	imports := map[string]*types.Package{}
	var tps []*types.Package
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		path, file, _ := strings.Cut(line, "\t")
		f, err := os.Open(file)
		if err != nil {
			fail(err)
		}
		r, err := gcexportdata.NewReader(bufio.NewReader(f))
		if err != nil {
			fail(fmt.Errorf("%s: %v", path, err))
		}
		p, err := gcexportdata.Read(r, fset, imports, path)
		f.Close()
		if err != nil {
			fail(fmt.Errorf("%s: %v", path, err))
		}
		tps = append(tps, p)
	}
	// The first line names the Go release whose standard library the bundle describes.
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		fail(fmt.Errorf("go env: %v", err))
	}
	var buf bytes.Buffer
	buf.Write(goVersion)
	if err := gcexportdata.WriteBundle(&buf, fset, tps); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gentypes:", err)
	os.Exit(1)
}
