/* attnprof.trace._scan: one batch of torch.profiler trace events, JSON text -> columns.
 *
 * The fast path of the trace loader (see scan.py). It reads ``[event, event, ...]`` in one
 * pass, without building a Python object per event or per field, into one ``Rec`` per event,
 * then hands the batch over as one column per field (numpy views them). Strings and the raw
 * text of "Input Dims"/"Input type" are interned by their exact JSON text: a token id per
 * distinct text, the text itself handed to Python once.
 *
 * It is deliberately narrow. It accepts only what the typed msgspec path (schema.Event)
 * accepts *and* what it can reproduce exactly: ASCII strings without \u escapes, integers of
 * at most 18 digits, byte counts below 2**53, finite floats, no string flow ids or streams,
 * grids and blocks of exactly three ints, no -0.0 in the launch floats. On anything else
 * it returns None and the loader decodes that batch with msgspec as before, so a batch's
 * columns never depend on which path read it (the tests compare both on every trace).
 *
 * No GIL is held while scanning: a gzip file is inflated by another thread meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---- the record ---------------------------------------------------------------------- */
typedef struct {
    int64_t pid, tid, ts_i, flow_id;
    int64_t correlation, external_id, sequence_number, device, device_id, stream;
    int64_t grid[3], block[3];
    int64_t regs, smem, alloc, copy, total, addr, device_type, sort_index;
    double ts_f, dur, bps, wps, occ;
    int32_t cat, name, input_dims, input_types, meta_name, meta_labels;
    int32_t pid_text, tid_text; /* a pid/tid written as a string ("Spans"): its token */
    uint8_t ph, bp, flags, pad[5];
} Rec;

/* Every field of Rec but the padding, in memory order, with its numpy type: the one list
 * both the columns (FIELD_LAYOUT) and Python's view of them (FIELDS) are made from. */
#define REC_FIELDS(X)                                                                         \
    X(pid, "<i8") X(tid, "<i8") X(ts_i, "<i8") X(flow_id, "<i8") X(correlation, "<i8")        \
    X(external_id, "<i8") X(sequence_number, "<i8") X(device, "<i8") X(device_id, "<i8")      \
    X(stream, "<i8") X(grid, "(3,)<i8") X(block, "(3,)<i8") X(regs, "<i8") X(smem, "<i8")      \
    X(alloc, "<i8") X(copy, "<i8") X(total, "<i8") X(addr, "<i8") X(device_type, "<i8")       \
    X(sort_index, "<i8") X(ts_f, "<f8") X(dur, "<f8") X(bps, "<f8") X(wps, "<f8")             \
    X(occ, "<f8") X(cat, "<i4") X(name, "<i4") X(input_dims, "<i4") X(input_types, "<i4")     \
    X(meta_name, "<i4") X(meta_labels, "<i4") X(pid_text, "<i4") X(tid_text, "<i4")           \
    X(ph, "S1") X(bp, "S1") X(flags, "u1")

static const struct {
    const char *name, *dtype;
    size_t offset, size;
} FIELD_LAYOUT[] = {
#define LAYOUT(f, dtype) {#f, dtype, offsetof(Rec, f), sizeof(((Rec *)0)->f)},
    REC_FIELDS(LAYOUT)
#undef LAYOUT
};
#define N_FIELDS (sizeof FIELD_LAYOUT / sizeof FIELD_LAYOUT[0])

enum {
    F_TS_INT = 2, /* ts was written as an integer (ts_i exact, ts_f its float64) */
    F_BLOCK = 4,  /* args.block present (a kernel launch) */
    F_ALLOC = 8,  /* args."Bytes" present */
    F_COPY = 16,  /* args."bytes" present */
    F_TOTAL = 32, /* args."Total Allocated" present */
    F_SORT = 64   /* args.sort_index present (metadata events) */
};

