package ptx

import "errors"

func reduceKernel(k Kernel, globals *[]string) (string, Launch, error) {
	return "", Launch{}, errors.New("reductions are not supported yet")
}

func matmulKernel(k Kernel, t Target, globals *[]string) (string, Launch, error) {
	return "", Launch{}, errors.New("matmul is not supported yet")
}
