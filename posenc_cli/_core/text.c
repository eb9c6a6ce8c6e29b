/* posenc_cli._ctext: the shortest round-trip decimal text of float32 and float64 values, whole blocks at a time.

   The compiled twin of posenc_cli/formats/text/floats.py (whose docstring is the contract): join() writes, for each
   row of a C-contiguous 2-D float32 or float64 buffer, the row's start and then each value's text followed by its
   column's tail, into one bytes object, with the GIL released. The bytes are the same as the pure path's.

   Digits
   ------
   A finite non-zero value is v = m * 2**e (m an integer). With e' = e - 2 the value and the ends of its rounding
   interval are X * 2**e' for X = 4m (the value), 4m + 2 (the midpoint to the neighbour above) and 4m - 2 (below;
   4m - 1 at a power of two, where the neighbour below is twice as close). On the lattice of multiples of 10**E, E =
   floor(e' log10 2) - 1, each of the three is floor(X * 2**e' / 10**E) with a flag "exactly on the lattice":
   10**E <= 2**e' / 10 makes the interval at least 30 lattice steps wide, and 10**E > 2**e' / 100 keeps every
   floor below 100 X < 2**63.

   The floors come from one 64 x 128-bit product with a table entry (the top 128 bits of 5**i, or 2**T / 5**q
   rounded up), shifted; the entry's error shifts the true product by less than X units below the shift, so the
   floor is the product's unless adding (or subtracting) X crosses a multiple of the shift, and that rare case is
   decided exactly with big integers (a test runs the exact check on every product). "Exactly on the lattice" is
   divisibility of X by a power of two or five, decided on the integers, and an exact floor is computed directly.

   Then, with lo and hi the lowest and highest multiples of 10**E inside the interval (an end counts only when m is
   even: round-half-to-even reads it back to v), the shortest digits are the coarsest lattice 10**(E+k) that still
   has a point in [lo, hi] (ceil(lo / 10**k) <= floor(hi / 10**k)); of its points the nearest to v (a tie goes to
   the even one), clamped into the interval. The lattice is always coarse enough for k >= 1, so v's own rounding to
   10**k is read off the dropped digits and the exactness flag.

   Text
   ----
   float64: Python's repr: positional when the first digit's exponent is -4 .. 15, else d.ddde+XX (at least two
   exponent digits). float32: NumPy's str: positional when v == 0 or lo32 <= |v| < hi32 (thresholds given by the
   caller, the values the installed NumPy switches at), else the same scientific form. Positional text always has a
   point and a digit after it ("1.0", "0.0001"); a minus sign before negative values, -0.0 included.

   Plain C99 (unsigned __int128 where the compiler has it), no floating-point arithmetic at all. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__FAST_MATH__)
#error "posenc_cli._ctext must not be built with -ffast-math"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* ------------------------------------------------------------------------------------------ 64 x 64 -> 128 bits */

#if defined(__SIZEOF_INT128__)
static inline void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
    unsigned __int128 p = (unsigned __int128)a * b;
    *hi = (uint64_t)(p >> 64);
    *lo = (uint64_t)p;
}
#else
static inline void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    *lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
#endif

/* --------------------------------------------------------------------------------- small exact big integers */
/* Only for the tables (once) and the rare undecided floors: clarity over speed. Little-endian 32-bit limbs. */

#define BN_LIMBS 64 /* 2048 bits: the largest number used is below 2**900 */

typedef struct {
    int n; /* limbs in use; d[n - 1] != 0 unless n == 0 */
    uint32_t d[BN_LIMBS];
} bignum;

static void bn_set(bignum *a, uint64_t v) {
    a->n = 0;
    while (v) {
        a->d[a->n++] = (uint32_t)v;
        v >>= 32;
    }
}

static int bn_mul_small(bignum *a, uint32_t f) {
    uint64_t carry = 0;
    for (int i = 0; i < a->n; i++) {
        uint64_t t = (uint64_t)a->d[i] * f + carry;
        a->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry) {
        if (a->n == BN_LIMBS) return -1;
        a->d[a->n++] = (uint32_t)carry;
    }
    return 0;
}

static int bn_add(bignum *a, const bignum *b) { /* a += b */
    int n = a->n > b->n ? a->n : b->n;
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t t = carry + (i < a->n ? a->d[i] : 0) + (i < b->n ? b->d[i] : 0);
        a->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    a->n = n;
    if (carry) {
        if (n == BN_LIMBS) return -1;
        a->d[a->n++] = (uint32_t)carry;
    }
    return 0;
}

static int bn_mul(bignum *a, const bignum *b) { /* a *= b, schoolbook */
    uint32_t r[2 * BN_LIMBS] = {0};
    if (a->n + b->n > BN_LIMBS) return -1;
    for (int i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (int k = 0; k < b->n; k++) {
            uint64_t t = (uint64_t)a->d[i] * b->d[k] + r[i + k] + carry;
            r[i + k] = (uint32_t)t;
            carry = t >> 32;
        }
        r[i + b->n] = (uint32_t)carry;
    }
    int n = a->n + b->n;
    while (n && r[n - 1] == 0) n--;
    memcpy(a->d, r, sizeof(uint32_t) * (size_t)n);
    a->n = n;
    return 0;
}

