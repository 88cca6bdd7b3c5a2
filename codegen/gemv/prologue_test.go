package gemv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestRowPrologue: a norm of buffers' rows is a prologue (its reductions, in order) for up to
// MaxPrologueRows rows contracting the last dim, through a reshape; above MaxUnstagedRows only
// for a LayerNorm whose rows are staged (StagedRows), without a gather; more rows, a
// contraction over another dim, a per-row value spread by a non-identity broadcast, or another
// reduction are not.
func TestRowPrologue(t *testing.T) {
	for _, c := range []struct {
		name, src string
		reds      int
	}{
		{"layernorm", `graph g {
  input %x : f32[2,256]
  input %w : f32[256,64]
  %s = reduce_sum(%x) {axes=[1], keepdims=true} : f32[2,1]
  %b = broadcast_in_dim(%s) {dims=[0,1], shape=[2,256]} : f32[2,256]
  %c = sub(%x, %b) : f32[2,256]
  %q = mul(%c, %c) : f32[2,256]
  %v = reduce_sum(%q) {axes=[1], keepdims=true} : f32[2,1]
  %r = rsqrt(%v) : f32[2,1]
  %rb = broadcast_in_dim(%r) {dims=[0,1], shape=[2,256]} : f32[2,256]
  %h = mul(%c, %rb) : f32[2,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,64]
  output y = %y
}`, 2},
		{"rmsnorm_reshaped", `graph g {
  input %x : f32[1,1,256]
  input %w : f32[64,256]
  %q = mul(%x, %x) : f32[1,1,256]
  %v = reduce_sum(%q) {axes=[2], keepdims=true} : f32[1,1,1]
  %r = rsqrt(%v) : f32[1,1,1]
  %rb = broadcast_in_dim(%r) {dims=[0,1,2], shape=[1,1,256]} : f32[1,1,256]
  %h = mul(%x, %rb) : f32[1,1,256]
  %h2 = reshape(%h) {shape=[1,256]} : f32[1,256]
  %y = dot_general(%h2, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[1,64]
  output y = %y
}`, 1},
		{"four_rows", scaledRows(4), 1},
		{"five_rows", scaledRows(5), 0},
		{"nine_rows", scaledRows(9), 0},
		// Above MaxUnstagedRows a prologue needs its rows staged, or one reduction of a buffer.
		{"layernorm_8_rows_staged", layerNormRows(MaxPrologueRows, MaxStagedBytes/4/MaxPrologueRows, "%x"), 2},
		{"layernorm_4_rows_unstaged", layerNormRows(MaxUnstagedRows, MaxStagedBytes/4/MaxUnstagedRows+64, "%x"), 2},
		{"layernorm_5_rows_unstaged", layerNormRows(MaxUnstagedRows+1, MaxStagedBytes/4/MaxUnstagedRows, "%x"), 0},
		{"layernorm_8_rows_variance_of_another_input", layerNormRows(MaxPrologueRows, 256, "%z"), 0},
		{"embeddings_8_rows_staged", embedRMSNormRows(MaxPrologueRows, MaxStagedBytes/4/MaxPrologueRows), 0},
		{"embeddings_5_rows_unstaged", embedRMSNormRows(MaxUnstagedRows+1, MaxStagedBytes/4/MaxUnstagedRows), 0},
		{"embeddings_4_rows_unstaged", embedRMSNormRows(MaxUnstagedRows, MaxStagedBytes/4/MaxUnstagedRows+64), 1},
		{"rmsnorm_8_rows", strings.ReplaceAll(strings.ReplaceAll(embedRMSNormRows(MaxPrologueRows, 1024), "%x = gather(%t, %tok) : f32[8,1024]\n", ""), "input %tok : i64[8]", "input %x : f32[8,1024]"), 0},
		{"reduce_over_rows", `graph g {
  input %x : f32[2,256]
  input %w : f32[256,64]
  %v = reduce_sum(%x) {axes=[0], keepdims=true} : f32[1,256]
  %rb = broadcast_in_dim(%v) {dims=[0,1], shape=[2,256]} : f32[2,256]
  %h = mul(%x, %rb) : f32[2,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,64]
  output y = %y
}`, 0},
		{"transposed_row_values", `graph g {
  input %x : f32[2,256]
  input %w : f32[256,64]
  %v = reduce_sum(%x) {axes=[1], keepdims=true} : f32[2,1]
  %t = transpose(%v) {perm=[1,0]} : f32[1,2]
  %rb = broadcast_in_dim(%t) {dims=[0,1], shape=[2,2]} : f32[2,2]
  %p = pad(%rb) {low=[0,0], high=[0,254], value=0.0} : f32[2,256]
  %h = mul(%x, %p) : f32[2,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,64]
  output y = %y
}`, 0},
	} {
		dot := parseDot(t, c.name, c.src)
		if got := RowPrologue(dot); len(got) != c.reds {
			t.Errorf("%s: %d reductions in the prologue, want %d", c.name, len(got), c.reds)
		}
		if _, ok := Of(dot); ok != (c.reds > 0) {
			t.Errorf("%s: Of %v, want %v", c.name, ok, c.reds > 0)
		}
	}
}

