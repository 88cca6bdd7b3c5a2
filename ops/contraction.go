package ops

import (
	"slices"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Both contractions reduce to gemmNT, C = A·Bᵀ on row-major blocks: dot_general by transposing
// its operands to [batch, free, contract], conv2d by unfolding each image's windows into rows
// (im2col). Each element of C is one sum over k in ascending order, wherever the blocking and
// threading put it, so the bits never depend on GOMAXPROCS.

const (
	tileM, tileN = 32, 64 // the output tile one task computes
	tileK        = 256    // the contracting block kept in cache
)

// gemmNT adds Σ_k a[i·lda+k]·b[j·ldb+k] (k ascending) to c[i·ldc+j] for i < m, j < n.
func gemmNT[E float64 | int64](m, n, k int, a []E, lda int, b []E, ldb int, c []E, ldc int) {
	for k0 := 0; k0 < k; k0 += tileK {
		k1 := min(k, k0+tileK)
		row := func(x []E, ld, i int) []E { return x[i*ld+k0 : i*ld+k1] }
		i := 0
		for ; i+2 <= m; i += 2 {
			a0, a1 := row(a, lda, i), row(a, lda, i+1)
			j := 0
			for ; j+2 <= n; j += 2 {
				b0, b1 := row(b, ldb, j), row(b, ldb, j+1)
				a1, b0, b1 := a1[:len(a0)], b0[:len(a0)], b1[:len(a0)]
				c0, c1 := c[i*ldc+j:i*ldc+j+2], c[(i+1)*ldc+j:(i+1)*ldc+j+2]
				s00, s01, s10, s11 := c0[0], c0[1], c1[0], c1[1]
				for p, x0 := range a0 {
					x1, y0, y1 := a1[p], b0[p], b1[p]
					s00 += x0 * y0
					s01 += x0 * y1
					s10 += x1 * y0
					s11 += x1 * y1
				}
				c0[0], c0[1], c1[0], c1[1] = s00, s01, s10, s11
			}
			if j < n {
				c[i*ldc+j] = dotAdd(c[i*ldc+j], a0, row(b, ldb, j))
				c[(i+1)*ldc+j] = dotAdd(c[(i+1)*ldc+j], a1, row(b, ldb, j))
			}
		}
		for ; i < m; i++ {
			for j := 0; j < n; j++ {
				c[i*ldc+j] = dotAdd(c[i*ldc+j], row(a, lda, i), row(b, ldb, j))
			}
		}
	}
}

func dotAdd[E float64 | int64](s E, x, y []E) E {
	y = y[:len(x)]
	for p, v := range x {
		s += v * y[p]
	}
	return s
}

// gemmTiles computes c = a·bᵀ (c zeroed by the caller) in parallel over fixed output tiles, for
// batch matrices of m×k, n×k and m×n stored contiguously.
func gemmTiles[E float64 | int64](batch, m, n, k int, a, b, c []E) {
	tm, tn := (m+tileM-1)/tileM, (n+tileN-1)/tileN
	parallel(batch*tm*tn, func(t int) {
		bi, i, j := t/(tm*tn), t/tn%tm*tileM, t%tn*tileN
		gemmNT(min(tileM, m-i), min(tileN, n-j), k,
			a[bi*m*k+i*k:], k, b[bi*n*k+j*k:], k, c[bi*m*n+i*n+j:], n)
	})
}

// permuted returns x with its dims in the order perm (x itself if perm is the identity).
func permuted(x *tensor.Tensor, perm []int) *tensor.Tensor {
	if slices.IsSorted(perm) {
		return x
	}
	shape := make(ir.Shape, len(perm))
	for i, p := range perm {
		shape[i] = x.Type.Shape[p]
	}
	r, _ := evalTranspose([]*tensor.Tensor{x}, ir.Attrs{"perm": perm}, ir.Type{DType: x.Type.DType, Shape: shape})
	return r
}

func size(s ir.Shape, dims []int) int {
	n := 1
	for _, d := range dims {
		n *= s[d]
	}
	return n
}

func evalDot(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	l, r := args[0], args[1]
	d, err := dotSpec(l.Type, r.Type, a)
	if err != nil {
		return nil, err
	}
	cat := func(s ...[]int) []int { return slices.Concat(s...) }
	lt, rt := permuted(l, cat(d.lb, d.lf, d.lc)), permuted(r, cat(d.rb, d.rf, d.rc))
	batch, m, n, k := size(l.Type.Shape, d.lb), size(l.Type.Shape, d.lf), size(r.Type.Shape, d.rf), size(l.Type.Shape, d.lc)
	res := tensor.New(out)
	if res.F != nil {
		gemmTiles(batch, m, n, k, lt.F, rt.F, res.F)
	} else {
		gemmTiles(batch, m, n, k, lt.I, rt.I, res.I)
	}
	return rounded(res), nil
}

// rounded rounds every element of r, accumulated in float64 or int64, to r's dtype.
func rounded(r *tensor.Tensor) *tensor.Tensor {
	d := r.Type.DType
	if d == ir.F64 || d == ir.I64 {
		return r
	}
	chunks(r.Len(), grain, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			if r.F != nil {
				r.F[j] = tensor.RoundFloat(d, r.F[j])
			} else {
				r.I[j] = wrap(d, r.I[j])
			}
		}
	})
	return r
}

var colPool sync.Pool

// evalConv unfolds the windows of one image and group into rows, col[p][(c,kh,kw)] (zeros where
// the window overlaps the padding), and multiplies: out[o][p] = Σ w[o][(c,kh,kw)]·col[p][...].
func evalConv(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x, w := args[0], args[1]
	g, err := convSpec(x.Type, w.Type, a)
	if err != nil {
		return nil, err
	}
	res := tensor.New(out)
	cg, og := g.c/g.groups, g.outC/g.groups
	k, p := cg*g.kh*g.kw, g.oh*g.ow
	parallel(g.n*g.groups, func(t int) {
		n, gi := t/g.groups, t%g.groups
		buf, _ := colPool.Get().(*[]float64)
		if buf == nil || cap(*buf) < p*k {
			buf = &[]float64{}
			*buf = make([]float64, p*k)
		}
		col := (*buf)[:p*k]
		img := x.F[(n*g.c+gi*cg)*g.h*g.w:]
		for oh := 0; oh < g.oh; oh++ {
			for ow := 0; ow < g.ow; ow++ {
				dst := col[(oh*g.ow+ow)*k:]
				j := 0
				for c := 0; c < cg; c++ {
					for kh := 0; kh < g.kh; kh++ {
						ih := oh*g.stride[0] - g.pad[0] + kh*g.dil[0]
						for kw := 0; kw < g.kw; kw++ {
							iw := ow*g.stride[1] - g.pad[1] + kw*g.dil[1]
							v := 0.0
							if ih >= 0 && ih < g.h && iw >= 0 && iw < g.w {
								v = img[(c*g.h+ih)*g.w+iw]
							}
							dst[j] = v
							j++
						}
					}
				}
			}
		}
		gemmNT(og, p, k, w.F[gi*og*k:], k, col, k, res.F[(n*g.outC+gi*og)*p:], p)
		colPool.Put(buf)
	})
	return rounded(res), nil
}