static int bn_shl(bignum *a, int bits) {
    if (a->n == 0 || bits == 0) return 0;
    int limbs = bits / 32, r = bits % 32;
    int n = a->n + limbs + 1;
    if (n > BN_LIMBS) return -1;
    for (int i = n - 1; i >= 0; i--) {
        int s = i - limbs;
        uint64_t hi = s >= 0 && s < a->n ? a->d[s] : 0;
        uint64_t lo = s - 1 >= 0 && s - 1 < a->n ? a->d[s - 1] : 0;
        a->d[i] = r ? (uint32_t)((hi << r) | (lo >> (32 - r))) : (uint32_t)hi;
    }
    a->n = n;
    while (a->n && a->d[a->n - 1] == 0) a->n--;
    return 0;
}

static int bn_cmp(const bignum *a, const bignum *b) {
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

static void bn_sub(bignum *a, const bignum *b) { /* a -= b, a >= b */
    int64_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        int64_t t = (int64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        borrow = t < 0;
        a->d[i] = (uint32_t)(t + (borrow ? ((int64_t)1 << 32) : 0));
    }
    while (a->n && a->d[a->n - 1] == 0) a->n--;
}

static int bn_bits(const bignum *a) {
    if (a->n == 0) return 0;
    int bits = 32 * (a->n - 1);
    for (uint32_t top = a->d[a->n - 1]; top; top >>= 1) bits++;
    return bits;
}

/* Bits [at, at + 64) of a, as a 64-bit number (at >= 0). */
static uint64_t bn_bits64(const bignum *a, int at) {
    uint64_t v = 0;
    for (int b = 0; b < 64; b++) {
        int bit = at + b, limb = bit / 32;
        if (limb < a->n && (a->d[limb] >> (bit % 32)) & 1) v |= (uint64_t)1 << b;
    }
    return v;
}

static int bn_pow5(bignum *a, int i) {
    bn_set(a, 1);
    for (; i >= 13; i -= 13)
        if (bn_mul_small(a, 1220703125u)) return -1; /* 5**13 */
    for (; i > 0; i--)
        if (bn_mul_small(a, 5)) return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------------- the tables */

#define P_MAX 326 /* 5**i for i = 0 .. 325 (float64 subnormals: e' = -1076 gives i = -E = 325) */
#define Q_MAX 291 /* 2**T / 5**q for q = 1 .. 290 (the largest float64: e' = 969 gives E = 290) */

static uint64_t POW5[28];                     /* 5**i exactly, i <= 27 */
static uint64_t P_HI[P_MAX], P_LO[P_MAX];     /* top 128 bits of 5**i: floor(5**i * 2**(128 - P_BITS[i])) */
static int P_BITS[P_MAX];                     /* bit length of 5**i */
static uint64_t Q_HI[Q_MAX], Q_LO[Q_MAX];     /* floor(2**Q_T[q] / 5**q) + 1, in [2**127, 2**128) */
static int Q_T[Q_MAX];                        /* bitlen(5**q) + 127 */
static uint64_t Q64[Q_MAX];                   /* floor(2**(Q_T[q] - 64) / 5**q) + 1, in [2**63, 2**64) */
static int tables_ready = 0;

static int make_tables(void) {
    bignum p;
    bn_set(&p, 1);
    for (int i = 0; i < P_MAX; i++) {
        if (i > 0 && bn_mul_small(&p, 5)) return -1;
        if (i < 28) POW5[i] = bn_bits64(&p, 0);
        int bits = bn_bits(&p);
        P_BITS[i] = bits;
        bignum top = p;
        if (bits <= 128) {
            if (bn_shl(&top, 128 - bits)) return -1;
            P_LO[i] = bn_bits64(&top, 0);
            P_HI[i] = bn_bits64(&top, 64);
        } else {
            P_LO[i] = bn_bits64(&p, bits - 128);
            P_HI[i] = bn_bits64(&p, bits - 64);
        }
        if (i >= 1 && i < Q_MAX) {
            /* 2**T / 5**i with T = bits + 127, by long division one quotient bit at a time: the remainder starts
               at 2**(bits - 1) < 5**i (the quotient's bits above 127 are zero) and doubles at each step. */
            bignum rem;
            bn_set(&rem, 1);
            if (bn_shl(&rem, bits - 1)) return -1;
            uint64_t qhi = 0, qlo = 0;
            for (int b = 127; b >= 0; b--) {
                if (bn_shl(&rem, 1)) return -1;
                if (bn_cmp(&rem, &p) >= 0) {
                    bn_sub(&rem, &p);
                    if (b >= 64) qhi |= (uint64_t)1 << (b - 64);
                    else qlo |= (uint64_t)1 << b;
                }
            }
            /* + 1: never exact (5**i does not divide a power of two), and never 2**128 (checked) */
            if (++qlo == 0 && ++qhi == 0) return -1;
            if (!(qhi >> 63)) return -1;
            Q_HI[i] = qhi;
            Q_LO[i] = qlo;
            /* floor(2**(T - 64) / 5**i) = floor((Q - 1) / 2**64) */
            uint64_t top = qhi - (qlo == 0);
            if (top == UINT64_MAX) return -1;
            Q64[i] = top + 1;
            Q_T[i] = bits + 127;
        }
    }
    tables_ready = 1;
    return 0;
}

/* floor(e * log10(2)) for |e| <= 1650 (e * 78913 / 2**18, the fraction log10(2) ~ 0.30102999566 to 18 bits, rounded
   down; checked against exact powers by selfcheck()). */
static inline int floor_log10_pow2(int e) {
    int32_t t = (int32_t)e * 78913;
    return t >= 0 ? t >> 18 : -(int32_t)(((uint32_t)(-t) + ((1u << 18) - 1)) >> 18);
}

/* ------------------------------------------------------------------------------------------- scaled floors */

/* Counters of the exact path, for the tests (selfcheck): floors left undecided by the product, and fast floors that
   the exact check found wrong. */
typedef struct {
    int verify;             /* decide every floor exactly too, and count the fast ones that differ */
    Py_ssize_t undecided;   /* products whose floor needed the exact decision */
    Py_ssize_t wrong;       /* fast floors that differed from the exact ones (verify mode) */
    int failed;             /* an internal limit was hit: the result cannot be trusted */
} state;

/* The 192-bit product X * (hi, lo), little-endian words. */
static inline void mul_192(uint64_t x, uint64_t hi, uint64_t lo, uint64_t w[3]) {
    uint64_t a1, a0, b1, b0;
    mul64(x, lo, &a1, &a0);
    mul64(x, hi, &b1, &b0);
    w[0] = a0;
    w[1] = a1 + b0;
    w[2] = b1 + (w[1] < a1);
}

/* floor(w / 2**sh) for 64 < sh < 128 (the shifts used are 119 .. 126); sets *over when it does not fit in 64 bits
   or sh is out of that range. */
static inline uint64_t shr_192(const uint64_t w[3], int sh, int *over) {
    int r = sh - 64;
    if (r <= 0 || r >= 64) {
        *over = 1;
        return 0;
    }
    if (w[2] >> r) *over = 1;
    return (w[1] >> r) | (w[2] << (64 - r));
}

static inline void add_192(uint64_t w[3], uint64_t x) {
    uint64_t t = w[0] + x;
    uint64_t c = t < x;
    w[0] = t;
    w[1] += c;
    c = c && w[1] == 0;
    w[2] += c;
}

static inline void sub_192(uint64_t w[3], uint64_t x) {
    uint64_t b = w[0] < x;
    w[0] -= x;
    uint64_t b1 = w[1] < b;
    w[1] -= b;
    w[2] -= b1;
}

/* X * 2**ep / 10**E as the fraction num / den of big integers (the powers of two and five moved to the side where
   their exponents are positive). */
static int exact_fraction(uint64_t x, int ep, int E, bignum *num, bignum *den) {
    bignum five;
    bn_set(num, x);
    bn_set(den, 1);
    if (bn_pow5(&five, E < 0 ? -E : E) || bn_mul(E < 0 ? num : den, &five)) return -1;
    return bn_shl(ep - E >= 0 ? num : den, ep - E >= 0 ? ep - E : E - ep);
}

/* The exact floor of X * 2**ep / 10**E, given a candidate f within one of it: the g in {f - 1, f, f + 1} with
   g * den <= num < (g + 1) * den. Returns -1 if none is (or the numbers are too large): a bug, never expected. */
static int exact_floor(uint64_t x, int ep, int E, uint64_t f, uint64_t *out) {
    bignum num, den;
    if (exact_fraction(x, ep, E, &num, &den)) return -1;
    for (int d = -1; d <= 1; d++) {
        if ((d < 0 && f == 0) || (d > 0 && f == UINT64_MAX)) continue;
        uint64_t g = d < 0 ? f - 1 : d > 0 ? f + 1 : f;
        bignum lo, hi;
        bn_set(&lo, g);
        if (bn_mul(&lo, &den)) return -1;
        hi = lo;
        if (bn_add(&hi, &den)) return -1;
        if (bn_cmp(&lo, &num) <= 0 && bn_cmp(&num, &hi) < 0) {
            *out = g;
            return 0;
        }
    }
    return -1;
}

/* floor(X * 2**ep / 10**E) into *f, and whether the quotient is an integer. */
/* floor((hi, lo) / 2**sh) for 0 < sh < 64; sets *over when it does not fit in 64 bits. */
INLINE uint64_t shr_128(uint64_t hi, uint64_t lo, int sh, int *over) {
    if (sh <= 0 || sh >= 64) {
        *over = 1;
        return 0;
    }
    if (hi >> sh) *over = 1;
    return (lo >> sh) | (hi << (64 - sh));
}

/* floor(X * 2**ep / 10**E), and whether the quotient is an integer. narrow (float32, X < 2**27): one 64 x 64-bit
   product with the top 64 bits of the table entry, whose error is also below X units of the product's last bit. */
INLINE uint64_t scaled(uint64_t x, int tz, int ep, int E, int *exact, state *st, int verify, int narrow) {
    uint64_t f;
    int undecided = 0, over = 0;
    if (E >= 1) { /* X * 2**(ep - E) / 5**E, ep - E >= 0 */
        int q = E;
        if (q < 28 && x % POW5[q] == 0) {
            *exact = 1;
            f = (x / POW5[q]) << (ep - q);
            goto verify;
        }
        *exact = 0;
        /* the product is above the true one by less than X (in its last bit's units) */
        if (narrow) {
            uint64_t hi, lo;
            int sh = Q_T[q] - 64 - ep + q;
            mul64(x, Q64[q], &hi, &lo);
            f = shr_128(hi, lo, sh, &over);
            undecided = shr_128(hi - (lo < x), lo - x, sh, &over) != f;
        } else {
            uint64_t w[3];
            int sh = Q_T[q] - ep + q;
            mul_192(x, Q_HI[q], Q_LO[q], w);
            f = shr_192(w, sh, &over);
            sub_192(w, x);
            undecided = shr_192(w, sh, &over) != f;
        }
    } else {
        int i = -E, s = E - ep; /* X * 5**i / 2**s */
        if (s <= 0) {
            *exact = 1;
            f = x * POW5[i] << -s;
            goto verify;
        }
        if (s <= tz && i < 28) { /* 2**s divides X (tz: its trailing zero bits) */
            *exact = 1;
            f = (x >> s) * POW5[i];
            goto verify;
        }
        *exact = 0;
        /* the product is below the true one by less than X (exact while 5**i fits the entry) */
        if (narrow) {
            uint64_t hi, lo;
            int sh = s + 64 - P_BITS[i];
            mul64(x, P_HI[i], &hi, &lo);
            f = shr_128(hi, lo, sh, &over);
            if (P_BITS[i] > 64) undecided = shr_128(hi + (lo + x < x), lo + x, sh, &over) != f;
        } else {
            uint64_t w[3];
            int sh = s + 128 - P_BITS[i];
            mul_192(x, P_HI[i], P_LO[i], w);
            f = shr_192(w, sh, &over);
            if (P_BITS[i] > 128) {
                add_192(w, x);
                undecided = shr_192(w, sh, &over) != f;
            }
        }
    }
    if (over) st->failed = 1;
verify:
    if (undecided || verify) { /* the exact floor; in verify mode it replaces every fast one, counted if other */
        uint64_t g;
        st->undecided += undecided;
        if (exact_floor(x, ep, E, f, &g)) {
            st->failed = 1;
            return f;
        }
        st->wrong += !undecided && g != f;
        return g;
    }
    return f;
}

/* The shortest digits of v = m * 2**e (m > 0): *digits, and the exponent of its last digit. */
INLINE uint64_t shortest(uint64_t m, int e, int lopsided, int *exp10, state *st, int narrow) {
    int ep = e - 2;
    uint64_t mv = 4 * m, mp = mv + 2, mm = mv - 2 + (uint64_t)lopsided;
    int accept = (m & 1) == 0;
    int E = floor_log10_pow2(ep) - 1;
    int xa, xb, xc;
    int verify = st->verify;
#if defined(__GNUC__) || defined(__clang__)
    int tz = __builtin_ctzll(m);
#else
    int tz = 0;
    while (!((m >> tz) & 1)) tz++;
#endif
    uint64_t a = scaled(mm, lopsided ? 0 : 1, ep, E, &xa, st, verify, narrow);
    uint64_t b = scaled(mp, 1, ep, E, &xb, st, verify, narrow);
    uint64_t c = scaled(mv, 2 + tz, ep, E, &xc, st, verify, narrow);
    uint64_t lo = a + !(xa && accept), hi = b - (xb && !accept);
    /* level 1 always has a point: the interval spans 30 lattice steps */
    unsigned last = (unsigned)(c % 10), rest = 0;
    int k = 1;
    if ((lo + 9) / 10 > hi / 10) st->failed = 1;
    lo = (lo + 9) / 10;
    hi /= 10;
    c /= 10;
    for (;;) {
        uint64_t lo1 = lo / 10 + (lo % 10 != 0), hi1 = hi / 10;
        if (lo1 > hi1) break;
        rest |= last;
        last = (unsigned)(c % 10);
        c /= 10;
        lo = lo1;
        hi = hi1;
        k++;
    }
    int up = last > 5 || (last == 5 && (rest || !xc || (c & 1)));
    uint64_t n = c + (uint64_t)up;
    if (n < lo) n = lo;
    if (n > hi) n = hi;
    *exp10 = E + k;
    return n;
}

/* ------------------------------------------------------------------------------------------------------ text */
/* The text is written with fixed-size copies that may run past its end (into bytes that later writes replace or
   the final resize drops): the output has SLACK spare bytes at its end. */

#define MAX_TEXT 32 /* at most this many bytes per value: float64 "-1.2345678901234567e-308" is 24 */
#define SLACK 64    /* the fixed-size copies write at most 48 bytes from a value's start */

static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354"
    "555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

static const uint64_t POW10[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

/* The number of decimal digits of n > 0. */
INLINE int count_digits(uint64_t n) {
#if defined(__GNUC__) || defined(__clang__)
    int bits = 64 - __builtin_clzll(n);
#else
    int bits = 0;
    for (uint64_t t = n; t; t >>= 1) bits++;
#endif
    int t = (bits * 1233) >> 12; /* floor(log10(2**bits)) or one more than floor(log10(n)) */
    return t + (n >= POW10[t]);
}

/* The digits of n > 0, ending just before end. */
INLINE void digits_before(uint64_t n, char *end) {
    while (n >> 32) {
        unsigned r = (unsigned)(n % 100);
        n /= 100;
        end -= 2;
        memcpy(end, DIGITS2 + 2 * r, 2);
    }
    uint32_t m = (uint32_t)n;
    while (m >= 100) {
        unsigned r = m % 100;
        m /= 100;
        end -= 2;
        memcpy(end, DIGITS2 + 2 * r, 2);
    }
    if (m >= 10) memcpy(end - 2, DIGITS2 + 2 * m, 2);
    else end[-1] = (char)('0' + m);
}

/* The text of the digits n (the last one's exponent k10) at o, positional or scientific; returns its end, or NULL
   for an exponent the fixed-size copies do not cover (never with the thresholds join() accepts). The digits go
   straight to their places (a copy through a buffer would read back bytes just written, which stalls). */
INLINE char *spell(char *o, int neg, uint64_t n, int k10, int positional_from, int positional_to, uint32_t pos32,
                   int wide) {
    int nd = count_digits(n);
    int e = k10 + nd - 1; /* the first digit's exponent */
    int positional = wide ? e >= positional_from && e <= positional_to : (int)pos32;
    *o = '-';
    o += neg;
    if (positional) {
        if (e < 0) { /* 0.000ddd */
            if (e < -14) return NULL;
            memcpy(o, "0.00000000000000", 16);
            digits_before(n, o + 1 - e + nd);
            return o + 1 - e + nd;
        }
        if (nd <= e + 1) { /* ddd000.0 */
            if (e + 1 - nd > 16) return NULL;
            digits_before(n, o + nd);
            memcpy(o + nd, "0000000000000000", 16);
            memcpy(o + e + 1, ".0", 2);
            return o + e + 3;
        }
        digits_before(n, o + 1 + nd); /* ddd.ddd: the digits one byte up, the integer part moved down */
        for (int i = 0; i <= e; i++) o[i] = o[i + 1];
        o[e + 1] = '.';
        return o + nd + 1;
    }
    digits_before(n, o + 1 + nd); /* d.ddde+XX */
    o[0] = o[1];
    o[1] = '.';
    o += nd > 1 ? nd + 1 : 1;
    int x = e < 0 ? -e : e;
    o[0] = 'e';
    o[1] = e < 0 ? '-' : '+';
    if (x >= 100) {
        o[2] = (char)('0' + x / 100);
        memcpy(o + 3, DIGITS2 + 2 * (x % 100), 2);
        return o + 5;
    }
    memcpy(o + 2, DIGITS2 + 2 * x, 2);
    return o + 4;
}

enum { OK = 0, NOT_FINITE = 1, FAILED = 2 };

/* One value's text at *out (advanced past it). */
INLINE int text32(uint32_t bits, uint32_t lo32, uint32_t hi32, char **out, state *st) {
    char *o = *out;
    uint32_t mag = bits & 0x7FFFFFFFu, ex = mag >> 23, fr = mag & 0x7FFFFFu;
    int neg = (int)(bits >> 31);
    if (ex == 0xFF) return NOT_FINITE;
    if (mag == 0) {
        *o = '-';
        memcpy(o + neg, "0.0", 4);
        *out = o + neg + 3;
        return OK;
    }
    uint64_t m = ex ? (fr | 0x800000u) : fr;
    int e = ex ? (int)ex - 150 : -149;
    int k10;
    uint64_t n = shortest(m, e, fr == 0 && ex > 1, &k10, st, 1);
    o = spell(o, neg, n, k10, 0, 0, mag >= lo32 && mag < hi32, 0);
    if (!o) return FAILED;
    *out = o;
    return OK;
}

INLINE int text64(uint64_t bits, char **out, state *st) {
    char *o = *out;
    uint64_t mag = bits & 0x7FFFFFFFFFFFFFFFull, ex = mag >> 52, fr = mag & 0xFFFFFFFFFFFFFull;
    int neg = (int)(bits >> 63);
    if (ex == 0x7FF) return NOT_FINITE;
    if (mag == 0) {
        *o = '-';
        memcpy(o + neg, "0.0", 4);
        *out = o + neg + 3;
        return OK;
    }
    uint64_t m = ex ? (fr | 0x10000000000000ull) : fr;
    int e = ex ? (int)ex - 1075 : -1074;
    int k10;
    uint64_t n = shortest(m, e, fr == 0 && ex > 1, &k10, st, 0);
    o = spell(o, neg, n, k10, -4, 15, 0, 1); /* Python's repr: positional from 1e-4 to below 1e16 */
    if (!o) return FAILED;
    *out = o;
    return OK;
}

/* ---------------------------------------------------------------------------------------------------- blocks */

#define SLOT 16 /* tails of up to this many bytes are copied with one fixed-size copy from a slot of this size */

typedef struct {
    const char *values;
    int wide; /* float64 */
    Py_ssize_t rows, cols;
    const char *head;
    Py_ssize_t head_len;
    const char *tails;         /* short tails: one SLOT each; else all tails one after the other */
    const Py_ssize_t *tail_at; /* cols + 1 offsets into tails (long tails) */
    const unsigned char *tail_len;
    int short_tails;
    uint32_t lo32, hi32;
} job;

/* Writes the block's text at out; returns the end, or NULL with *err set. */
static char *fill(const job *j, char *out, state *st, int *err) {
    char *o = out;
    const Py_ssize_t cols = j->cols;
    const char *values = j->values;
    for (Py_ssize_t r = 0; r < j->rows; r++) {
        memcpy(o, j->head, (size_t)j->head_len);
        o += j->head_len;
        for (Py_ssize_t c = 0; c < cols; c++) {
            int rc;
            if (j->wide) {
                uint64_t bits;
                memcpy(&bits, values, 8);
                values += 8;
                rc = text64(bits, &o, st);
            } else {
                uint32_t bits;
                memcpy(&bits, values, 4);
                values += 4;
                rc = text32(bits, j->lo32, j->hi32, &o, st);
            }
            if (rc) {
                *err = rc;
                return NULL;
            }
            if (j->short_tails) {
                memcpy(o, j->tails + SLOT * c, SLOT);
                o += j->tail_len[c];
            } else {
                Py_ssize_t t0 = j->tail_at[c], t1 = j->tail_at[c + 1];
                memcpy(o, j->tails + t0, (size_t)(t1 - t0));
                o += t1 - t0;
            }
        }
    }
    if (st->failed) {
        *err = FAILED;
        return NULL;
    }
    return o;
}

static int ensure_tables(void) {
    if (!tables_ready && make_tables()) {
        PyErr_SetString(PyExc_RuntimeError, "posenc_cli._ctext: building the digit tables failed");
        return -1;
    }
    return 0;
}

/* A float32 threshold given as a Python float that must be a float32 value: its bit pattern. */
static int threshold32(PyObject *obj, uint32_t *bits) {
    double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    float f = (float)v;
    if (!((double)f == v) || !(v >= 1e-14 && v <= 1e17)) { /* the range spell() covers */
        PyErr_SetString(PyExc_ValueError, "the float32 thresholds must be float32 values from 1e-14 to 1e17");
        return -1;
    }
    memcpy(bits, &f, 4);
    return 0;
}

static int float_format(const Py_buffer *view, int *wide) {
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') {
        /* '<' is little-endian: native only on little-endian machines */
        const uint16_t one = 1;
        if (*f == '<' && *(const unsigned char *)&one != 1) return -1;
        f++;
    }
    if (strcmp(f, "f") == 0 && view->itemsize == 4) *wide = 0;
    else if (strcmp(f, "d") == 0 && view->itemsize == 8) *wide = 1;
    else return -1;
    return 0;
}

static PyObject *join_or_check(PyObject *args, PyObject *kwargs, int checking) {
    static char *kwlist[] = {"block", "tails", "head", "lo32", "hi32", "verify", NULL};
    PyObject *block, *tails, *lo_obj, *hi_obj;
    Py_buffer head;
    int verify = checking; /* check() verifies by default */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOy*OO|p", kwlist, &block, &tails, &head, &lo_obj, &hi_obj,
                                     &verify))
        return NULL;
    PyObject *result = NULL, *seq = NULL;
    char *tail_buf = NULL;
    Py_ssize_t *tail_at = NULL;
    unsigned char *tail_len = NULL;
    Py_buffer view;
    int have_view = 0;
    job j;
    memset(&j, 0, sizeof j);
    if (ensure_tables() || threshold32(lo_obj, &j.lo32) || threshold32(hi_obj, &j.hi32)) goto done;
    if (PyObject_GetBuffer(block, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    have_view = 1;
    if (view.ndim != 2 || float_format(&view, &j.wide)) {
        PyErr_SetString(PyExc_ValueError, "need a C-contiguous 2-D block of native float32 or float64 values");
        goto done;
    }
    j.values = view.buf;
    j.rows = view.shape[0];
    j.cols = view.shape[1];
    seq = PySequence_Fast(tails, "tails must be a sequence of bytes");
    if (!seq) goto done;
    if (PySequence_Fast_GET_SIZE(seq) != j.cols) {
        PyErr_Format(PyExc_ValueError, "need one tail per column: %zd columns, %zd tails", j.cols,
                     PySequence_Fast_GET_SIZE(seq));
        goto done;
    }
    /* the tails' lengths and offsets; laid out in slots when none is longer than a slot */
    tail_at = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(j.cols + 1));
    tail_len = PyMem_Malloc((size_t)j.cols + 1);
    if (!tail_at || !tail_len) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total_tails = 0, longest = 0;
    for (Py_ssize_t c = 0; c < j.cols; c++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, c);
        if (!PyBytes_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "tails must be bytes");
            goto done;
        }
        Py_ssize_t size = PyBytes_GET_SIZE(t);
        tail_at[c] = total_tails;
        tail_len[c] = (unsigned char)(size < 255 ? size : 255);
        total_tails += size;
        longest = size > longest ? size : longest;
    }
    tail_at[j.cols] = total_tails;
    j.short_tails = longest <= SLOT;
    if (j.short_tails && j.cols > PY_SSIZE_T_MAX / SLOT) goto too_big;
    tail_buf = PyMem_Calloc((size_t)(j.short_tails ? SLOT * j.cols : total_tails) + 1, 1);
    if (!tail_buf) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < j.cols; c++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, c);
        memcpy(tail_buf + (j.short_tails ? SLOT * c : tail_at[c]), PyBytes_AS_STRING(t), (size_t)PyBytes_GET_SIZE(t));
    }
    j.tails = tail_buf;
    j.tail_at = tail_at;
    j.tail_len = tail_len;
    j.head = head.buf;
    j.head_len = head.len;

    /* The size bound: rows * (head + tails) + values * MAX_TEXT, without overflow, and SLACK spare bytes. */
    Py_ssize_t per_row = head.len + total_tails, bound = 0;
    if (j.cols > (PY_SSIZE_T_MAX - SLACK - per_row) / MAX_TEXT) goto too_big;
    per_row += j.cols * MAX_TEXT;
    if (j.rows && per_row > (PY_SSIZE_T_MAX - SLACK) / j.rows) goto too_big;
    bound = j.rows * per_row;

    state st = {verify, 0, 0, 0};
    int err = OK;
    if (checking) { /* the text goes to a scratch row, the counters are the result */
        char *scratch = PyMem_Malloc((size_t)(per_row + SLACK));
        if (!scratch) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        job one = j;
        one.rows = 1;
        for (Py_ssize_t r = 0; r < j.rows && err == OK; r++) {
            one.values = j.values + (size_t)r * (size_t)j.cols * (j.wide ? 8 : 4);
            if (!fill(&one, scratch, &st, &err)) break;
        }
        Py_END_ALLOW_THREADS
        PyMem_Free(scratch);
        if (err == OK) result = Py_BuildValue("nn", st.undecided, st.wrong);
    } else {
        result = PyBytes_FromStringAndSize(NULL, bound + SLACK);
        if (!result) goto done;
        char *out = PyBytes_AS_STRING(result), *end;
        Py_BEGIN_ALLOW_THREADS
        end = fill(&j, out, &st, &err);
        Py_END_ALLOW_THREADS
        if (end && _PyBytes_Resize(&result, end - out) < 0) result = NULL;
        if (verify && err == OK && st.wrong) err = FAILED;
    }
    if (err != OK) {
        Py_CLEAR(result);
        if (err == NOT_FINITE) PyErr_SetString(PyExc_ValueError, "text formats cannot hold NaN or infinite values");
        else PyErr_SetString(PyExc_RuntimeError, "posenc_cli._ctext: an internal check failed (a bug)");
    }
    goto done;
