package frontend

// permuteInputs returns x[..., perm]: x's last dim gathered by perm, the input order of a weight
// stored with its input channels permuted (Quant.Permuted). x·wᵀ over the permuted weight is then
// the product over the original one: Σ_j x[perm[j]]·w'[n, j] with w'[n, j] = w[n, perm[j]].
// The gather reads [*, K] values once, against the N·K weight the product reads.
func permuteInputs(x, perm *Tensor) *Tensor {
	r := x.Rank()
	if r == 1 {
		return x.state().op("gather", nil, x.Unsqueeze(1), perm).Squeeze(1)
	}
	last := make([]int, r) // the last dim first
	back := make([]int, r) // and back
	last[0] = r - 1
	for i := 1; i < r; i++ {
		last[i] = i - 1
		back[i-1] = i
	}
	back[r-1] = 0
	return x.state().op("gather", nil, x.Permute(last...), perm).Permute(back...)
}
