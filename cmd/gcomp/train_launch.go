package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/runtime/rendezvous"
	"github.com/gcomp/gcomp/train"
)

// launch is where this gcomp train process stands in a multi-node run.
type launch struct {
	nnodes, nodeRank int
	rendezvous       string
	device           string
}

// resolveLaunch completes l (the flags' values; set says which were given) from a launcher's
// environment (rendezvous.FromEnv over lookup) when none of --nnodes, --node-rank and
// --rendezvous is given, and says on stderr which launcher's variables it used. Without
// --device the process drives its local rank's GPU.
func resolveLaunch(l *launch, set map[string]bool, lookup func(string) (string, bool), stderr io.Writer) error {
	switch {
	case l.nnodes > rendezvous.MaxNodes:
		return fmt.Errorf("--nnodes %d: at most %d", l.nnodes, rendezvous.MaxNodes)
	case set["rendezvous"] && !set["nnodes"]:
		return fmt.Errorf("--rendezvous %s needs --nnodes N and --node-rank R (or a launcher's environment without these flags)", l.rendezvous)
	case set["nnodes"] || set["node-rank"] || set["rendezvous"]:
		return nil // the flags win over the environment
	}
	env, err := rendezvous.FromEnv(lookup)
	if err != nil || env == nil {
		return err
	}
	l.nnodes, l.nodeRank, l.rendezvous = env.NNodes, env.NodeRank, env.Addr
	dev := ""
	if !set["device"] {
		l.device = "cuda:" + strconv.Itoa(env.LocalRank)
		dev = ", device " + l.device + " (the local rank's)"
	}
	fmt.Fprintf(stderr, "gcomp train: node %d of %d from the %s environment (%s): rendezvous at %s%s\n",
		l.nodeRank, l.nnodes, env.Launcher, strings.Join(env.Vars, " "), l.rendezvous, dev)
	return nil
}

// trainSettings is the training's configuration that every node of a multi-node run must share
// beside the model and the batch (the rendezvous compares them and names each difference): the
// optimizer and its hyperparameters as resolved, the loss and its arguments, and the flags that
// change what is trained.
func trainSettings(fs *flag.FlagSet, opt train.Optimizer, loss train.Loss) []rendezvous.Setting {
	s := []rendezvous.Setting{{Name: "--optimizer", Value: opt.Name()}}
	v := reflect.Indirect(reflect.ValueOf(opt))
	flagOf := map[string]string{"LR": "--lr", "Momentum": "--momentum", "WeightDecay": "--weight-decay"}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		name := flagOf[f.Name]
		if name == "" {
			name = opt.Name() + " " + f.Name
		}
		s = append(s, rendezvous.Setting{Name: name, Value: fmt.Sprint(v.Field(i).Interface())})
	}
	s = append(s, rendezvous.Setting{Name: "--loss", Value: loss.Name},
		rendezvous.Setting{Name: "--class-weights", Value: floats(loss.Weight)},
		rendezvous.Setting{Name: "--ignore-index", Value: deref(loss.IgnoreIndex)},
		rendezvous.Setting{Name: "--label-smoothing", Value: fmt.Sprint(loss.LabelSmoothing)},
		rendezvous.Setting{Name: "--beta", Value: deref(loss.Beta)},
		rendezvous.Setting{Name: "--pos-weight", Value: floats(loss.PosWeight)})
	for _, name := range []string{"epochs", "seed", "lr-schedule", "lr-step-size", "lr-gamma", "lr-min", "amp", "limit", "target", "max-batch"} {
		if f := fs.Lookup(name); f != nil {
			s = append(s, rendezvous.Setting{Name: "--" + name, Value: f.Value.String()})
		}
	}
	return s
}

func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func deref[T any](p *T) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
