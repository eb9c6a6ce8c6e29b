/* posenc_cli._core: the compiled core of the sinusoid engine's fast path (posenc_cli/encodings/_engine.py).
 *
 * One call fills a batch of rows of a float32 or float64 table by angle addition, entry (r, c) being
 * X[a][c] * U[q][c] + Y[a][c] * V[q][c] with r = q * size + a, and returns the entries its error bound leaves
 * undecided. The arithmetic is that of posenc_cli/encodings/_combine.py (combine32, combine64) operation for
 * operation, in the same order, each operation an IEEE double operation rounded to nearest: the build turns off
 * contraction into fused multiply-adds (-ffp-contract=off) and refuses -ffast-math and excess precision (below),
 * so the compiled and the pure path write the same bits. Inputs are read through the buffer protocol: no NumPy
 * headers at build time. The loops run without the GIL, so Python threads run them in parallel.
 *
 * Plain C99. Built by setup.py as an optional extension: where it does not build, posenc runs its pure path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__FAST_MATH__)
#error "posenc's core needs IEEE arithmetic: build it without -ffast-math"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "posenc's core needs double arithmetic without excess precision (FLT_EVAL_METHOD 0, e.g. SSE2 on x86)"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The row loops are built twice on x86-64 with GCC or Clang: for AVX2 (four doubles a vector) and for the baseline,
 * the CPU choosing at load time. Only the vector width differs: every operation stays an IEEE double or float
 * operation (FMA is not enabled, and contraction is off in any case). The choice at load time is an ifunc: glibc's
 * loader, GCC 6 or Clang 14 and later. */
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(POSENC_NO_CLONES) && \
    (defined(__clang__) ? __clang_major__ >= 14 : defined(__GNUC__) && __GNUC__ >= 6)
#define ROW_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define ROW_LOOP
#endif

/* ------------------------------------------------------------------------------------------------- buffers */
typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* Take `obj`'s buffer as a C-contiguous array of `itemsize`-byte items of one of the format letters `kinds`. */
static int take(PyObject *obj, Buf *buf, int writable, Py_ssize_t itemsize, const char *kinds, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &buf->view, flags) < 0)
        return -1;
    buf->held = 1;
    const char *format = buf->view.format ? buf->view.format : "B";
    if (*format == '@' || *format == '=' || *format == '<')
        format++;
    if (buf->view.itemsize != itemsize || strlen(format) != 1 || !strchr(kinds, *format)) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of format '%s' and %zd bytes, got '%s' of %zd bytes", name,
                     kinds, itemsize, buf->view.format ? buf->view.format : "B", buf->view.itemsize);
        return -1;
    }
    return 0;
}

static void release(Buf *bufs, int count) {
    for (int i = 0; i < count; i++)
        if (bufs[i].held) {
            PyBuffer_Release(&bufs[i].view);
            bufs[i].held = 0;
        }
}

static Py_ssize_t items(const Buf *buf) { return buf->view.len / buf->view.itemsize; }

/* A growing list of int64 entry indices, filled without the GIL. */
typedef struct {
    int64_t *at;
    size_t n, cap;
    int failed;
} Found;

static void add(Found *found, int64_t index) {
    if (found->n == found->cap) {
        size_t cap = found->cap ? 2 * found->cap : 1024;
        int64_t *grown = (int64_t *)realloc(found->at, cap * sizeof(int64_t));
        if (grown == NULL) {
            found->failed = 1;
            return;
        }
        found->at = grown;
        found->cap = cap;
    }
    found->at[found->n++] = index;
}

static PyObject *found_bytes(Found *found) {
    PyObject *out = found->failed ? PyErr_NoMemory()
                                  : PyBytes_FromStringAndSize((const char *)found->at,
                                                              (Py_ssize_t)(found->n * sizeof(int64_t)));
    free(found->at);
    return out;
}

