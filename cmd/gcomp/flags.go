package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// multiFlag collects a flag that may be given several times (--input, --arg).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// errHelp reports that -h was given and the usage was printed.
var errHelp = errors.New("help")

// parseFlags parses args for command name, allowing flags before and after the positional
// arguments (gcomp build model.go -o m.gir). It returns the positionals.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(stdout, "usage: gcomp %s %s\n\nFlags:\n", fs.Name(), synopsis)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, fmt.Errorf("gcomp %s: %v (run 'gcomp %s -h')", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// given reports whether flag name was on fs's command line, so that an empty value
// (--text "") is told from an absent flag.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// parseModelArgs parses the flags of a command that takes exactly one model file, and returns it.
func parseModelArgs(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) (string, error) {
	pos, err := parseFlags(fs, args, stdout, synopsis)
	if err != nil {
		return "", err
	}
	cmd := fs.Name()
	switch len(pos) {
	case 0:
		return "", fmt.Errorf("gcomp %s: no model file given", cmd)
	case 1:
		return pos[0], nil
	}
	return "", fmt.Errorf("gcomp %s: want one model file, have %d arguments: %s", cmd, len(pos), strings.Join(pos, " "))
}