static void rec_init(Rec *r) {
    r->pid = r->tid = -1;
    r->ts_i = 0;
    r->flow_id = -1;
    r->correlation = r->external_id = r->sequence_number = -1;
    r->device = r->device_id = r->stream = -1;
    for (int i = 0; i < 3; i++) r->grid[i] = r->block[i] = -1;
    r->regs = r->smem = -1;
    r->alloc = r->copy = r->total = 0;
    r->addr = r->device_type = -1;
    r->sort_index = 0;
    r->ts_f = r->dur = r->bps = r->wps = r->occ = NAN;
    r->cat = r->name = r->input_dims = r->input_types = r->meta_name = r->meta_labels = -1;
    r->pid_text = r->tid_text = -1;
    r->ph = r->bp = r->flags = 0;
    memset(r->pad, 0, sizeof r->pad);
}

/* ---- the token table ----------------------------------------------------------------- */
typedef struct {
    uint64_t hash;
    Py_ssize_t off, len; /* the token's text in the arena */
    int32_t id;          /* -1: empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    Py_ssize_t cap, count; /* cap: a power of two */
    char *arena;
    Py_ssize_t arena_len, arena_cap;
    Py_ssize_t *offsets;  /* token id -> its offset in the arena */
    Py_ssize_t offsets_cap;
    Py_ssize_t published; /* tokens already handed to Python */
    int busy;             /* a scan is running (the GIL is released meanwhile) */
    PyObject *tokens;     /* list[bytes]: token id -> its JSON text */
    Rec *recs;            /* the batch being read, kept between calls (no page faults) */
    Py_ssize_t recs_cap;
} Scanner;

static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    /* 8 bytes a step, multiply-xorshift mixing: enough for a hash table's buckets. */
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h;
}

static int table_grow(Scanner *sc) {
    Py_ssize_t cap = sc->cap ? sc->cap * 2 : 1024;
    Slot *slots = malloc((size_t)cap * sizeof(Slot));
    if (!slots) return -1;
    for (Py_ssize_t i = 0; i < cap; i++) slots[i].id = -1;
    for (Py_ssize_t i = 0; i < sc->cap; i++) {
        if (sc->slots[i].id < 0) continue;
        Py_ssize_t j = (Py_ssize_t)(sc->slots[i].hash & (uint64_t)(cap - 1));
        while (slots[j].id >= 0) j = (j + 1) & (cap - 1);
        slots[j] = sc->slots[i];
    }
    free(sc->slots);
    sc->slots = slots;
    sc->cap = cap;
    return 0;
}

/* The token id of text[0:n], adding it if new; -2 when out of memory or ids. */
static int32_t intern(Scanner *sc, const char *text, Py_ssize_t n) {
    if ((sc->count + 1) * 2 > sc->cap && table_grow(sc) < 0) return -2;
    uint64_t h = hash_bytes(text, n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(sc->cap - 1));
    while (sc->slots[j].id >= 0) {
        Slot *s = &sc->slots[j];
        if (s->hash == h && s->len == n && memcmp(sc->arena + s->off, text, (size_t)n) == 0)
            return s->id;
        j = (j + 1) & (sc->cap - 1);
    }
    if (sc->count >= INT32_MAX - 1) return -2;
    if (sc->count == sc->offsets_cap) {
        Py_ssize_t cap = sc->offsets_cap ? sc->offsets_cap * 2 : 1024;
        Py_ssize_t *offsets = realloc(sc->offsets, (size_t)cap * sizeof(Py_ssize_t));
        if (!offsets) return -2;
        sc->offsets = offsets;
        sc->offsets_cap = cap;
    }
    if (sc->arena_len + n > sc->arena_cap) {
        Py_ssize_t cap = sc->arena_cap ? sc->arena_cap : 1 << 16;
        while (cap < sc->arena_len + n) cap *= 2;
        char *arena = realloc(sc->arena, (size_t)cap);
        if (!arena) return -2;
        sc->arena = arena;
        sc->arena_cap = cap;
    }
    memcpy(sc->arena + sc->arena_len, text, (size_t)n);
    Slot *s = &sc->slots[j];
    s->hash = h;
    s->off = sc->arena_len;
    s->len = n;
    sc->offsets[sc->count] = sc->arena_len;
    s->id = (int32_t)sc->count++;
    sc->arena_len += n;
    return s->id;
}

