package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/train"
)

// dataSpec is a parsed --data flag.
type dataSpec struct {
	kind, path, target string
}

func parseDataSpec(spec, target string) (dataSpec, error) {
	kind, path, hasPath := strings.Cut(spec, ":")
	d := dataSpec{kind: kind, path: path, target: target}
	switch {
	case kind == "fashion-mnist" && (!hasPath || path != ""):
	case (kind == "mnist" || kind == "npy" || kind == "npz" || kind == "csv") && path != "":
	default:
		return d, fmt.Errorf("unknown --data %q (want fashion-mnist, fashion-mnist:DIR, mnist:DIR, npy:DIR, npz:FILE or csv:FILE)", spec)
	}
	if (kind == "csv") != (target != "") {
		if target == "" {
			return d, fmt.Errorf("--data %s needs --target COLUMN, the column of the targets", spec)
		}
		return d, fmt.Errorf("--target is for --data csv:FILE")
	}
	return d, nil
}

// images reports whether the rows are images (the IDX datasets).
func (d dataSpec) images() bool { return d.kind == "fashion-mnist" || d.kind == "mnist" }

// load reads the training set and the test set (nil when the data has none), keeping only the
// first limit rows of each (all for 0).
func (d dataSpec) load(limit int) (trainSet, testSet data.Dataset, err error) {
	if d.images() {
		load := data.FashionMNISTLimit
		if d.kind == "mnist" {
			load = data.LoadMNISTLimit
		}
		tr, te, err := load(d.path, limit)
		if err != nil {
			return nil, nil, err
		}
		if limit > 0 {
			if tr, err = tr.Slice(0, min(limit, tr.N)); err != nil {
				return nil, nil, err
			}
			if te, err = te.Slice(0, min(limit, te.N)); err != nil {
				return nil, nil, err
			}
		}
		return tr, te, nil
	}
	var tr, te *data.Tensors
	switch d.kind {
	case "npy":
		tr, te, err = data.ReadNPYDir(d.path)
	case "npz":
		tr, te, err = data.ReadNPZFile(d.path)
	case "csv":
		tr, err = data.ReadCSVFile(d.path, d.target)
	}
	if err != nil {
		return nil, nil, err
	}
	trainSet = data.Head(tr, limit)
	if te != nil {
		testSet = data.Head(te, limit)
	}
	return trainSet, testSet, nil
}

// lossFlags are the arguments of the losses.
type lossFlags struct {
	weight, posWeight    *string
	ignoreIndex          *int64
	labelSmoothing, beta *float64
}

func (l *lossFlags) add(fs *flag.FlagSet) {
	l.weight = fs.String("class-weights", "", "CrossEntropyLoss, NLLLoss: a weight per class, comma-separated (weight=)")
	l.ignoreIndex = fs.Int64("ignore-index", 0, "CrossEntropyLoss, NLLLoss: labels equal to this add nothing to the loss (ignore_index=; default: none)")
	l.labelSmoothing = fs.Float64("label-smoothing", 0, "CrossEntropyLoss: label_smoothing= in [0, 1]")
	l.beta = fs.Float64("beta", 1, "SmoothL1Loss: beta=, where the quadratic part ends")
	l.posWeight = fs.String("pos-weight", "", "BCEWithLogitsLoss: the weight of positive examples per output, comma-separated (pos_weight=)")
}

// apply sets the arguments given on the command line.
func (l *lossFlags) apply(loss *train.Loss, set map[string]bool) error {
	var err error
	if set["class-weights"] {
		if loss.Weight, err = parseFloats("--class-weights", *l.weight); err != nil {
			return err
		}
	}
	if set["pos-weight"] {
		if loss.PosWeight, err = parseFloats("--pos-weight", *l.posWeight); err != nil {
			return err
		}
	}
	if set["ignore-index"] {
		loss.IgnoreIndex = l.ignoreIndex
	}
	loss.LabelSmoothing = *l.labelSmoothing
	if set["beta"] {
		loss.Beta = l.beta
	}
	return loss.Check()
}

func parseFloats(flag, s string) ([]float64, error) {
	var vs []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", flag, f)
		}
		vs = append(vs, v)
	}
	return vs, nil
}
