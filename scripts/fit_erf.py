#!/usr/bin/env python3
"""Fits the coefficients of the f32 erf in codegen/ptx/math.go (erfSmallCoef, erfLargeCoef).

    erf(x) = x + x*P(x^2)      for |x| < 0.921875, P of degree 6 (absolute error 4e-10)
    erf(x) = 1 - exp(Q(|x|))   for 0.921875 <= |x| <= 4, Q of degree 8 fitting log(erfc) (absolute
                               error 1.2e-8, so erfc is within 1.2e-8 relative)

Each is the minimax polynomial found by Lawson's iteration (iteratively reweighted least squares)
on 3000 Chebyshev points against mpmath's erf at 40 digits; the coefficients are then rounded to
f32. With --check it also evaluates the f32 code path as the PTX does (fma Horner, the Cody-Waite
exp with a correctly rounded 2^x, as the simulator has) on 720,000 inputs and prints the largest
error against the correctly rounded erf, in ulp (1 at the time of writing).

Needs python3-numpy and python3-mpmath (Debian packages).
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
SPLIT = 0.921875
f32 = np.float32


def lawson(f, lo, hi, deg, n=3000, iters=80):
    xs = np.cos(np.linspace(np.pi, 0, n)) * (hi - lo) / 2 + (hi + lo) / 2
    ys = np.array([float(f(mp.mpf(x))) for x in xs])
    v = np.vander(xs, deg + 1, increasing=True)
    w = np.ones(n) / n
    for _ in range(iters):
        c, *_ = np.linalg.lstsq(v * np.sqrt(w)[:, None], ys * np.sqrt(w), rcond=None)
        err = np.abs(v @ c - ys)
        w = w * err / np.sum(w * err)
    return [f32(x) for x in c], err.max()


def small(s):
    if s == 0:
        return 2 / mp.sqrt(mp.pi) - 1
    x = mp.sqrt(s)
    return mp.erf(x) / x - 1


P, errP = lawson(small, 0, SPLIT * SPLIT, 6)
Q, errQ = lawson(lambda t: mp.log(mp.erfc(t)), SPLIT, 4.0, 8)


def fma(a, b, c):
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def horner(coef, x):
    p = coef[-1]
    for c in coef[-2::-1]:
        p = fma(p, x, c)
    return p


def exp32(x):  # expF32 in codegen/ptx/math.go, with a correctly rounded 2^x
    log2e = f32(np.log2(np.e))
    xc = min(max(x, f32(-104)), f32(89))
    k = f32(np.rint(f32(xc * log2e)))
    r = fma(k, f32(-0.693145751953125), xc)
    r = fma(k, f32(-1.428606765330187e-06), r)
    return f32(f32(2.0 ** float(f32(r * log2e))) * f32(2.0 ** float(k)))


def erf32(x):
    a = abs(x)
    if a < SPLIT:
        return fma(x, horner(P, f32(x * x)), x)
    e = exp32(horner(Q, min(a, f32(4))))
    return f32(np.copysign(f32(f32(1) - e), x))


def go(name, coef):
    return "var %s = []float64{%s}" % (name, ", ".join(repr(float(c)) for c in coef))


print("// fit error: P %.2g, Q %.2g (absolute)" % (errP, errQ))
print(go("erfSmallCoef", P))
print(go("erfLargeCoef", Q))
if "--check" in sys.argv:
    rng = np.random.default_rng(1)
    xs = np.concatenate([np.linspace(0.85, 1.3, 300001), np.linspace(0, 4.2, 200001),
                         rng.uniform(0, 4.2, 200000), np.geomspace(1e-40, 1, 20000)]).astype(f32)
    worst, at = 0, None
    for x in xs:
        want = f32(float(mp.erf(mp.mpf(float(x)))))
        off = abs(float(erf32(x)) - float(want)) / float(np.spacing(want))
        if off > worst:
            worst, at = off, x
    print("// largest error against the correctly rounded erf: %g ulp at %r" % (worst, float(at)))
