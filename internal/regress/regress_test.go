package regress

import (
	"reflect"
	"testing"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		src  string
		want Header
		err  bool
	}{
		{"graph g {}", Header{Kernels: -1, Seeds: []uint64{0, 1}}, false},
		{"// tf32\n// target: sm_90\n// seeds: 3\ngraph g {}", Header{TF32: true, SM: 90, Kernels: -1, Seeds: []uint64{0, 1, 2}}, false},
		{"// seed: 3767\n// seed: 5\ngraph g {}", Header{Kernels: -1, Seeds: []uint64{3767, 5}}, false},
		{"// kernels: 2 (120 ops over 64)\n// fusion: MaxOps=6 MaxReads=2 MaxRow=7\ngraph g {}", Header{Kernels: 2, Fusion: &[3]int{6, 2, 7}, Seeds: []uint64{0, 1}}, false},
		// Prose, even with a colon, is not an option; options after the graph begins are not read.
		{"// Found by FuzzPipeline: an input\ngraph g {}\n// tf32", Header{Kernels: -1, Seeds: []uint64{0, 1}}, false},
		{"// target: sm_x\ngraph g {}", Header{}, true},
		{"// seed: many\ngraph g {}", Header{}, true},
		{"// fusion: MaxOps=6\ngraph g {}", Header{}, true},
	}
	for _, tc := range tests {
		got, err := ParseHeader(tc.src)
		if (err != nil) != tc.err {
			t.Errorf("%q: err = %v, want error %v", tc.src, err, tc.err)
			continue
		}
		if !tc.err && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.src, got, tc.want)
		}
	}
}
