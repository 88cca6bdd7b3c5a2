package artifact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// variantPlan is the plan of a graph over two dims built with specializations: b split after 1,
// t after 5, so four programs (three variants and the bound's).
func variantPlan(t *testing.T) *artifact.Plan {
	g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { b in [1,3], t in [2,33] }\n  input %x : f32[b,t,4]\n"+
		"  %0 = exp(%x) : f32[b,t,4]\n  %1 = reduce_sum(%0) {axes=[2]} : f32[b,t]\n  output y = %1\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Specialize: map[string][]int{"b": {1}, "t": {5}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Artifact.Plan
}

// The reader refuses a plan whose variants' ranges overlap, leave sizes uncovered, or lie
// outside the dims, whose version does not match its variants, and a variant whose kernels are
// inconsistent: one error each.
func TestParsePlanVariants(t *testing.T) {
	good := variantPlan(t)
	if _, err := artifact.ParsePlan(good.JSON()); err != nil {
		t.Fatalf("the compiled plan does not parse: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *artifact.Plan)
		want string
	}{
		{"overlap", func(p *artifact.Plan) { p.Variants[0].Ranges[1].Hi = 6 }, "variants 0 (b in [1,1], t in [2,6]) and 1 (b in [1,1], t in [6,33]) overlap"},
		{"uncovered", func(p *artifact.Plan) { p.Variants[0].Ranges[1].Hi = 4 }, "the variants' ranges leave sizes of the dims uncovered"},
		{"own ranges uncovered", func(p *artifact.Plan) { p.OwnRanges[0].Lo = 3 }, "uncovered"},
		{"outside the dim", func(p *artifact.Plan) { p.Variants[0].Ranges[1].Lo = 1 }, "range t in [1,5] is not within dim t in [2,33]"},
		{"dims out of order", func(p *artifact.Plan) {
			p.Variants[0].Ranges[0], p.Variants[0].Ranges[1] = p.Variants[0].Ranges[1], p.Variants[0].Ranges[0]
		}, "is not within dim"},
		{"a range missing", func(p *artifact.Plan) { p.Variants[1].Ranges = p.Variants[1].Ranges[:1] }, "variant 1 has 1 ranges for 2 dims"},
		{"version 4", func(p *artifact.Plan) { p.Version = 4 }, "variants need plan version 5"},
		{"version 5 without variants", func(p *artifact.Plan) { p.Variants, p.OwnRanges = nil, nil }, "variants need plan version 5 and at least one variant"},
		{"a variant's bad argument", func(p *artifact.Plan) { p.Variants[2].Kernels[0].Args[0].Name = "z" }, `variant 2 (b in [2,3], t in [2,5]): kernel`},
		{"a variant's arena", func(p *artifact.Plan) { p.Variants[1].ArenaBytes = 1 << 40 }, "more than its buffers need"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p artifact.Plan
			if err := json.Unmarshal(good.JSON(), &p); err != nil {
				t.Fatal(err)
			}
			tc.edit(&p)
			_, err := artifact.ParsePlan(p.JSON())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Each size of the dims finds the one program whose ranges hold it; the programs share one
// arena of the largest size.
func TestChooseVariant(t *testing.T) {
	p := variantPlan(t)
	plans, err := p.VariantPlans()
	if err != nil {
		t.Fatal(err)
	}
	ranges := p.VariantRanges()
	if len(plans) != 4 || len(ranges) != 4 {
		t.Fatalf("%d programs, %d ranges; want 4", len(plans), len(ranges))
	}
	var arena int64
	for _, v := range p.Variants {
		arena = max(arena, v.ArenaBytes)
	}
	for _, q := range plans {
		if q.ArenaBytes != max(arena, p.ArenaBytes) || len(q.Variants) != 0 {
			t.Errorf("a program's arena is %d bytes, want the largest, %d", q.ArenaBytes, max(arena, p.ArenaBytes))
		}
	}
	for _, tc := range []struct {
		b, t int64
		want string
	}{{1, 2, "b in [1,1], t in [2,5]"}, {1, 5, "b in [1,1], t in [2,5]"}, {1, 6, "b in [1,1], t in [6,33]"},
		{2, 5, "b in [2,3], t in [2,5]"}, {3, 33, "b in [2,3], t in [6,33]"}, {4, 2, ""}, {1, 1, ""}} {
		i := p.ChooseVariant(map[string]int64{"b": tc.b, "t": tc.t})
		got := ""
		if i >= 0 {
			got = artifact.RangesString(ranges[i])
		}
		if got != tc.want {
			t.Errorf("b=%d, t=%d: variant %q, want %q", tc.b, tc.t, got, tc.want)
		}
	}
}