/* The batch's shape, checked: `n` rows of `d` entries, rows lo .. lo+n-1 of a table cut in blocks of `size` rows,
 * offsets table of `size` rows, block vectors for blocks q_first .. (lo+n-1) / size. */
typedef struct {
    Py_ssize_t n, d, size, lo, q_first;
} Shape;

static int check_shape(Shape *s, Py_ssize_t out_items, Py_ssize_t offset_items, Py_ssize_t block_items,
                       Py_ssize_t d, const Buf *zeros) {
    s->d = d;
    if (d <= 0 || s->size <= 0 || s->lo < 0 || out_items % d != 0) {
        PyErr_SetString(PyExc_ValueError, "inconsistent shapes: rows, columns or block size");
        return -1;
    }
    s->n = out_items / d;
    if (s->n == 0)
        return 0;
    Py_ssize_t q_last = (s->lo + s->n - 1) / s->size;
    if (offset_items != s->size * d || s->q_first < 0 || s->q_first > s->lo / s->size ||
        (q_last - s->q_first + 1) * d > block_items) {
        PyErr_SetString(PyExc_ValueError, "inconsistent shapes: offset table or block vectors");
        return -1;
    }
    const int64_t *z = (const int64_t *)zeros->view.buf;
    for (Py_ssize_t i = 0; i < items(zeros); i++)
        if (z[i] < 0 || z[i] >= d) {
            PyErr_SetString(PyExc_ValueError, "zero column out of range");
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------------------------------------- float32 */
/* One row: combine32 of _combine.py. y = xh*uh + yh*vh in double; the float32 roundings of y + err and y - err;
 * the entry is undecided where their bits differ. Returns whether any is. */
ROW_LOOP static int row32(float *restrict out, unsigned char *restrict flag, const double *restrict x,
                 const double *restrict y, const double *restrict u, const double *restrict v,
                 const double *restrict err, Py_ssize_t d) {
    unsigned int any = 0;
    for (Py_ssize_t c = 0; c < d; c++) {
        double p = x[c] * u[c];
        double t = y[c] * v[c];
        double s = p + t;
        float hi = (float)(s + err[c]);
        float lo = (float)(s - err[c]);
        uint32_t bh, bl;
        memcpy(&bh, &hi, 4);
        memcpy(&bl, &lo, 4);
        unsigned char f = (unsigned char)(bh != bl);
        out[c] = hi;
        flag[c] = f;
        any |= f;
    }
    return any != 0;
}

static const char *combine32_doc =
    "combine32(out, xh, yh, uh, vh, err, zeros, lo, size, q_first) -> bytes\n\n"
    "Rows lo .. lo + n - 1 of a float32 table into out (n * d float32), entry (r, c) from the offset table\n"
    "xh, yh (size * d float64) at row r % size and the block vectors uh, vh (float64, d per block, from block\n"
    "q_first on) at block r // size, with the error bound err (d float64); columns zeros (int64) are +0.0.\n"
    "Returns the int64 indices (row * d + column, within out) of the entries left undecided.";

static PyObject *combine32(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[7];
    Shape s;
    if (!PyArg_ParseTuple(args, "OOOOOOOnnn:combine32", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &s.lo,
                          &s.size, &s.q_first))
        return NULL;
    Buf b[7];
    memset(b, 0, sizeof b);
    if (take(o[0], &b[0], 1, 4, "f", "out") || take(o[1], &b[1], 0, 8, "d", "xh") ||
        take(o[2], &b[2], 0, 8, "d", "yh") || take(o[3], &b[3], 0, 8, "d", "uh") ||
        take(o[4], &b[4], 0, 8, "d", "vh") || take(o[5], &b[5], 0, 8, "d", "err") ||
        take(o[6], &b[6], 0, 8, "qln", "zeros"))
        goto fail;
    if (items(&b[2]) != items(&b[1]) || items(&b[4]) != items(&b[3])) {
        PyErr_SetString(PyExc_ValueError, "inconsistent shapes: xh, yh or uh, vh");
        goto fail;
    }
    if (check_shape(&s, items(&b[0]), items(&b[1]), items(&b[3]), items(&b[5]), &b[6]))
        goto fail;
    unsigned char *flag = (unsigned char *)malloc((size_t)s.d);
    if (flag == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Found found = {NULL, 0, 0, 0};
    float *out = (float *)b[0].view.buf;
    const double *xh = b[1].view.buf, *yh = b[2].view.buf, *uh = b[3].view.buf, *vh = b[4].view.buf;
    const double *err = b[5].view.buf;
    const int64_t *zeros = b[6].view.buf;
    Py_ssize_t nz = items(&b[6]), d = s.d;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < s.n; i++) {
        Py_ssize_t r = s.lo + i, q = r / s.size, a = r - q * s.size;
        size_t off = (size_t)a * (size_t)d, blk = (size_t)(q - s.q_first) * (size_t)d;
        float *row = out + (size_t)i * (size_t)d;
        int any = row32(row, flag, xh + off, yh + off, uh + blk, vh + blk, err, d);
        for (Py_ssize_t k = 0; k < nz; k++) {
            row[zeros[k]] = 0.0f;
            flag[zeros[k]] = 0;
        }
        if (any)
            for (Py_ssize_t c = 0; c < d; c++)
                if (flag[c])
                    add(&found, (int64_t)i * d + c);
    }
    Py_END_ALLOW_THREADS
    free(flag);
    release(b, 7);
    return found_bytes(&found);
fail:
    release(b, 7);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------- float64 */
/* Veltkamp's split, Knuth's two-sum and Dekker's product error: _kernel.split, two_sum, prod_err. */
#define SPLIT(a, hi, lo)                                                                                            \
    do {                                                                                                           \
        double t_ = (a) * 134217729.0;                                                                             \
        hi = t_ - (t_ - (a));                                                                                      \
        lo = (a) - hi;                                                                                             \
    } while (0)
#define TWO_SUM(a, b, s, e)                                                                                         \
    do {                                                                                                           \
        double s_ = (a) + (b);                                                                                     \
        double bb_ = s_ - (a);                                                                                     \
        e = ((a) - (s_ - bb_)) + ((b) - bb_);                                                                      \
        s = s_;                                                                                                    \
    } while (0)
#define PROD_ERR(a1, a2, b1, b2, p) (((((a1) * (b1) - (p)) + (a1) * (b2)) + (a2) * (b1)) + (a2) * (b2))

/* One row: combine64 of _combine.py (double-double angle addition, times p2, then the half-gap test). */
ROW_LOOP static int row64(double *restrict out, unsigned char *restrict flag, const double *restrict xh,
                 const double *restrict xl, const double *restrict yh, const double *restrict yl,
                 const double *restrict uh, const double *restrict ul, const double *restrict vh,
                 const double *restrict vl, const double *restrict ea, const double *restrict er, double p2,
                 Py_ssize_t d) {
    unsigned int any = 0;
    for (Py_ssize_t c = 0; c < d; c++) {
        double x1, x2, y1, y2, u1, u2, v1, v2, s, t, hi, lo;
        SPLIT(xh[c], x1, x2);
        SPLIT(yh[c], y1, y2);
        SPLIT(uh[c], u1, u2);
        SPLIT(vh[c], v1, v2);
        double p1 = xh[c] * uh[c];
        double q1 = yh[c] * vh[c];
        double e = PROD_ERR(x1, x2, u1, u2, p1) + PROD_ERR(y1, y2, v1, v2, q1);
        TWO_SUM(p1, q1, s, t);
        t = t + ((e + (xh[c] * ul[c] + xl[c] * uh[c])) + (yh[c] * vl[c] + yl[c] * vh[c]));
        TWO_SUM(s, t, hi, lo);
        hi = hi * p2; /* exact when p2 is 1: the pure path's skipped multiplication gives the same bits */
        lo = lo * p2;
        out[c] = hi;
        double a = fabs(hi), below;
        uint64_t bits;
        memcpy(&bits, &a, 8);
        bits -= 1; /* nextafter(a, 0); NaN for a == 0, which stays undecided */
        memcpy(&below, &bits, 8);
        unsigned char f = (unsigned char)!(fabs(lo) + (ea[c] + a * er[c]) < (a - below) * 0.5);
        flag[c] = f;
        any |= f;
    }
    return any != 0;
}

static const char *combine64_doc =
    "combine64(out, xh, xl, yh, yl, uh, ul, vh, vl, err_abs, err_rel, p2, zeros, lo, size, q_first) -> bytes\n\n"
    "combine32 for float64 output: double-double offset table (xh, xl, yh, yl) and block vectors (uh, ul, vh,\n"
    "vl), the bound err_abs + err_rel * |y| per column, the power of two p2 applied last.";

static PyObject *combine64(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[12];
    Shape s;
    double p2;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOdOnnn:combine64", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &p2, &o[11], &s.lo, &s.size, &s.q_first))
        return NULL;
    static const char *names[12] = {"out", "xh", "xl", "yh", "yl", "uh", "ul", "vh", "vl", "err_abs", "err_rel",
                                    "zeros"};
    Buf b[12];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 12; i++)
        if (take(o[i], &b[i], i == 0, 8, i == 11 ? "qln" : "d", names[i]))
            goto fail;
    for (int i = 2; i <= 4; i++)
        if (items(&b[i]) != items(&b[1]) || items(&b[i + 4]) != items(&b[5])) {
            PyErr_SetString(PyExc_ValueError, "inconsistent shapes: offset table or block vectors");
            goto fail;
        }
    if (items(&b[10]) != items(&b[9]) ||
        check_shape(&s, items(&b[0]), items(&b[1]), items(&b[5]), items(&b[9]), &b[11])) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "inconsistent shapes: err_abs, err_rel");
        goto fail;
    }
    unsigned char *flag = (unsigned char *)malloc((size_t)s.d);
    if (flag == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Found found = {NULL, 0, 0, 0};
    double *out = (double *)b[0].view.buf;
    const double *t[10];
    for (int i = 0; i < 10; i++)
        t[i] = (const double *)b[i + 1].view.buf;
    const int64_t *zeros = b[11].view.buf;
    Py_ssize_t nz = items(&b[11]), d = s.d;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < s.n; i++) {
        Py_ssize_t r = s.lo + i, q = r / s.size, a = r - q * s.size;
        size_t off = (size_t)a * (size_t)d, blk = (size_t)(q - s.q_first) * (size_t)d;
        double *row = out + (size_t)i * (size_t)d;
        int any = row64(row, flag, t[0] + off, t[1] + off, t[2] + off, t[3] + off, t[4] + blk, t[5] + blk,
                        t[6] + blk, t[7] + blk, t[8], t[9], p2, d);
        for (Py_ssize_t k = 0; k < nz; k++) {
            row[zeros[k]] = 0.0;
            flag[zeros[k]] = 0;
        }
        if (any)
            for (Py_ssize_t c = 0; c < d; c++)
                if (flag[c])
                    add(&found, (int64_t)i * d + c);
    }
    Py_END_ALLOW_THREADS
    free(flag);
    release(b, 12);
    return found_bytes(&found);
fail:
    release(b, 12);
    return NULL;
}

