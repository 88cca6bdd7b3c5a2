package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/parallel"
	"github.com/gcomp/gcomp/tensor"
)

// parallelDevices reports whether --device names a list of devices to split the batch over
// (sim:0,sim:1 or cuda:0,cuda:1; a lone sim:N too).
func parallelDevices(name string) bool {
	return strings.Contains(name, ",") || strings.HasPrefix(name, "sim:")
}

// runParallel is gcomp run over a device list (runtime/parallel): the model traced at the global
// batch (--batch, else its own) binds the inputs and weights; traced again at batch/N it is
// compiled once and runs on every device, each on its shard of the batch.
func runParallel(path, list string, mf modelFlags, tf targetFlags, vf valueFlags, cudaLib string, noCheck bool, outDir string, saveInputs bool, stderr io.Writer) (in, outs map[string]*tensor.Tensor, files runFiles, err error) {
	fail := func(err error) (map[string]*tensor.Tensor, map[string]*tensor.Tensor, runFiles, error) {
		return nil, nil, runFiles{}, fmt.Errorf("gcomp run: %s", prefixPath(path, err))
	}
	specs, err := parallel.ParseDevices(list)
	if err != nil {
		return nil, nil, runFiles{}, fmt.Errorf("gcomp run: --device: %v", err)
	}
	copt, err := tf.options()
	if err != nil {
		return nil, nil, runFiles{}, fmt.Errorf("gcomp run: %v", err)
	}
	if strings.HasSuffix(path, ".ptx") {
		return fail(fmt.Errorf("a compiled module is fixed at one batch: give the model's source to split its batch over %d devices", len(specs)))
	}
	// The devices open first: a missing GPU is the first thing to hear of.
	devs := make([]executor.Device, 0, len(specs))
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, s := range specs {
		dev, err := openRank(s, cudaLib, noCheck) // a simulated GPU for sim:N, as gcomp train's ranks
		if err != nil {
			return nil, nil, runFiles{}, fmt.Errorf("gcomp run: %s: %v", s.Name, err)
		}
		devs = append(devs, dev)
	}
	m, batch, err := mf.loadModelBatch(path, 0)
	if err != nil {
		return nil, nil, runFiles{}, err
	}
	n := len(specs)
	switch {
	case batch == 0:
		return fail(fmt.Errorf("the model declares no batch (b.Batch) to split over %d devices", n))
	case batch%n != 0:
		return fail(fmt.Errorf("batch %d does not split evenly over %d devices", batch, n))
	}
	files = newRunFiles(m.Graph, m.Names, saveInputs)
	if err := checkNPYFiles(outDir, files.names); outDir != "" && err != nil {
		return fail(err)
	}
	shard, _, err := mf.loadModelBatch(path, batch/n)
	if err != nil {
		return nil, nil, runFiles{}, err
	}
	plan, err := parallel.NewPlan(m.Graph, shard.Graph, n)
	if err != nil {
		return fail(err)
	}
	res, err := compiler.Compile(shard.Graph, copt)
	if err != nil {
		return fail(err)
	}
	in, params, err := vf.bind(m, stderr)
	if err != nil {
		return nil, nil, runFiles{}, err
	}
	if outs, err = parallel.Forward(devs, res.Artifact, plan, params, in); err != nil {
		return fail(err)
	}
	return in, outs, files, nil
}