// TestStagedRows: a LayerNorm's rows are kept in shared memory when its variance reads them
// again and they fit in MaxStagedBytes as f32; an RMSNorm (one reduction; above
// MaxUnstagedRows rows no prologue), a second reduction
// that does not read the first one's operand, and rows over the limit are not.
func TestStagedRows(t *testing.T) {
	rmsNorm := `graph g {
  input %x : f32[1,256]
  input %w : f32[256,64]
  %q = mul(%x, %x) : f32[1,256]
  %v = reduce_sum(%q) {axes=[1], keepdims=true} : f32[1,1]
  %rb = broadcast_in_dim(%v) {dims=[0,1], shape=[1,256]} : f32[1,256]
  %h = mul(%x, %rb) : f32[1,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %y
}`
	for _, c := range []struct {
		name, src string
		staged    string // the staged value's name; "" for none
	}{
		{"layernorm", layerNormRows(1, 768, "%x"), "x"},
		{"layernorm_at_the_limit", layerNormRows(1, MaxStagedBytes/4, "%x"), "x"},
		{"layernorm_over_the_limit", layerNormRows(2, MaxStagedBytes/8+64, "%x"), ""},
		{"variance_of_another_input", layerNormRows(1, 768, "%z"), ""},
		{"rmsnorm", rmsNorm, ""},
		{"rmsnorm_5_rows", strings.ReplaceAll(rmsNorm, "[1,", "[5,"), ""},
		{"rmsnorm_of_embeddings", embedRMSNorm(256), "x"},
		{"rmsnorm_of_embeddings_over_the_limit", embedRMSNorm(MaxStagedBytes/4 + 64), ""},
	} {
		got := ""
		if s := StagedRows(parseDot(t, c.name, c.src)); s != nil {
			got = s.Name
		}
		if got != c.staged {
			t.Errorf("%s: staged %q, want %q", c.name, got, c.staged)
		}
	}
}

// scaledRows is a GEMV over m rows of x scaled by their sums.
func scaledRows(m int) string {
	return fmt.Sprintf(`graph g {
  input %%x : f32[%[1]d,256]
  input %%w : f32[256,64]
  %%v = reduce_sum(%%x) {axes=[1], keepdims=true} : f32[%[1]d,1]
  %%rb = broadcast_in_dim(%%v) {dims=[0,1], shape=[%[1]d,256]} : f32[%[1]d,256]
  %%h = mul(%%x, %%rb) : f32[%[1]d,256]
  %%y = dot_general(%%h, %%w) {lhs_contract=[1], rhs_contract=[0]} : f32[%[1]d,64]
  output y = %%y
}`, m)
}

