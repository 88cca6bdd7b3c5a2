package parallel

import (
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// Forward runs art, compiled at the per-device batch, on every device at once: each device gets
// the parameters whole and its shard of the inputs (plan.Split), in a goroutine of its own, and
// the outputs are gathered in device order (plan.Gather). The first device's error, by device
// order, is returned, naming the device.
func Forward(devs []executor.Device, art *artifact.Artifact, plan *Plan, params, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if len(devs) != plan.N {
		return nil, fmt.Errorf("parallel: %d devices for a plan over %d", len(devs), plan.N)
	}
	shards, err := plan.Split(inputs)
	if err != nil {
		return nil, err
	}
	outs := make([]map[string]*tensor.Tensor, len(devs))
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, dev := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = runShard(dev, art, params, shards[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("device %d (%s): %w", i, devs[i].Name(), err)
		}
	}
	return plan.Gather(outs)
}

// runShard loads the model on one device and runs it once.
func runShard(dev executor.Device, art *artifact.Artifact, params, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	prog, err := executor.Load(dev, art)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.SetParams(params); err != nil {
		return nil, err
	}
	res, err := prog.Run(inputs)
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}
