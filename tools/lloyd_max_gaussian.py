#!/usr/bin/env python3
"""Lloyd-Max scalar quantizer for the unit Gaussian N(0, 1): the codebooks of steno's TurboQuant
value cache (src/kernels/quant/kvquant.c carries the printed constants).

Method (Lloyd 1982, "Least squares quantization in PCM"; Max 1960, "Quantizing for minimum
distortion"): alternate the two optimality conditions until they hold to double precision:
  thresholds t_i = (c_{i-1} + c_i) / 2                      (nearest-neighbour condition)
  centroids  c_i = E[X | t_i < X < t_{i+1}]
                 = (phi(t_i) - phi(t_{i+1})) / (Phi(t_{i+1}) - Phi(t_i))   (centroid condition)
The mean squared error of the converged quantizer is E[X^2] - sum_i P_i c_i^2 = 1 - sum_i P_i c_i^2.
TurboQuant (Zandieh et al. 2025, arXiv 2504.19874) applies this codebook to the coordinates of a
randomly rotated unit vector scaled by sqrt(d), which are close to N(0, 1) for large d.
Known MSEs (Max 1960, Table): 1 bit 0.3634, 2 bits 0.1175, 3 bits 0.03455, 4 bits 0.009497.

Usage: python3 tools/lloyd_max_gaussian.py        (prints C initialisers and the MSEs)
Pure standard library (math.erf); deterministic.
"""
import math


def phi(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) if math.isfinite(x) else 0.0


def Phi(x):
    if x == math.inf:
        return 1.0
    if x == -math.inf:
        return 0.0
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def lloyd_max(bits, iters=20000):
    n = 1 << bits
    # start from equiprobable-ish points
    c = [(-2.5 + 5.0 * (i + 0.5) / n) for i in range(n)]
    for _ in range(iters):
        t = [-math.inf] + [(c[i - 1] + c[i]) / 2 for i in range(1, n)] + [math.inf]
        nc = [(phi(t[i]) - phi(t[i + 1])) / (Phi(t[i + 1]) - Phi(t[i])) for i in range(n)]
        if max(abs(a - b) for a, b in zip(c, nc)) < 1e-15:
            c = nc
            break
        c = nc
    t = [-math.inf] + [(c[i - 1] + c[i]) / 2 for i in range(1, n)] + [math.inf]
    mse = 1.0 - sum((Phi(t[i + 1]) - Phi(t[i])) * c[i] * c[i] for i in range(n))
    return c, mse


def main():
    for bits in (1, 2, 3, 4):
        c, mse = lloyd_max(bits)
        body = ", ".join("%.9ff" % x for x in c)
        print("/* %d bit%s: MSE %.6f */ {%s}," % (bits, "" if bits == 1 else "s", mse, body))


if __name__ == "__main__":
    main()