/* -------------------------------------------------------------------------------------------------- kernel */
static const char *kernel_doc =
    "kernel(rows, g, phase, table, constants, sh, sl, ch, cl) -> None\n\n"
    "posenc_cli.encodings._kernel.kernel, operation for operation: sin and cos of 2 pi (phase + rows g) / M as\n"
    "double-doubles into sh, sl, ch, cl (n * K float64 each, row-major), for rows (n float64), g (4 * K: the\n"
    "PIECES rows of the constants), phase (3 * K, or None for a zero phase), table (8 * M: _kernel's turn table\n"
    "and its Veltkamp halves) and constants (the 11 floats of _kernel.kernel_constants).";

static PyObject *kernel(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO:kernel", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    static const char *names[9] = {"rows", "g", "phase", "table", "constants", "sh", "sl", "ch", "cl"};
    Buf b[9];
    memset(b, 0, sizeof b);
    int phased = o[2] != Py_None;
    for (int i = 0; i < 9; i++)
        if ((i != 2 || phased) && take(o[i], &b[i], i >= 5, 8, "d", names[i]))
            goto fail;
    Py_ssize_t n = items(&b[0]), k = items(&b[1]) / 4, m = items(&b[3]) / 8;
    int ok = items(&b[1]) == 4 * k && (!phased || items(&b[2]) == 3 * k) && items(&b[3]) == 8 * m && m > 0 &&
             (m & (m - 1)) == 0 && items(&b[4]) == 11;
    for (int i = 5; i < 9; i++)
        ok = ok && items(&b[i]) == n * k;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "inconsistent shapes: rows, pieces, phase, table or outputs");
        goto fail;
    }
    const double *rows = b[0].view.buf, *g = b[1].view.buf, *ph = phased ? b[2].view.buf : NULL;
    const double *tab = b[3].view.buf, *c = b[4].view.buf;
    double *out_sh = b[5].view.buf, *out_sl = b[6].view.buf, *out_ch = b[7].view.buf, *out_cl = b[8].view.buf;
    const double two_pi_h = c[0], two_pi_l = c[1], two_pi_1 = c[2], two_pi_2 = c[3];
    const double S0 = c[4], S1 = c[5], S2 = c[6], S3 = c[7], T0 = c[8], T1 = c[9], T2 = c[10];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double row = rows[i];
        for (Py_ssize_t j = 0; j < k; j++) {
            double a, nn, r, v1, v2, h, e1, e2, e3, low;
            a = row * g[j];
            nn = rint(a);
            v1 = a - nn;
            a = row * g[k + j];
            r = rint(a);
            nn = nn + r;
            v2 = a - r;
            a = row * g[2 * k + j];
            r = rint(a);
            nn = nn + r;
            TWO_SUM(v1, v2, h, e1);
            TWO_SUM(h, a - r, h, e2);
            low = (e1 + e2) + row * g[3 * k + j];
            if (ph) {
                nn = nn + ph[j];
                TWO_SUM(h, ph[k + j], h, e3);
                low = low + (e3 + ph[2 * k + j]);
            }
            r = rint(h);
            nn = nn + r;
            double vh, vl, w1, w2;
            TWO_SUM(h - r, low, vh, vl);
            double p = two_pi_h * vh;
            SPLIT(vh, w1, w2);
            double rest = ((((two_pi_1 * w1 - p) + two_pi_1 * w2) + two_pi_2 * w1) + two_pi_2 * w2) +
                          (two_pi_h * vl + two_pi_l * vh);
            double dh = p + rest;
            double dl = rest - (dh - p);
            Py_ssize_t t = (Py_ssize_t)((int64_t)nn & (int64_t)(m - 1));
            double sh = tab[t], sl = tab[m + t], cth = tab[2 * m + t], ctl = tab[3 * m + t];
            double s1 = tab[4 * m + t], s2 = tab[5 * m + t], c1 = tab[6 * m + t], c2 = tab[7 * m + t];
            double x = dh * dh, d1, d2;
            SPLIT(dh, d1, d2);
            double xl = PROD_ERR(d1, d2, d1, d2, x) + (2 * dh) * dl;
            double sin_lo = dl + (dh * x) * (S0 + x * (S1 + x * (S2 + x * S3)));
            double rh = -0.5 * x;
            double rl = -0.5 * xl + (x * x) * (T0 + x * (T1 + x * T2));
            double r1, r2;
            SPLIT(rh, r1, r2);
            double outs[4];
            for (int f = 0; f < 2; f++) {
                double ah = f ? cth : sh, al = f ? ctl : sl, a1 = f ? c1 : s1, a2 = f ? c2 : s2;
                double bh = f ? sh : cth, bl = f ? sl : ctl, b1 = f ? s1 : c1, b2 = f ? s2 : c2;
                double sign = f ? -1.0 : 1.0;
                double pb = bh * dh;
                double eb = (PROD_ERR(b1, b2, d1, d2, pb) + bh * sin_lo) + bl * dh;
                double pa = ah * rh;
                double ea = (PROD_ERR(a1, a2, r1, r2, pa) + ah * rl) + al * rh;
                double s, t1, t2;
                TWO_SUM(ah, sign * pb, s, t1);
                TWO_SUM(s, pa, s, t2);
                TWO_SUM(s, (((t1 + t2) + al) + sign * eb) + ea, outs[2 * f], outs[2 * f + 1]);
            }
            size_t at = (size_t)i * (size_t)k + (size_t)j;
            out_sh[at] = outs[0];
            out_sl[at] = outs[1];
            out_ch[at] = outs[2];
            out_cl[at] = outs[3];
        }
    }
    Py_END_ALLOW_THREADS
    release(b, 9);
    Py_RETURN_NONE;
