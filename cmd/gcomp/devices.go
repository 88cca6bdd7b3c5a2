package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/device"
)

// cmdDevices lists where models can run: the CUDA driver and each GPU, the
// simulator and the reference interpreter, and which one --device auto
// picks; without a usable GPU it says why.
func cmdDevices(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	lib := fs.String("cuda-lib", "", "the CUDA driver library to load (default $"+cuda.LibraryEnv+", else "+cuda.DefaultLibrary+")")
	pos, err := parseFlags(fs, args, stdout, "[--cuda-lib PATH]")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("gcomp devices: unexpected arguments: %s", strings.Join(pos, " "))
	}
	r := device.Probe(device.Options{CUDALib: *lib, Driver: testDriver})
	writeDevices(stdout, r)
	return nil
}

// writeDevices prints a Probe report.
func writeDevices(w io.Writer, r *device.Report) {
	if r.DriverVersion > 0 {
		fmt.Fprintf(w, "CUDA driver %s (%s)\n", device.FormatVersion(r.DriverVersion), r.Library)
	} else {
		fmt.Fprintln(w, "CUDA driver: none")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	auto := "sim"
	for _, g := range r.GPUs {
		name := fmt.Sprintf("cuda:%d", g.Ordinal)
		if g.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\tunusable: %v\n", name, g.Name, g.Arch, g.Err)
			continue
		}
		if auto == "sim" {
			auto = name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d SMs, %s, %s free\n", name, g.Name, g.Arch, g.SMs,
			cuda.FormatBytes(g.TotalMem), cuda.FormatBytes(g.FreeMem))
	}
	fmt.Fprintf(tw, "sim\tthe PTX simulator (no GPU needed)\n")
	fmt.Fprintf(tw, "ref\tthe reference interpreter on the source graph\n")
	tw.Flush()
	if !r.Usable() {
		fmt.Fprintf(w, "no usable GPU: %s\n", r.Reason)
	}
	fmt.Fprintf(w, "--device auto selects %s\n", auto)
}
