package main

import (
	"io"

	simcli "github.com/gcomp/gcomp/sim/cli"
)

// cmdSim runs a PTX kernel on the simulator; the simulator's own CLI package does the work and
// prints its messages.
func cmdSim(args []string, stdout, stderr io.Writer) error {
	if simcli.Main(args, stdout, stderr) != 0 {
		return errUsage
	}
	return nil
}