/* ---- the JSON reader ----------------------------------------------------------------- */
/* Every reader returns the position after what it read, or NULL for "not the fast path"
 * (malformed, unusual or out of memory: the msgspec path decides which and says so). */
typedef struct {
    Scanner *sc;
    const char *end;
    int oom;
} Ctx;

#define MAX_DEPTH 64 /* deeper values go to msgspec (which reports real nesting faults) */

static inline const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* A string token starting at its opening quote; *escaped says whether it has a backslash. */
static const char *string_token(const char *p, const char *end, int *escaped) {
    *escaped = 0;
    p++; /* the opening quote */
    for (;;) {
        const char *q = p;
#ifdef __SSE2__
        /* 16 bytes a step while they are plain printable ASCII: no quote, no backslash, no
         * control character and no byte >= 0x80 (negative as signed: below 0x20 too). */
        const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'),
                      space = _mm_set1_epi8(0x20);
        while (end - q >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)q);
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                    _mm_cmpeq_epi8(x, slash)),
                                       _mm_cmplt_epi8(x, space));
            int mask = _mm_movemask_epi8(hit);
            if (mask) {
                q += __builtin_ctz((unsigned)mask);
                break;
            }
            q += 16;
        }
#endif
        /* Plain printable ASCII runs: the common case, one comparison chain per byte. */
        while (q < end && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80 && *q != '"' &&
               *q != '\\')
            q++;
        if (q >= end) return NULL;
        if (*q == '"') return q + 1;
        if (*q != '\\') return NULL; /* a control character or non-ASCII byte */
        if (q + 1 >= end) return NULL;
        switch (q[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            break;
        default:
            return NULL; /* \u escapes (surrogates...) and invalid escapes */
        }
        *escaped = 1;
        p = q + 2;
    }
}

/* A JSON number; *is_int, and its value in *ival (integers) or *dval (always). */
static const char *number(const char *p, const char *end, int *is_int, int64_t *ival,
                          double *dval) {
    const char *start = p;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || (unsigned)(*p - '0') > 9) return NULL;
    const char *digits = p;
    uint64_t v = 0; /* wraps past 20 digits: only used up to 18 */
    if (*p == '0') {
        p++;
    } else {
        while (p < end && (unsigned)(*p - '0') <= 9) v = v * 10 + (unsigned)(*p++ - '0');
    }
    Py_ssize_t ndigits = p - digits;
    if (p >= end || (*p != '.' && *p != 'e' && *p != 'E')) { /* an integer: the common case */
        if (p < end && (unsigned)(*p - '0') <= 9) return NULL; /* "01": a leading zero */
        if (ndigits > 18) return NULL; /* beyond what int64 surely holds: msgspec decides */
        *ival = neg ? -(int64_t)v : (int64_t)v;
        *dval = (double)*ival; /* exact below 2**53, correctly rounded above */
        *is_int = 1;
        return p;
    }
    if (*p == '.') {
        p++;
        if (p >= end || (unsigned)(*p - '0') > 9) return NULL;
        while (p < end && (unsigned)(*p - '0') <= 9) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || (unsigned)(*p - '0') > 9) return NULL;
        while (p < end && (unsigned)(*p - '0') <= 9) p++;
    }
    char buf[72];
    Py_ssize_t n = p - start;
    if (n >= (Py_ssize_t)sizeof buf) return NULL;
    memcpy(buf, start, (size_t)n);
    buf[n] = 0;
    /* The grammar is checked above, so strtod sees a plain decimal and rounds it correctly.
     * Under a locale whose decimal point is not "." (a host program's setlocale) it stops
     * early, and the batch goes to msgspec. */
    char *stop;
    double d = strtod(buf, &stop);
    if (stop != buf + n || !isfinite(d)) return NULL;
    *dval = d;
    *is_int = 0;
    return p;
}

static const char *skip_value(const char *p, const char *end, int depth);

