package autodiff

func init() {
	rules["philox_uniform"] = none("its operand is an integer key", 0)
}
