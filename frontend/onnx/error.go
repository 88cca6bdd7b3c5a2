package onnx

import (
	"errors"
	"fmt"
)

// Error is an import error. Node is the failing node's index in the graph (-1 for errors about
// the model itself, its inputs or initializers); Op and Name identify it.
type Error struct {
	File string
	Node int
	Op   string
	Name string
	Err  error
}

func (e *Error) Error() string {
	if e.Node < 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: node %d (%s %q): %v", e.File, e.Node, e.Op, e.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Unsupported marks what gcomp cannot compile (an op, an attribute value, a dtype): the model
// is valid ONNX, and the message says what is missing.
type Unsupported struct{ Reason string }

func (u *Unsupported) Error() string { return u.Reason }

func unsupportedf(format string, args ...any) error {
	return &Unsupported{fmt.Sprintf(format, args...)}
}

// IsUnsupported reports whether err says the model uses something gcomp does not support, and
// returns the reason.
func IsUnsupported(err error) (string, bool) {
	var u *Unsupported
	if errors.As(err, &u) {
		return u.Reason, true
	}
	return "", false
}

// NeedConst says that an input decides a shape (Reshape's shape, Slice's starts, ...), so its
// value must be bound when the model is compiled (`--const NAME=FILE`).
type NeedConst struct {
	Input string // the graph input
	Use   string // what it determines, e.g. `Reshape "r1"'s shape`
}

func (n *NeedConst) Error() string {
	return fmt.Sprintf("input %q determines %s, which gcomp needs at compile time: bind it with --const %s=FILE.pb|FILE.npy", n.Input, n.Use, n.Input)
}