// layerNormRows is an f16 LayerNorm GEMV of m rows of k elements whose variance reads second
// (%x: the rows, %z: another input).
func layerNormRows(m, k int, second string) string {
	return fmt.Sprintf(`graph g {
  input %%x : f16[%[1]d,%[2]d]
  input %%z : f16[%[1]d,%[2]d]
  input %%w : f16[%[2]d,64]
  %%s = reduce_sum(%%x) {axes=[1], keepdims=true} : f16[%[1]d,1]
  %%b = broadcast_in_dim(%%s) {dims=[0,1], shape=[%[1]d,%[2]d]} : f16[%[1]d,%[2]d]
  %%c = sub(%[3]s, %%b) : f16[%[1]d,%[2]d]
  %%q = mul(%%c, %%c) : f16[%[1]d,%[2]d]
  %%v = reduce_sum(%%q) {axes=[1], keepdims=true} : f16[%[1]d,1]
  %%r = rsqrt(%%v) : f16[%[1]d,1]
  %%rb = broadcast_in_dim(%%r) {dims=[0,1], shape=[%[1]d,%[2]d]} : f16[%[1]d,%[2]d]
  %%h = mul(%%c, %%rb) : f16[%[1]d,%[2]d]
  %%y = dot_general(%%h, %%w) {lhs_contract=[1], rhs_contract=[0]} : f16[%[1]d,64]
  output y = %%y
}`, m, k, second)
}

// embedRMSNorm is an RMSNorm GEMV over a row gathered from an embedding table by token id.
func embedRMSNorm(k int) string { return embedRMSNormRows(1, k) }

// embedRMSNormRows is embedRMSNorm over m rows gathered by m token ids.
func embedRMSNormRows(m, k int) string {
	return fmt.Sprintf(`graph g {
  input %%t : f32[50,%[1]d]
  input %%tok : i64[%[2]d]
  input %%w : f32[%[1]d,64]
  %%x = gather(%%t, %%tok) : f32[%[2]d,%[1]d]
  %%q = mul(%%x, %%x) : f32[%[2]d,%[1]d]
  %%v = reduce_sum(%%q) {axes=[1], keepdims=true} : f32[%[2]d,1]
  %%rb = broadcast_in_dim(%%v) {dims=[0,1], shape=[%[2]d,%[1]d]} : f32[%[2]d,%[1]d]
  %%h = mul(%%x, %%rb) : f32[%[2]d,%[1]d]
  %%y = dot_general(%%h, %%w) {lhs_contract=[1], rhs_contract=[0]} : f32[%[2]d,64]
  output y = %%y
}`, k, m)
}

// TestRowOutput: of an RMSNorm GEMV over gathered embeddings, the gathered rows are a row
// output (and the gather a prologue value); the norm's output (fed by its reduction), the
// per-row value, the product and a buffer are not; nor is anything of a product without a
// prologue.
func TestRowOutput(t *testing.T) {
	dot := parseDot(t, "embed", embedRMSNorm(256))
	byName := map[string]bool{"x": true, "q": true, "h": false, "v": false, "t": false, "y": false}
	seen := map[string]bool{}
	var walk func(v *ir.Value)
	walk = func(v *ir.Value) {
		if want, ok := byName[v.Name]; ok && !seen[v.Name] {
			seen[v.Name] = true
			if got := RowOutput(dot, v); got != want {
				t.Errorf("RowOutput(%s) = %v, want %v", v.Name, got, want)
			}
		}
		for _, a := range v.Args {
			walk(a)
		}
	}
	walk(dot)
	if len(seen) != len(byName) {
		t.Errorf("found %d of the %d named values", len(seen), len(byName))
	}
	if !InRowPrologue(dot, dot.Args[0].Args[0]) {
		t.Error("the gathered rows are not in the prologue")
	}
	plain := parseDot(t, "plain", `graph g {
  input %x : f32[1,256]
  input %w : f32[256,64]
  %e = exp(%x) : f32[1,256]
  %y = dot_general(%e, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %y
}`)
	if RowOutput(plain, plain.Args[0]) || InRowPrologue(plain, plain.Args[0]) {
		t.Error("a product without a norm prologue has row outputs")
	}
}