too_big:
    PyErr_SetString(PyExc_MemoryError, "the block's text would not fit in memory");
done:
    if (have_view) PyBuffer_Release(&view);
    PyBuffer_Release(&head);
    Py_XDECREF(seq);
    PyMem_Free(tail_buf);
    PyMem_Free(tail_at);
    PyMem_Free(tail_len);
    return result;
}

static PyObject *py_join(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    return join_or_check(args, kwargs, 0);
}

static PyObject *py_check(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    return join_or_check(args, kwargs, 1);
}

/* The tables and floor_log10_pow2 against exact big-integer arithmetic: None, or raises AssertionError. */
static PyObject *py_selfcheck(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (ensure_tables()) return NULL;
    const char *bad = NULL;
    bignum one;
    bn_set(&one, 1);
    /* floor(e log10 2) = k  <=>  10**k <= 2**e < 10**(k + 1): compare 2**e / 10**k (and 2**e / 10**(k + 1)) with
       1 as an exact fraction, for every e' the digits meet (float64: -1076 .. 969) and some more */
    for (int e = -1100; e <= 1000 && !bad; e++) {
        int k = floor_log10_pow2(e);
        bignum num, den;
        if (exact_fraction(1, e, k, &num, &den)) bad = "size (log)";
        else if (bn_cmp(&num, &den) < 0) bad = "floor_log10_pow2 too large";
        else if (exact_fraction(1, e, k + 1, &num, &den)) bad = "size (log)";
        else if (bn_cmp(&num, &den) >= 0) bad = "floor_log10_pow2 too small";
    }
    for (int i = 0; i < P_MAX && !bad; i++) {
        /* P * 2**(bits - 128) <= 5**i < (P + 1) * 2**(bits - 128), P in [2**127, 2**128), exact when bits <= 128 */
        bignum p, lo, hi, low;
        if (bn_pow5(&p, i)) bad = "size (P)";
        if (!bad && (bn_bits(&p) != P_BITS[i] || !(P_HI[i] >> 63))) bad = "P_BITS wrong";
        if (bad) break;
        bn_set(&lo, P_HI[i]);
        bn_shl(&lo, 64);
        bn_set(&low, P_LO[i]);
        bn_add(&lo, &low);
        hi = lo;
        bn_add(&hi, &one);
        if (P_BITS[i] <= 128) {
            bn_shl(&p, 128 - P_BITS[i]);
            if (bn_cmp(&p, &lo) != 0) bad = "P wrong (exact)";
        } else {
            bn_shl(&lo, P_BITS[i] - 128);
            bn_shl(&hi, P_BITS[i] - 128);
            if (!(bn_cmp(&lo, &p) <= 0 && bn_cmp(&p, &hi) < 0)) bad = "P wrong";
        }
    }
    for (int q = 1; q < Q_MAX && !bad; q++) {
        /* (Q - 1) * 5**q < 2**T < Q * 5**q (never equal), Q in [2**127, 2**128), T = bits + 127 */
        bignum p, t, qq, low, below;
        bn_pow5(&p, q);
        if (Q_T[q] != bn_bits(&p) + 127 || !(Q_HI[q] >> 63)) {
            bad = "Q_T wrong";
            break;
        }
        bn_set(&t, 1);
        bn_shl(&t, Q_T[q]);
        bn_set(&qq, Q_HI[q]);
        bn_shl(&qq, 64);
        bn_set(&low, Q_LO[q]);
        bn_add(&qq, &low);
        bn_mul(&qq, &p);
        below = qq;
        bn_sub(&below, &p);
        if (!(bn_cmp(&below, &t) < 0 && bn_cmp(&t, &qq) < 0)) bad = "Q wrong";
        /* the same for the 64-bit entry: (Q64 - 1) * 5**q < 2**(T - 64) < Q64 * 5**q */
        bn_set(&t, 1);
        bn_shl(&t, Q_T[q] - 64);
        bn_set(&qq, Q64[q]);
        bn_mul(&qq, &p);
        below = qq;
        bn_sub(&below, &p);
        if (!(Q64[q] >> 63) || !(bn_cmp(&below, &t) < 0 && bn_cmp(&t, &qq) < 0)) bad = "Q64 wrong";
    }
    for (int i = 0; i < 28 && !bad; i++) {
        bignum p;
        bn_pow5(&p, i);
        if (bn_bits(&p) > 64 || bn_bits64(&p, 0) != POW5[i]) bad = "POW5 wrong";
    }
    if (bad) {
        PyErr_Format(PyExc_AssertionError, "posenc_cli._ctext self-check: %s", bad);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"join", (PyCFunction)(void (*)(void))py_join, METH_VARARGS | METH_KEYWORDS,
     "join(block, tails, head, lo32, hi32, verify=False) -> bytes\n\n"
     "For each row of the C-contiguous 2-D float32/float64 block: head, then each value's shortest round-trip text\n"
     "followed by tails[column]. float32 values are positional when zero or lo32 <= |v| < hi32 (float32 values),\n"
     "float64 values as Python's repr. verify=True takes every scaled floor from exact big-integer arithmetic\n"
     "instead (slow; for tests) and fails if a fast one differed.\n"
     "ValueError for a NaN or an infinity."},
    {"check", (PyCFunction)(void (*)(void))py_check, METH_VARARGS | METH_KEYWORDS,
     "check(block, tails, head, lo32, hi32, verify=True) -> (undecided, wrong)\n\n"
     "Formats the block (the text is dropped): how many scaled floors the fast product left to the exact path, and\n"
     "with verify=True, deciding every floor exactly too, how many fast floors were wrong (must be 0). For tests."},
    {"selfcheck", py_selfcheck, METH_NOARGS,
     "selfcheck() -> None\n\nChecks the digit tables and the decimal exponent estimate against exact big integers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "posenc_cli._ctext",
    "The shortest round-trip decimal text of float32/float64 blocks (posenc's compiled text core).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ctext(void) { return PyModule_Create(&module); }
