package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gcomp/gcomp/runtime/check"
)

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	mf := addBatchedModelFlags(fs)
	tf := addTargetFlags(fs)
	vf := addValueFlags(fs)
	path, err := parseModelArgs(fs, args, stdout, "MODEL|model.ptx [--target sm_80|sm_86|sm_89|sm_90] [--tf32] [--amp bf16|f16] [--backend ptx|nvvm|auto] [--nvvm-lib PATH] [--weights W.safetensors] [--input NAME=FILE.npy]... [--seed N]")
	if err != nil {
		return err
	}
	copt, err := tf.options()
	if err != nil {
		return fmt.Errorf("gcomp check: %v", err)
	}
	m, art, err := loadRunnable(path, mf, copt, true)
	if err != nil {
		return err
	}
	in, params, err := vf.bind(m, io.Discard)
	if err != nil {
		return err
	}
	rep, err := check.Run(art, in, params)
	if err != nil {
		return fmt.Errorf("gcomp check: %s: %v", path, err)
	}
	p := art.Plan
	mode := map[bool]string{true: " (tf32)"}[p.TF32]
	if p.AMP != "" {
		mode += " (autocast " + p.AMP + ")"
	}
	kernels, arena := fmt.Sprintf("%d kernels", len(p.Kernels)), p.ArenaBytes
	if rep.Variant != "" { // a plan with specializations: what this run's variant launched
		kernels, arena = fmt.Sprintf("%d kernels (the variant for %s)", len(rep.Kernels), rep.Variant), rep.Memory.ArenaBytes
	}
	fmt.Fprintf(stdout, "%s: %s for %s%s, arena %d bytes; simulator %.0f ms (memcheck, racecheck, synccheck on), reference %.0f ms\n\n",
		p.Model, kernels, p.Target, mode, arena,
		float64(rep.SimTime.Microseconds())/1e3, float64(rep.RefTime.Microseconds())/1e3)
	rep.WriteTable(stdout)
	bad := 0
	for _, o := range rep.Outputs {
		if !o.Pass() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("gcomp check: %s: %d of %d outputs differ from the reference", path, bad, len(rep.Outputs))
	}
	return nil
}