fail:
    release(b, 9);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------- trig32 */
static const char *trig32_doc =
    "trig32(angles, cos_out, sin_out, k, cols, inv=None) -> (bytes or None, bytes or None)\n\n"
    "posenc_cli.encodings.float32's cos and sin of float32 angles (n rows of k, finite), correctly rounded to\n"
    "float32 where the bound proves it, into cos_out and sin_out (n rows of len(cols) float32 each, or None for a\n"
    "part not wanted): out[r][c] is entry (r, cols[c]), each entry computed once however many columns take it.\n"
    "The value is the C library's double cos or sin of the angle (sincos where glibc has it), trusted to 2**-46\n"
    "relative (glibc's, musl's, macOS's and the MSVC runtime's are within 1 ulp, 2**-52), rounded where\n"
    "round_checked's test proves it (both ends of the interval round alike). Returns, per part, the int64 indices\n"
    "r * k + j of the angles left undecided (the columns that take them are unspecified), for the exact path.\n"
    "Every decided entry is the correctly rounded value, so both cores write the same bits. With inv (k float32),\n"
    "angles holds n int64 positions and angle (r, j) is fl32(fl32(positions[r]) * inv[j]), transformers' freqs\n"
    "(NumPy's int64 -> float32 conversion and float32 product, the same IEEE operations), made row by row.";

