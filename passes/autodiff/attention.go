package autodiff

func init() {
	// Its operands are q, k, v and optionally the positions and an additive bias: at most five.
	rules["attention"] = none("the attention pass forms it when compiling, after differentiation: a train step differentiates "+
		"softmax(q·kᵀ)·v as written (FlashAttention's backward is not written yet)", 0, 1, 2, 3, 4)
}
