package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/tensorio"
	"github.com/gcomp/gcomp/train"
)

// scheduleFlags are gcomp train's learning-rate schedule flags.
type scheduleFlags struct {
	kind     *string
	stepSize *int
	gamma    *float64
	minLR    *float64
}

func (f *scheduleFlags) add(fs *flag.FlagSet) {
	f.kind = fs.String("lr-schedule", "", "learning-rate schedule, torch.optim.lr_scheduler's: step (StepLR stepped every epoch: --lr-step-size, --lr-gamma), cosine (CosineAnnealingLR stepped every batch, T_max the run's batches: --lr-min) or onecycle (OneCycleLR stepped every batch with PyTorch's defaults: max_lr --lr, total_steps the run's batches, pct_start 0.3, cos annealing, div_factor 25, final_div_factor 1e4, sgd's momentum or adam's beta1 cycled between 0.85 and 0.95, in place of --momentum); data-parallel, a batch is a global batch; with --resume, the checkpoint's continues")
	f.stepSize = fs.Int("lr-step-size", 0, "step: epochs between decays of the learning rate")
	f.gamma = fs.Float64("lr-gamma", 0.1, "step: the factor of each decay")
	f.minLR = fs.Float64("lr-min", 0, "cosine: the last learning rate (eta_min)")
}

// check rejects flags that do not go together.
func (f *scheduleFlags) check(set map[string]bool, resume bool) error {
	if resume && (set["lr-schedule"] || set["lr-step-size"] || set["lr-gamma"] || set["lr-min"]) {
		return fmt.Errorf("--resume continues the checkpoint's learning-rate schedule; --lr-schedule and its flags are for a new run")
	}
	switch *f.kind {
	case "":
		if set["lr-step-size"] || set["lr-gamma"] || set["lr-min"] {
			return fmt.Errorf("--lr-step-size, --lr-gamma and --lr-min need --lr-schedule")
		}
	case "step":
		if set["lr-min"] {
			return fmt.Errorf("--lr-min is for --lr-schedule cosine")
		}
		if !set["lr-step-size"] {
			return fmt.Errorf("--lr-schedule step needs --lr-step-size N (epochs between decays)")
		}
	case "cosine", "onecycle":
		if set["lr-step-size"] || set["lr-gamma"] {
			return fmt.Errorf("--lr-step-size and --lr-gamma are for --lr-schedule step")
		}
		if *f.kind == "onecycle" && set["lr-min"] {
			return fmt.Errorf("--lr-min is for --lr-schedule cosine")
		}
		if *f.kind == "onecycle" && set["momentum"] {
			// It would be ignored, as PyTorch's OneCycleLR ignores it.
			return fmt.Errorf("--momentum: --lr-schedule onecycle cycles sgd's momentum between 0.85 and 0.95 in its place")
		}
	default:
		n := len(train.Schedules)
		return fmt.Errorf("--lr-schedule %q: want %s or %s", *f.kind, strings.Join(train.Schedules[:n-1], ", "), train.Schedules[n-1])
	}
	return nil
}

// schedule is the run's schedule for batches updates an epoch: the flags', or with --resume the
// checkpoint's (nil for none).
func (f *scheduleFlags) schedule(resume string, epochs, batches int) (*train.Schedule, error) {
	if resume != "" {
		_, meta, err := tensorio.ReadSafetensorsFile(resume)
		if err != nil {
			return nil, err
		}
		if text := meta[train.MetaSchedule]; text != "" {
			s, err := train.ParseSchedule(text)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", resume, err)
			}
			return s, nil
		}
		return nil, nil
	}
	var s *train.Schedule
	switch *f.kind {
	case "step":
		s = &train.Schedule{Kind: "step", StepSize: *f.stepSize, Gamma: *f.gamma, StepsPerEpoch: batches}
	case "cosine":
		s = &train.Schedule{Kind: "cosine", TMax: epochs * batches, MinLR: *f.minLR}
	case "onecycle":
		s = train.NewOneCycle(epochs * batches)
	default:
		return nil, nil
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

func describeSchedule(s *train.Schedule) string {
	if s == nil {
		return ""
	}
	return ", lr schedule " + s.String()
}