/* Round y to float32 into *to if the bound decides it; 0 when it does not. */
static inline int round_trusted(double y, float *to) {
    const double trusted = 0x1p-46, floor_err = 0x1p-1000, margin = 1.0 + 0x1p-50, rel = 0x1p-52, tiny = 0x1p-1074;
    double ay = fabs(y);
    double e = (ay * trusted + floor_err) * margin + ay * rel + tiny;
    float hi = (float)(y + e), lo = (float)(y - e);
    uint32_t hb, lb;
    memcpy(&hb, &hi, 4);
    memcpy(&lb, &lo, 4);
    *to = hi;
    return hb == lb;
}

static PyObject *trig32(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5] = {NULL, NULL, NULL, NULL, Py_None};
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOOnO|O:trig32", &o[0], &o[1], &o[2], &k, &o[3], &o[4]))
        return NULL;
    Buf b[5];
    memset(b, 0, sizeof b);
    int want[2] = {o[1] != Py_None, o[2] != Py_None}, outer = o[4] != Py_None;
    if ((outer ? take(o[0], &b[0], 0, 8, "qlL", "positions") : take(o[0], &b[0], 0, 4, "f", "angles")) ||
        (want[0] && take(o[1], &b[1], 1, 4, "f", "cos_out")) ||
        (want[1] && take(o[2], &b[2], 1, 4, "f", "sin_out")) || take(o[3], &b[3], 0, 8, "qlL", "cols") ||
        (outer && take(o[4], &b[4], 0, 4, "f", "inv")))
        goto fail;
    Py_ssize_t m = items(&b[3]), n = outer ? items(&b[0]) : k > 0 ? items(&b[0]) / k : 0;
    const int64_t *cols = b[3].view.buf;
    int ok = k > 0 && (outer ? items(&b[4]) == k : items(&b[0]) == n * k) && (want[0] || want[1]);
    for (int f = 0; f < 2; f++)
        ok = ok && (!want[f] || items(&b[1 + f]) == n * m);
    for (Py_ssize_t c = 0; ok && c < m; c++)
        ok = cols[c] >= 0 && cols[c] < k;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "inconsistent shapes: angles, outputs, k or cols");
        goto fail;
    }
    float *row = (float *)malloc(2 * (size_t)k * sizeof(float));
    if (row == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    const float *a = outer ? NULL : b[0].view.buf, *inv = outer ? b[4].view.buf : NULL;
    const int64_t *pos = outer ? b[0].view.buf : NULL;
    float *out[2] = {want[0] ? b[1].view.buf : NULL, want[1] ? b[2].view.buf : NULL};
    Found found[2] = {{NULL, 0, 0, 0}, {NULL, 0, 0, 0}};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        float p = outer ? (float)pos[r] : 0.0f;
        for (Py_ssize_t j = 0; j < k; j++) {
            float angle = outer ? p * inv[j] : a[r * k + j];
            double x = (double)angle, y[2];
#if defined(__GLIBC__)
            if (want[0] && want[1])
                sincos(x, &y[1], &y[0]);
            else
#endif
            {
                y[0] = want[0] ? cos(x) : 0.0;
                y[1] = want[1] ? sin(x) : 0.0;
            }
            if (x == 0) { /* cos 0 = 1, sin(+-0) = +-0 exactly: no bound can decide a zero's sign */
                row[j] = 1.0f;
                row[k + j] = angle;
                continue;
            }
            for (int f = 0; f < 2; f++)
                if (want[f] && !round_trusted(y[f], &row[f * k + j]))
                    add(&found[f], (int64_t)(r * k + j));
        }
        for (int f = 0; f < 2; f++)
            if (want[f]) {
                float *dst = out[f] + r * m;
                const float *src = row + f * k;
                for (Py_ssize_t c = 0; c < m; c++)
                    dst[c] = src[cols[c]];
            }
    }
    Py_END_ALLOW_THREADS
    free(row);
    release(b, 5);
    PyObject *parts[2] = {Py_None, Py_None};
    for (int f = 0; f < 2; f++) {
        if (want[f]) {
            parts[f] = found_bytes(&found[f]);
            if (parts[f] == NULL) {
                for (int g = 0; g < 2; g++)
                    if (g != f && want[g] && parts[g] != Py_None && parts[g] != NULL)
                        Py_DECREF(parts[g]);
                if (f == 0)
                    free(found[1].at);
                return NULL;
            }
        }
    }
    PyObject *result = PyTuple_Pack(2, parts[0], parts[1]);
    for (int f = 0; f < 2; f++)
        if (want[f])
            Py_DECREF(parts[f]);
    return result;
fail:
    release(b, 5);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------- module */
static PyMethodDef methods[] = {
    {"combine32", combine32, METH_VARARGS, NULL},
    {"combine64", combine64, METH_VARARGS, NULL},
    {"kernel", kernel, METH_VARARGS, NULL},
    {"trig32", trig32, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "posenc_cli._core",
    "posenc's compiled core: the sinusoid engine's per-batch loop (see posenc_cli/_core/core.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__core(void) {
    methods[0].ml_doc = combine32_doc;
    methods[1].ml_doc = combine64_doc;
    methods[2].ml_doc = kernel_doc;
    methods[3].ml_doc = trig32_doc;
    return PyModule_Create(&module);
}
