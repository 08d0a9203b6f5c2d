#!/usr/bin/env python3
"""The coefficients of PetNet's own erf and exp (include/petnet/private/mathimpl.h), derived here with mpmath.

    python3 share/math/erfcoefficients.py            # prints the C constants (hexadecimal, exact) and the errors
    python3 share/math/erfcoefficients.py --check    # also fails (exit 1) if the header's constants differ
    python3 share/math/erfcoefficients.py --scan     # the error of the tail's fit for each K (how K was chosen)
    (--quick: 2,000 points instead of 20,000; the constants are the same, only their measured errors are coarser)

How they are obtained: each function is interpolated at the Chebyshev nodes of its interval in 50-digit arithmetic
(mpmath.chebyfit: near-minimax, within a small factor of the best polynomial of that degree), the monomial coefficients
are rounded to the target type (double or float), and the error of the rounded polynomial is measured against mpmath on
20,000 points of the interval (printed; the C test tests/test_erf.c measures the whole function in its own arithmetic).

    region         function fitted                                   variable                interval       terms
    erf, |x| < 1   Q(z) = erf(x)/x - 1                               z = x^2                 [0, 1]         13 / 7
    erf, |x| >= 1  g(v) = e^(t^2) erfc(t)   (erfcx: from 0.43 to 0.09) v = (t - K)/(t + K)  t in [1, T]    15 / 7
    exp            P(r) = (e^r - 1 - r)/r^2                          r = y - k ln2           |r| <= ln2/2   10 / 5

(double / float; K and T below). erf then is x + x Q(x^2) near 0 and sign(x) (1 - e^(-t^2) g(v)) beyond, t = |x|
clamped to T, where erf rounds to 1 (x >= 5.93 in double, 3.92 in float); e^y = 2^k (1 + r + r^2 P(r)). The variable v
maps t in [1, inf) onto [-1, 1) and flattens the 1/(sqrt(pi) t) tail of erfcx, so a low degree suffices; K is the
value of 1.5, 2, ..., 3.5 with the smallest error of the tail at the degree above (--scan prints them; the error of g
is weighted by e^(-t^2), what it costs erf). The degrees are the smallest that keep each piece's error under 0.15 units
of the type's rounding u. ln2 = LN2HI + LN2LO splits ln2 so that k LN2HI is
exact for the k that occur (LN2HI keeps 32 bits in double, 16 in float).
"""
import re
import sys

import mpmath as mp

mp.mp.dps = 50


def round_to(v, kind):
    """v rounded to the nearest double or float (ties to even), as a Python float"""
    with mp.workprec(53 if kind == 'double' else 24):
        return float(+mp.mpf(v))


def fit(f, a, b, n, kind):
    """n monomial coefficients (lowest degree first) of the Chebyshev interpolant of f on [a, b], rounded to kind"""
    poly, _ = mp.chebyfit(f, [a, b], n, error=True)
    return [round_to(c, kind) for c in reversed(poly)]


def horner(c, x):
    s = mp.mpf(0)
    for v in reversed(c):
        s = s * x + mp.mpf(v)
    return s


def maxerr(f, c, a, b, npts=20000, weight=None):
    """max over npts + 1 equispaced points of [a, b] of |c(x) - f(x)| weight(x)"""
    worst = mp.mpf(0)
    for i in range(npts + 1):
        x = mp.mpf(a) + (mp.mpf(b) - a) * i / npts
        e = abs(horner(c, x) - f(x))
        worst = max(worst, e * (weight(x) if weight else 1))
    return worst


def tail_weight(K):
    """what an error of g costs erf: e^(-t^2), t = K (1 + v)/(1 - v)"""
    return lambda v: mp.exp(-(K * (1 + v) / (1 - v))**2)


def q_small(z):  # erf(x)/x - 1, z = x^2
    if z == 0:
        return 2 / mp.sqrt(mp.pi) - 1
    x = mp.sqrt(z)
    return mp.erf(x) / x - 1


def g_large(K):
    def g(v):  # erfcx(t), t = K (1 + v)/(1 - v)
        t = K * (1 + v) / (1 - v)
        return mp.exp(t * t) * mp.erfc(t)
    return g