static const char *skip_container(const char *p, const char *end, int depth, char close) {
    if (depth >= MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            int esc;
            if (p >= end || *p != '"') return NULL;
            p = string_token(p, end, &esc);
            if (!p) return NULL;
            p = ws(p, end);
            if (p >= end || *p != ':') return NULL;
            p = ws(p + 1, end);
        }
        p = skip_value(p, end, depth + 1);
        if (!p) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

static const char *literal(const char *p, const char *end, const char *word, size_t n) {
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

static const char *skip_value(const char *p, const char *end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '"': {
        int esc;
        return string_token(p, end, &esc);
    }
    case '{': return skip_container(p, end, depth, '}');
    case '[': return skip_container(p, end, depth, ']');
    case 't': return literal(p, end, "true", 4);
    case 'f': return literal(p, end, "false", 5);
    case 'n': return literal(p, end, "null", 4);
    default: {
        int is_int;
        int64_t i;
        double d;
        return number(p, end, &is_int, &i, &d);
    }
    }
}

static inline int is_null(const char *p, const char *end) { return literal(p, end, "null", 4) != NULL; }

/* An int field (msgspec: int; floats, strings and null are type errors). */
static const char *int_field(const char *p, const char *end, int64_t *out) {
    int is_int;
    double d;
    p = number(p, end, &is_int, out, &d);
    return p && is_int ? p : NULL;
}

/* A float field (msgspec: float, ints accepted). */
static const char *float_field(const char *p, const char *end, double *out) {
    int is_int;
    int64_t i;
    return number(p, end, &is_int, &i, out);
}

/* int | None: null leaves the field absent. */
static const char *opt_int_field(const char *p, const char *end, int64_t *out, uint8_t *flags,
                                 uint8_t flag) {
    if (is_null(p, end)) return p + 4;
    p = int_field(p, end, out);
    if (p) *flags |= flag;
    return p;
}

/* A byte count ("Bytes", "bytes", "Total Allocated"): int | None of magnitude below 2**53,
 * as schema.ByteCount types it; a larger one (not exact in float64, no allocation is that
 * large) is not the fast path: msgspec's loose reading makes it absent and counts it. */
static const char *byte_count(const char *p, const char *end, int64_t *out, uint8_t *flags,
                              uint8_t flag) {
    const int64_t limit = (int64_t)1 << 53;
    p = opt_int_field(p, end, out, flags, flag);
    return p && (!(*flags & flag) || (*out > -limit && *out < limit)) ? p : NULL;
}

/* A list of exactly three ints (what kernels write for grid and block). */
static const char *triple(const char *p, const char *end, int64_t out[3]) {
    if (p >= end || *p != '[') return NULL;
    p = ws(p + 1, end);
    for (int i = 0; i < 3; i++) {
        p = int_field(p, end, &out[i]);
        if (!p) return NULL;
        p = ws(p, end);
        if (p >= end || *p != (i < 2 ? ',' : ']')) return NULL;
        p = ws(p + 1, end);
    }
    return p;
}

/* A launch float: -0.0 would compare equal to 0.0 in the launch table's keys but keep its
 * sign if it came first; too rare to reproduce, so it goes to msgspec. */
static const char *launch_float(const char *p, const char *end, double *out) {
    p = float_field(p, end, out);
    return p && !(*out == 0.0 && signbit(*out)) ? p : NULL;
}

static int32_t intern_or_oom(Ctx *c, const char *text, Py_ssize_t n) {
    int32_t id = intern(c->sc, text, n);
    if (id == -2) c->oom = 1;
    return id;
}

/* A string's token id into *out; "" is the absent -1 unless keep_empty (where it is a
 * value, as in a metadata event's name). Anything but a string is not the fast path. */
static const char *string_field(Ctx *c, const char *p, int32_t *out, int keep_empty) {
    int esc;
    if (p >= c->end || *p != '"') return NULL;
    const char *q = string_token(p, c->end, &esc);
    if (!q) return NULL;
    if (q - p == 2 && !keep_empty) {
        *out = -1;
        return q;
    }
    int32_t id = intern_or_oom(c, p, q - p);
    if (id < 0) return NULL;
    *out = id;
    return q;
}

/* A str | None field of a metadata event: null leaves it absent. */
static const char *meta_text(Ctx *c, const char *p, int32_t *out) {
    return is_null(p, c->end) ? p + 4 : string_field(c, p, out, 1);
}

#define KEY(s) (klen == (Py_ssize_t)(sizeof(s) - 1) && memcmp(key, s, sizeof(s) - 1) == 0)

static const char *args_object(Ctx *c, const char *p, Rec *r) {
    const char *end = c->end;
    uint32_t seen = 0;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        int esc;
        if (p >= end || *p != '"') return NULL;
        const char *key = p + 1;
        p = string_token(p, end, &esc);
        if (!p || esc) return NULL; /* an escaped key might spell a known one */
        Py_ssize_t klen = p - 1 - key;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = ws(p + 1, end);
        int field = -1;
        const char *v = p;
        if (KEY("correlation")) { field = 0; p = int_field(p, end, &r->correlation); }
        else if (KEY("External id")) { field = 1; p = int_field(p, end, &r->external_id); }
        else if (KEY("Sequence number")) { field = 2; p = int_field(p, end, &r->sequence_number); }
        else if (KEY("device")) { field = 3; p = int_field(p, end, &r->device); }
        else if (KEY("Device Id")) { field = 4; p = int_field(p, end, &r->device_id); }
        else if (KEY("stream")) { field = 5; p = int_field(p, end, &r->stream); }
        else if (KEY("grid")) {
            field = 6;
            p = is_null(p, end) ? p + 4 : triple(p, end, r->grid);
        } else if (KEY("block")) {
            field = 7;
            if (is_null(p, end)) {
                p += 4;
            } else {
                p = triple(p, end, r->block);
                r->flags |= F_BLOCK;
            }
        }
        else if (KEY("registers per thread")) { field = 8; p = int_field(p, end, &r->regs); }
        else if (KEY("shared memory")) { field = 9; p = int_field(p, end, &r->smem); }
        else if (KEY("blocks per SM")) { field = 10; p = launch_float(p, end, &r->bps); }
        else if (KEY("warps per SM")) { field = 11; p = launch_float(p, end, &r->wps); }
        else if (KEY("est. achieved occupancy %")) { field = 12; p = launch_float(p, end, &r->occ); }
        else if (KEY("Bytes")) { field = 13; p = byte_count(p, end, &r->alloc, &r->flags, F_ALLOC); }
        else if (KEY("bytes")) { field = 14; p = byte_count(p, end, &r->copy, &r->flags, F_COPY); }
        else if (KEY("Total Allocated")) { field = 15; p = byte_count(p, end, &r->total, &r->flags, F_TOTAL); }
        else if (KEY("Addr")) { field = 16; p = int_field(p, end, &r->addr); }
        else if (KEY("Device Type")) { field = 17; p = int_field(p, end, &r->device_type); }
        else if (KEY("Input Dims") || KEY("Input type")) {
            field = KEY("Input Dims") ? 18 : 19;
            p = skip_value(p, end, 2);
            if (p) {
                int32_t id = intern_or_oom(c, v, p - v); /* the raw text, as msgspec.Raw keeps */
                if (id < 0) return NULL;
                if (field == 18) r->input_dims = id; else r->input_types = id;
            }
        }
        /* What metadata ("M") events say: typed as msgspec types them (str | None,
         * int | None); "" is a value here, not absence, so it is interned too. */
        else if (KEY("name")) { field = 20; p = meta_text(c, p, &r->meta_name); }
        else if (KEY("labels")) { field = 21; p = meta_text(c, p, &r->meta_labels); }
        else if (KEY("sort_index")) {
            field = 22;
            p = opt_int_field(p, end, &r->sort_index, &r->flags, F_SORT);
        }
        else { p = skip_value(p, end, 2); }
        if (!p) return NULL;
        if (field >= 0) {
            if (seen & (1u << field)) return NULL; /* a repeated key: msgspec's rule decides */
            seen |= 1u << field;
        }
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

/* A one-character code ("X"), or "" when allow_empty; anything else is not the fast path. */
static const char *code_field(const char *p, const char *end, uint8_t *out, int allow_empty) {
    if (end - p >= 3 && p[0] == '"' && p[2] == '"' && p[1] != '\\' && p[1] != '"' &&
        (unsigned char)p[1] >= 0x20 && (unsigned char)p[1] < 0x80) {
        *out = (uint8_t)p[1];
        return p + 3;
    }
    if (allow_empty && end - p >= 2 && p[0] == '"' && p[1] == '"') {
        *out = 0;
        return p + 2;
    }
    return NULL;
}

static const char *event(Ctx *c, const char *p, Rec *r) {
    const char *end = c->end;
    uint32_t seen = 0;
    rec_init(r);
    if (p >= end || *p != '{') return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return NULL; /* no "ph": not an event (msgspec path drops it) */
    for (;;) {
        int esc;
        if (p >= end || *p != '"') return NULL;
        const char *key = p + 1;
        p = string_token(p, end, &esc);
        if (!p || esc) return NULL;
        Py_ssize_t klen = p - 1 - key;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = ws(p + 1, end);
        int field = -1;
        if (KEY("ph")) {
            field = 0;
            p = code_field(p, end, &r->ph, 0);
        } else if (KEY("cat")) {
            field = 1;
            p = string_field(c, p, &r->cat, 0);
        } else if (KEY("name")) {
            field = 2;
            p = string_field(c, p, &r->name, 0);
        } else if (KEY("pid")) {
            field = 3;
            p = p < end && *p == '"' ? string_field(c, p, &r->pid_text, 1)
                                     : int_field(p, end, &r->pid);
        } else if (KEY("tid")) {
            field = 4;
            p = p < end && *p == '"' ? string_field(c, p, &r->tid_text, 1)
                                     : int_field(p, end, &r->tid);
        } else if (KEY("ts")) {
            field = 5;
            int is_int;
            p = number(p, end, &is_int, &r->ts_i, &r->ts_f);
            if (p && is_int) r->flags |= F_TS_INT;
        } else if (KEY("dur")) {
            field = 6;
            p = float_field(p, end, &r->dur);
        } else if (KEY("id")) {
            field = 7;
            p = int_field(p, end, &r->flow_id);
        } else if (KEY("bp")) {
            field = 8;
            p = code_field(p, end, &r->bp, 1);
        } else if (KEY("args")) {
            field = 9;
            if (p < end && *p == '{') {
                p = args_object(c, p, r);
            } else {
                p = NULL; /* null or another type: msgspec decides */
            }
        } else {
            p = skip_value(p, end, 1);
        }
        if (!p) return NULL;
        if (field >= 0) {
            if (seen & (1u << field)) return NULL;
            seen |= 1u << field;
        }
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') break;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
    if (!(seen & 1u)) return NULL; /* no "ph" */
    return p + 1;
}

/* ---- the Python type ----------------------------------------------------------------- */
static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.scan is running in another thread");
        return -1;
    }
    /* (Re)start empty: token ids and the tokens list must agree. */
    free(self->slots);
    free(self->arena);
    free(self->offsets);
    self->slots = NULL;
    self->arena = NULL;
    self->offsets = NULL;
    self->cap = self->count = self->arena_len = self->arena_cap = 0;
    self->offsets_cap = self->published = 0;
    Py_XSETREF(self->tokens, PyList_New(0));
    return self->tokens ? 0 : -1;
}

static void Scanner_dealloc(Scanner *self) {
    free(self->slots);
    free(self->arena);
    free(self->offsets);
    free(self->recs);
    Py_XDECREF(self->tokens);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Hand the tokens interned since the last call to Python (as bytes, in id order). Ids are
 * given in arena order, so token k's text runs from its offset to the next token's. */
static int publish(Scanner *sc) {
    for (Py_ssize_t id = sc->published; id < sc->count; id++) {
        Py_ssize_t off = sc->offsets[id];
        Py_ssize_t len = (id + 1 < sc->count ? sc->offsets[id + 1] : sc->arena_len) - off;
        PyObject *b = PyBytes_FromStringAndSize(sc->arena + off, len);
        if (!b || PyList_Append(sc->tokens, b) < 0) {
            Py_XDECREF(b);
            return -1;
        }
        Py_DECREF(b);
        sc->published = id + 1;
    }
    return 0;
}

/* Columns, not records: field f's n values start at n * offsetof(Rec, f), so numpy reads
 * each contiguously (strided reads of whole records cost more than this copy). Written
 * into ``out`` when it is given and large enough (reused: no fresh pages to fault).
 * A tile of records at a time, every field of it: the tile (some 17 KiB) stays in the L1
 * cache for the fields' 35 strided passes, not a pass per field over the whole batch
 * (1.3 MB of records). With the loops below kept scalar, the copy went from a quarter of
 * a scan to under a tenth (v100_training_large: the scan 52 -> 43 ms). */
#define TILE 64

/* Not vectorized: GCC packs pairs of strided 8-byte loads into a 16-byte store through the
 * stack, and the 16-byte reload of two 8-byte stores cannot be forwarded (a stall on each
 * pair: 85% of the copy's time). Plain 8-byte moves are several times faster. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void transpose(char *cols, const Rec *recs, Py_ssize_t n) {
    /* The padding's share of the output is no column: zeroed, so no stale memory leaks out. */
    memset(cols + (size_t)n * offsetof(Rec, pad), 0, (size_t)n * sizeof(((Rec *)0)->pad));
    size_t rows = n > 0 ? (size_t)n : 0;
    for (size_t lo = 0; lo < rows; lo += TILE) {
        size_t hi = lo + TILE < rows ? lo + TILE : rows;
        for (size_t f = 0; f < N_FIELDS; f++) {
            size_t off = FIELD_LAYOUT[f].offset, size = FIELD_LAYOUT[f].size;
            char *dst = cols + rows * off;
            const char *src = (const char *)recs + off;
            switch (size) {
            case 8:
                for (size_t i = lo; i < hi; i++) memcpy(dst + 8 * i, src + i * sizeof(Rec), 8);
                break;
            case 4:
                for (size_t i = lo; i < hi; i++) memcpy(dst + 4 * i, src + i * sizeof(Rec), 4);
                break;
            case 1:
                for (size_t i = lo; i < hi; i++) dst[i] = src[i * sizeof(Rec)];
                break;
            default:
                for (size_t i = lo; i < hi; i++)
                    memcpy(dst + size * i, src + i * sizeof(Rec), size);
            }
        }
    }
}

PyDoc_STRVAR(scan_doc,
"scan(data, out=None, body=False) -> (n, columns) | None\n\n"
"Read ``data``, the bytes of one JSON array of trace events (with ``body``, the array's\n"
"elements without its brackets: the loader's batches, uncopied), into one column per field of\n"
"FIELDS (field f's n values from byte n * offset), written into ``out`` (a writable\n"
"buffer, returned) when it holds them, else into new bytes. None when the batch is not\n"
"one the fast path reproduces exactly; the caller then decodes it with msgspec. New\n"
"token texts are appended to ``tokens``.");

static PyObject *Scanner_scan(Scanner *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"data", "out", "body", NULL};
    PyObject *arg, *out_arg = Py_None;
    int body = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Op:scan", kwlist, &arg, &out_arg, &body))
        return NULL;
    Py_buffer view;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.scan is already running in another thread");
        return NULL;
    }
    if (self->tokens == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.__init__ was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    /* The output memory is taken before the GIL is released: the columns are written
     * there without it too (the transpose is a fifth of a scan; another thread runs
     * meanwhile, e.g. the imports ``attnprof analyze`` overlaps with loading). */
    Py_buffer out_view;
    int have_out = 0;
    if (out_arg != Py_None) {
        if (PyObject_GetBuffer(out_arg, &out_view, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        have_out = 1;
    }
    self->busy = 1;
    const char *p = view.buf, *end = p + view.len;
    Rec *recs = self->recs;
    Py_ssize_t n = 0, cap = self->recs_cap;
    Ctx c = {self, end, 0};
    int ok = 0, in_out = 0;
    Py_ssize_t need = 0;
    Py_BEGIN_ALLOW_THREADS
    p = ws(p, end);
    if (body || (p < end && *p == '[')) {
        /* An array, or with ``body`` its elements alone: "event, event" to the very end. */
        if (!body) p = ws(p + 1, end);
        if (!body && p < end && *p == ']') {
            ok = 1;
            p++;
        }
        while (!ok && p) {
            if (n == cap) {
                Py_ssize_t ncap = cap ? cap * 2 : 1024;
                Rec *grown = realloc(recs, (size_t)ncap * sizeof(Rec));
                if (!grown) {
                    c.oom = 1;
                    break;
                }
                self->recs = recs = grown;
                self->recs_cap = cap = ncap;
            }
            p = event(&c, p, &recs[n]);
            if (!p) break;
            n++;
            p = ws(p, end);
            if (p >= end) {
                ok = body;
                break;
            }
            if (!body && *p == ']') {
                ok = 1;
                p++;
            } else if (*p == ',') {
                p = ws(p + 1, end);
            } else {
                break;
            }
        }
        if (ok) ok = ws(p, end) == end; /* trailing text: msgspec finds the array's end */
    }
    need = n * (Py_ssize_t)sizeof(Rec);
    in_out = ok && have_out && out_view.len >= need;
    if (in_out) transpose(out_view.buf, recs, n);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&view);
    if (have_out) PyBuffer_Release(&out_view); /* the caller keeps ``out`` alive meanwhile */
    if (c.oom) return PyErr_NoMemory();
    if (publish(self) < 0) return NULL;
    if (!ok) Py_RETURN_NONE;
    if (in_out) return Py_BuildValue("(nO)", n, out_arg);
    /* No ``out``, or one too small for this batch: new bytes. */
    PyObject *target = PyBytes_FromStringAndSize(NULL, need);
    if (!target) return NULL;
    transpose(PyBytes_AS_STRING(target), recs, n);
    return Py_BuildValue("(nN)", n, target);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Scanner_scan, METH_VARARGS | METH_KEYWORDS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static PyObject *Scanner_get_tokens(Scanner *self, void *closure) {
    (void)closure;
    if (self->tokens == NULL) { /* Scanner.__new__ without __init__ */
        PyErr_SetString(PyExc_RuntimeError, "Scanner.__init__ was not called");
        return NULL;
    }
    return Py_NewRef(self->tokens);
}

static PyGetSetDef Scanner_getset[] = {
    {"tokens", (getter)Scanner_get_tokens, NULL,
     "list[bytes]: each token id's JSON text (the scanner's own list: read, never change it)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "attnprof.trace._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reads batches of trace events into records; interns tokens across batches.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

/* FIELDS: (name, offset, numpy type) of each record field, from FIELD_LAYOUT. */
static PyObject *fields(void) {
    PyObject *tuple = PyTuple_New((Py_ssize_t)N_FIELDS);
    if (!tuple) return NULL;
    for (size_t i = 0; i < N_FIELDS; i++) {
        PyObject *item = Py_BuildValue("(sns)", FIELD_LAYOUT[i].name,
                                       (Py_ssize_t)FIELD_LAYOUT[i].offset, FIELD_LAYOUT[i].dtype);
        if (!item) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, item);
    }
    return tuple;
}

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "The trace loader's fast path: JSON trace events to columns (see scan.py).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&scan_module);
    if (!m) return NULL;
    PyObject *f = fields();
    if (!f || PyModule_AddObject(m, "FIELDS", f) < 0) {
        Py_XDECREF(f); /* AddObject steals the reference only when it succeeds */
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "RECORD_SIZE", (long)sizeof(Rec)) < 0 ||
        PyModule_AddIntConstant(m, "F_TS_INT", F_TS_INT) < 0 ||
        PyModule_AddIntConstant(m, "F_BLOCK", F_BLOCK) < 0 ||
        PyModule_AddIntConstant(m, "F_ALLOC", F_ALLOC) < 0 ||
        PyModule_AddIntConstant(m, "F_COPY", F_COPY) < 0 ||
        PyModule_AddIntConstant(m, "F_TOTAL", F_TOTAL) < 0 ||
        PyModule_AddIntConstant(m, "F_SORT", F_SORT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
