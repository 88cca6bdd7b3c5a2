package artifact

import "fmt"

// validateAliases checks the outputs written in place of an input (IOBuffer.InPlaceOf, plan
// version 3): each names an input of its own type, and no two outputs name one input. Inputs and
// parameters alias nothing.
func (p *Plan) validateAliases() error {
	inputs := map[string]string{}
	for _, b := range p.Inputs {
		inputs[b.Name] = b.Type
	}
	for _, set := range []struct {
		kind string
		bufs []IOBuffer
	}{{ArgInput, p.Inputs}, {ArgParam, p.Params}} {
		for _, b := range set.bufs {
			if b.InPlaceOf != "" {
				return fmt.Errorf("%s %s: only an output can be in place of an input", set.kind, b.Name)
			}
		}
	}
	taken := map[string]string{}
	for _, o := range p.Outputs {
		if o.InPlaceOf == "" {
			continue
		}
		if p.Version < 3 {
			return fmt.Errorf("output %s: in_place_of needs plan version 3, this plan is version %d", o.Name, p.Version)
		}
		t, ok := inputs[o.InPlaceOf]
		if !ok {
			return fmt.Errorf("output %s is in place of %q, which is no input of the plan", o.Name, o.InPlaceOf)
		}
		if t != o.Type {
			return fmt.Errorf("output %s (%s) is in place of input %s of another type (%s)", o.Name, o.Type, o.InPlaceOf, t)
		}
		if prev, ok := taken[o.InPlaceOf]; ok {
			return fmt.Errorf("outputs %s and %s are both in place of input %s", prev, o.Name, o.InPlaceOf)
		}
		taken[o.InPlaceOf] = o.Name
	}
	return nil
}