def p_exp(r):
    if r == 0:
        return mp.mpf(1) / 2
    return (mp.exp(r) - 1 - r) / (r * r)


def cname(v, kind):
    """v as an exact C hexadecimal constant (a double, or a float with the f suffix)"""
    mant, exp = float(v).hex().split('p')
    mant = mant.rstrip('0').rstrip('.')
    return f'{mant}p{exp}' + ('' if kind == 'double' else 'f')


# (kind, terms of Q, terms of g, K, T, terms of P)
SETTINGS = [('double', 13, 15, 3.0, 6.0, 10), ('float', 7, 7, 1.5, 4.0, 5)]
NPTS = 2000 if '--quick' in sys.argv else 20000


def derive():
    out = {}
    for kind, nq, ng, K, T, nexp in SETTINGS:
        K, T = mp.mpf(K), mp.mpf(T)
        unit = mp.mpf(2)**(-53 if kind == 'double' else -24)
        q = fit(q_small, 0, 1, nq, kind)
        vlo, vhi = (1 - K) / (1 + K), (T - K) / (T + K)
        g = fit(g_large(K), vlo, vhi, ng, kind)
        ln2 = mp.log(2)
        p = fit(p_exp, -ln2 / 2, ln2 / 2, nexp, kind)
        eq = maxerr(q_small, q, 0, 1, NPTS)
        eg = maxerr(g_large(K), g, vlo, vhi, NPTS, tail_weight(K))
        ep = maxerr(p_exp, p, -ln2 / 2, ln2 / 2, NPTS)
        print(f'/* {kind}: |Q - (erf(x)/x - 1)| <= {mp.nstr(eq, 3)} ({mp.nstr(eq / unit, 3)} u), e^-t^2 |g - erfcx| <= {mp.nstr(eg, 3)} '
              f'({mp.nstr(eg / unit, 3)} u), r^2 |P - p| <= {mp.nstr(ep * (ln2 / 2)**2, 3)} ({mp.nstr(ep * (ln2 / 2)**2 / unit, 3)} u); '
              f'u = 2^{-53 if kind == "double" else -24} */')
        out[kind] = {'Q': q, 'G': g, 'P': p, 'K': K, 'T': T}
    return out


def ln2_split(kind):
    """1/ln2, and ln2 = hi + lo with hi of 32 (double) or 16 (float) bits, so that k hi is exact for |k| < 2^21 or 2^8"""
    ln2 = mp.log(2)
    with mp.workprec(32 if kind == 'double' else 16):
        hi = +ln2
    return [round_to(1 / ln2, kind), float(hi), round_to(ln2 - hi, kind)]


def scan():
    """the error of g for each K at the degrees of SETTINGS (how K was chosen)"""
    for kind, nq, ng, K0, T, nexp in SETTINGS:
        for K in (1.5, 2.0, 2.5, 3.0, 3.5):
            K = mp.mpf(K)
            vlo, vhi = (1 - K) / (1 + K), (T - K) / (T + K)
            g = fit(g_large(K), vlo, vhi, ng, kind)
            print(f'{kind} K = {mp.nstr(K, 2)}: e^-t^2 |g - erfcx| <= {mp.nstr(maxerr(g_large(K), g, vlo, vhi, NPTS, tail_weight(K)), 3)}')


def emit(out):
    lines = []
    for kind, c in out.items():
        S = 'D' if kind == 'double' else 'F'
        for name in ('Q', 'G', 'P'):
            vals = ', '.join(cname(v, kind) for v in c[name])
            lines.append(f'#define PETNET_ERF{S}_{name} {vals}')
        lines.append(f'#define PETNET_EXP{S}_LN2 ' + ', '.join(cname(v, kind) for v in ln2_split(kind)))
    return lines


if __name__ == '__main__':
    if '--scan' in sys.argv:
        scan()
        sys.exit(0)
    out = derive()
    lines = emit(out)
    print('\n'.join(lines))
    if '--check' in sys.argv:
        header = open('include/petnet/private/mathimpl.h').read()
        missing = [l for l in lines if l not in header]
        for l in missing:
            print('not in include/petnet/private/mathimpl.h:', l.split(' ')[1])
        sys.exit(1 if missing else 0)
