/* The approximate counter in one pass over the code points: the same statistics as
 * ``approximate_features.text_parts`` and ``safe_parts``, and the same counts as ``ApproximateCounter.py_count``
 * and ``py_safe_count`` (tests/approximate/test_accelerator.py compares them), which make several passes over the
 * UTF-8 and UTF-16 encodings and cost a few microseconds of fixed Python overhead per message; here a chat message
 * costs well under one. ``text_parts`` and ``safe_parts`` are exported for that comparison; the counter uses
 * ``Model``.
 *
 * Every table comes from Python through ``configure`` (approximate_features.py holds the definitions), so this
 * file holds the algorithm only: per code point, its class (by its UTF-8 lead byte), its script code (by its
 * UTF-16 high byte) and the ranges split off or counted within its block.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define MAX_RULES 64
#define MAX_SLOTS 64

typedef struct {
    Py_UCS4 lo, hi;
    int slot;
} Rule;

typedef struct {
    int feature;    /* index in FEATURES of the counted characters */
    int code;       /* parent script code (splits) */
    int trigger;    /* index in FEATURES whose presence emits this count (subsets), -1 for splits */
} Slot;

static int configured = 0, safe_configured = 0;
static unsigned char flag_of_lead[256];   /* bit 1: letter-like, bit 2: space (a lead byte stands for its character) */
static unsigned char class_of_lead[256];  /* CLASS_TABLE: 'a' ASCII letter, '0' digit, ... */
static unsigned char case_of_byte[256];   /* 'l' lower, 'u' upper, 'x' anything else */
static unsigned char code_of_high[256];   /* script code of a UTF-16 high byte; 0 for none */
static unsigned char word_code[256];      /* whether a script code's characters are letter-like */
static int feature_of_code[256];
static int latin1_feature;
static long long long_run, long_word;
/* Rules per script code: count code points in [lo, hi] into a slot. */
static Rule rules[MAX_RULES];
static int rule_start[257];
/* The same rules for the BMP as a table: slot + 1 of each code point, 0 for none (a table read per character of a
 * block with rules, instead of a range test per rule). */
static unsigned char slot_of_bmp[0x10000];
static Slot slots[MAX_SLOTS];
static int n_slots;
/* Whether each code point of the BMP is of a group counted in vocabulary pieces (SCRIPT_PIECE) or a Latin letter
 * (LATIN_PIECE, approximate_pieces.LATIN_RANGES), and the feature of the scripts' pieces (the number of runs cut is
 * the next feature, and Latin words' pieces the one after). */
enum { SCRIPT_PIECE = 1, LATIN_PIECE = 2 };
static unsigned char piece_of_bmp[0x10000];
static int pieces_feature;

static int
read_table(PyObject *obj, unsigned char *out, const char *what)
{
    if (!PyBytes_Check(obj) || PyBytes_GET_SIZE(obj) != 256) {
        PyErr_Format(PyExc_TypeError, "configure: %s must be 256 bytes", what);
        return -1;
    }
    memcpy(out, PyBytes_AS_STRING(obj), 256);
    return 0;
}

/* Marks the code points of ``ranges`` ((lo, hi), ...; at least ``lowest``, in the BMP, off surrogates) with ``flag``
 * in piece_of_bmp, where no other flag is. */
static int
mark_pieces(PyObject *ranges, unsigned int lowest, unsigned char flag)
{
    PyObject *seq = PySequence_Fast(ranges, "configure: piece ranges must be a sequence");
    if (!seq)
        return -1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        unsigned int lo, hi;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, j), "II", &lo, &hi) || lo < lowest || hi > 0xFFFF
            || hi < lo || (hi >= 0xD800 && lo < 0xE000)) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "configure: piece ranges must be in U+%04X-FFFF, off surrogates",
                             lowest);
            return -1;
        }
        for (unsigned int cp = lo; cp <= hi; cp++) {
            if (piece_of_bmp[cp] & ~flag) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "configure: Latin and script piece ranges overlap");
                return -1;
            }
            piece_of_bmp[cp] |= flag;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* configure(flag_of_lead, class_of_lead, case_of_byte, code_of_high, word_codes, feature_of_code, latin1_feature,
 *           long_run, long_word, splits, subsets, piece_ranges, pieces_feature, latin_ranges)
 * splits: ((code, feature, ((lo, hi), ...)), ...) in the order they are taken off their block;
 * subsets: ((trigger_feature, code, feature, ((lo, hi), ...)), ...) in the order they are reported;
 * piece_ranges: ((lo, hi), ...), the BMP code points counted in vocabulary pieces; latin_ranges: the Latin letters,
 * whose words Model cuts into its Latin pieces (cut_latin). */
static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *flags, *classes, *cases, *codes, *words, *features, *splits, *subsets, *piece_ranges, *latin_ranges;
    int latin1, piece_feature;
    long long run, word;
    if (!PyArg_ParseTuple(args, "OOOOOOiLLOOOiO", &flags, &classes, &cases, &codes, &words, &features, &latin1,
                          &run, &word, &splits, &subsets, &piece_ranges, &piece_feature, &latin_ranges))
        return NULL;
    /* Configured at import, and again whenever the package is imported again in the same process (importlib.reload,
     * a test runner or IPython's autoreload dropping it from sys.modules: this module's state outlives that). The
     * tables are rebuilt from scratch, so a call always leaves exactly its own configuration; counting waits for a
     * call that succeeds (the GIL is held throughout, so no count sees half a table). configure_safe must follow. */
    configured = 0;
    safe_configured = 0;
    if (!PyTuple_Check(features) || PyTuple_GET_SIZE(features) != 256) {
        PyErr_SetString(PyExc_TypeError, "configure: feature_of_code must be a tuple of 256 ints");
        return NULL;
    }
    if (read_table(flags, flag_of_lead, "flag_of_lead") || read_table(classes, class_of_lead, "class_of_lead")
        || read_table(cases, case_of_byte, "case_of_byte") || read_table(codes, code_of_high, "code_of_high")
        || read_table(words, word_code, "word_codes"))
        return NULL;
    for (int i = 0; i < 256; i++) {
        feature_of_code[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(features, i));
        if (PyErr_Occurred())
            return NULL;
    }
    /* Every code a code point can have (UTF-16 high bytes 0x01-0xDB, the high surrogates standing for astral
     * characters, and 0xE0-0xFF) names a feature. */
    for (int high = 1; high < 256; high++)
        if ((high < 0xDC || high >= 0xE0) && feature_of_code[code_of_high[high]] < 0) {
            PyErr_Format(PyExc_ValueError, "configure: UTF-16 high byte 0x%02X has no feature", high);
            return NULL;
        }
    latin1_feature = latin1;
    long_run = run;
    long_word = word;
    /* Rules grouped by code: collect (code, rule) pairs, then lay them out by code. */
    Rule pending[MAX_RULES];
    int pending_code[MAX_RULES];
    int n_rules = 0;
    n_slots = 0;
    PyObject *lists[2] = {splits, subsets};
    for (int kind = 0; kind < 2; kind++) {
        PyObject *seq = PySequence_Fast(lists[kind], "configure: splits and subsets must be sequences");
        if (!seq)
            return NULL;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *entry = PySequence_Fast_GET_ITEM(seq, i), *ranges;
            int trigger = -1, code, feature;
            int ok = kind == 0 ? PyArg_ParseTuple(entry, "iiO", &code, &feature, &ranges)
                               : PyArg_ParseTuple(entry, "iiiO", &trigger, &code, &feature, &ranges);
            if (!ok || code < 0 || code > 255 || n_slots >= MAX_SLOTS) {
                Py_DECREF(seq);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "configure: bad split or subset");
                return NULL;
            }
            slots[n_slots] = (Slot){feature, code, trigger};
            PyObject *rseq = PySequence_Fast(ranges, "configure: ranges must be a sequence");
            if (!rseq) {
                Py_DECREF(seq);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(rseq); j++) {
                unsigned int lo, hi;
                if (n_rules >= MAX_RULES || !PyArg_ParseTuple(PySequence_Fast_GET_ITEM(rseq, j), "II", &lo, &hi)) {
                    Py_DECREF(rseq);
                    Py_DECREF(seq);
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_ValueError, "configure: too many ranges");
                    return NULL;
                }
                pending[n_rules] = (Rule){lo, hi, n_slots};
                pending_code[n_rules++] = code;
            }
            Py_DECREF(rseq);
            n_slots++;
        }
        Py_DECREF(seq);
    }
    int k = 0;
    for (int code = 0; code < 256; code++) {
        rule_start[code] = k;
        for (int i = 0; i < n_rules; i++)
            if (pending_code[i] == code)
                rules[k++] = pending[i];
    }
    rule_start[256] = k;
    memset(slot_of_bmp, 0, sizeof(slot_of_bmp));
    for (int i = 0; i < k; i++)
        for (Py_UCS4 cp = rules[i].lo; cp <= rules[i].hi && cp < 0x10000; cp++) {
            if (slot_of_bmp[cp]) {
                PyErr_SetString(PyExc_ValueError, "configure: overlapping ranges");
                return NULL;
            }
            slot_of_bmp[cp] = (unsigned char)(rules[i].slot + 1);
        }
    memset(piece_of_bmp, 0, sizeof(piece_of_bmp));
    if (mark_pieces(piece_ranges, 0x100, SCRIPT_PIECE) || mark_pieces(latin_ranges, 0, LATIN_PIECE))
        return NULL;
    pieces_feature = piece_feature;
    configured = 1;
    Py_RETURN_NONE;
}

typedef struct {
    /* text_parts */
    Py_ssize_t digits, non_digit, word_like, word_starts, spaces, space_runs, newlines, n_bytes, latin1;
    Py_ssize_t code_count[256];
    unsigned char order[256];
    int n_order;
    Py_ssize_t slot_count[MAX_SLOTS];
    Py_ssize_t piece_chars;  /* code points counted in vocabulary pieces */
    /* safe_features */
    Py_ssize_t digit_letter, letter_digit, case_changes, long_runs, long_words;
} Stats;

/* One pass over the code points of a string of one ``kind`` (specialised by the compiler for each: the counters
 * are locals, so that they stay in registers, and written to ``st`` at the end). */
static inline int
scan_kind(const int kind, const void *data, Py_ssize_t length, Stats *st, const int safe)
{
    Py_ssize_t digits = 0, word_like = 0, word_starts = 0, spaces = 0, space_runs = 0, newlines = 0, n_bytes = 0;
    Py_ssize_t latin1 = 0, digit_letter = 0, letter_digit = 0, case_changes = 0, long_runs = 0, long_words = 0;
    Py_ssize_t piece_chars = 0;
    int prev_w = 0, prev_s = 0, prev_doubled = 0;
    /* safe mode: the previous code point's class and case byte, the current runs of ASCII letters and of
     * letter-like code points (a digit breaks both) */
    unsigned char prev_class = 0, prev_case = 0;
    long long letter_run = 0, word_run = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 cp = PyUnicode_READ(kind, data, i);
        unsigned char lead;
        if (cp < 0x80) {
            lead = (unsigned char)cp;
            n_bytes += 1;
        }
        else if (cp < 0x800) {
            lead = (unsigned char)(0xC0 | (cp >> 6));
            n_bytes += 2;
        }
        else if (cp < 0x10000) {
            if (cp >= 0xD800 && cp < 0xE000)
                return -1;
            lead = (unsigned char)(0xE0 | (cp >> 12));
            n_bytes += 3;
        }
        else {
            lead = (unsigned char)(0xF0 | (cp >> 18));
            n_bytes += 4;
        }
        const unsigned char cls = class_of_lead[lead];
        const int flag = flag_of_lead[lead];
        if (safe) {
            const unsigned char cs = cp < 0x80 ? case_of_byte[cp] : 'x';
            case_changes += prev_case == 'l' && cs == 'u';
            prev_case = cs;
            digit_letter += prev_class == '0' && cls == 'a';
            letter_digit += prev_class == 'a' && cls == '0';
            prev_class = cls;
            letter_run = cls == 'a' ? letter_run + 1 : 0;
            if (letter_run == long_run) {
                long_runs++;
                letter_run = 0;
            }
            word_run = flag & 1 ? word_run + 1 : 0;
            if (word_run == long_word) {
                long_words++;
                word_run = 0;
            }
        }
        if (cls == '0') {  /* digits are deleted from the flag string: they neither start nor break a run */
            digits++;
            continue;
        }
        const int w = flag & 1, s = flag >> 1, doubled = s & prev_s;
        word_like += w;
        word_starts += w & !prev_w;
        spaces += s;
        space_runs += doubled & !prev_doubled;
        prev_w = w;
        prev_s = s;
        prev_doubled = doubled;
        if (cp < 0x80) {
            newlines += cp == '\n';
            continue;
        }
        if (cp < 0x100) {
            latin1++;
            continue;
        }
        const unsigned int high = cp < 0x10000 ? cp >> 8 : 0xD8 + ((cp - 0x10000) >> 18);
        const unsigned char code = code_of_high[high];
        if (!st->code_count[code]++)
            st->order[st->n_order++] = code;
        if (cp < 0x10000) {
            const int slot = slot_of_bmp[cp];
            if (slot)
                st->slot_count[slot - 1]++;
            piece_chars += piece_of_bmp[cp] & SCRIPT_PIECE;
        }
        else
            for (int r = rule_start[code]; r < rule_start[code + 1]; r++)
                if (rules[r].lo <= cp && cp <= rules[r].hi)
                    st->slot_count[rules[r].slot]++;
    }
    st->digits = digits;
    st->non_digit = length - digits;
    st->word_like = word_like;
    st->word_starts = word_starts;
    st->spaces = spaces;
    st->space_runs = space_runs;
    st->newlines = newlines;
    st->n_bytes = n_bytes;
    st->latin1 = latin1;
    st->digit_letter = digit_letter;
    st->letter_digit = letter_digit;
    st->case_changes = case_changes;
    st->long_runs = long_runs;
    st->long_words = long_words;
    st->piece_chars = piece_chars;
    return 0;
}

static int
scan(PyObject *text, Stats *st, int safe)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)  /* a string built by the legacy API (Python 3.10-3.11) */
        return -1;
#endif
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int rc;
    st->n_order = 0;
    memset(st->code_count, 0, sizeof(st->code_count));
    memset(st->slot_count, 0, sizeof(st->slot_count));
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        rc = safe ? scan_kind(PyUnicode_1BYTE_KIND, data, length, st, 1)
                  : scan_kind(PyUnicode_1BYTE_KIND, data, length, st, 0);
        break;
    case PyUnicode_2BYTE_KIND:
        rc = safe ? scan_kind(PyUnicode_2BYTE_KIND, data, length, st, 1)
                  : scan_kind(PyUnicode_2BYTE_KIND, data, length, st, 0);
        break;
    default:
        rc = safe ? scan_kind(PyUnicode_4BYTE_KIND, data, length, st, 1)
                  : scan_kind(PyUnicode_4BYTE_KIND, data, length, st, 0);
    }
    if (rc) {
        /* A lone surrogate: raise what str.encode raises. */
        PyObject *encoded = PyUnicode_AsUTF8String(text);
        Py_XDECREF(encoded);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "surrogate in text");
    }
    return rc;
}

/* The sparse statistics of a scanned text, as approximate_features.text_parts gives them: the seven ASCII counts, and the script
 * parts as (feature, count) pairs in the same order. */
typedef struct {
    Py_ssize_t counts[7];
    int feature[2 * MAX_SLOTS + 260];  /* splits, Latin-1, codes, subsets, pieces, their words, Latin pieces */
    Py_ssize_t n[2 * MAX_SLOTS + 260];
    int n_parts;
} Parts;

static void
collect_parts(const Stats *st, Parts *out)
{
    int k = 0;
    Py_ssize_t non_ascii = st->latin1, word_scripts = st->latin1;
    if (st->latin1) {
        out->feature[k] = latin1_feature;
        out->n[k++] = st->latin1;
    }
    for (int i = 0; i < st->n_order; i++) {
        int code = st->order[i];
        Py_ssize_t n = st->code_count[code];
        non_ascii += n;
        if (word_code[code])
            word_scripts += n;
        for (int s = 0; s < n_slots && n; s++) {
            if (slots[s].trigger >= 0 || slots[s].code != code || !st->slot_count[s])
                continue;
            out->feature[k] = slots[s].feature;
            out->n[k++] = st->slot_count[s];
            n -= st->slot_count[s];
        }
        out->feature[k] = feature_of_code[code];
        out->n[k++] = n;
    }
    /* Counts within a block, reported after the parts for each part that triggers them (in parts' order). */
    int n_parts = k;
    for (int p = 0; p < n_parts; p++)
        for (int s = 0; s < n_slots; s++)
            if (slots[s].trigger == out->feature[p]) {
                out->feature[k] = slots[s].feature;
                out->n[k++] = st->slot_count[s];
            }
    out->n_parts = k;
    Py_ssize_t *c = out->counts;
    c[0] = st->word_like - word_scripts;
    c[1] = st->digits;
    c[2] = st->word_starts;
    c[3] = st->spaces;
    c[4] = st->space_runs;
    c[5] = st->newlines;
    c[6] = st->non_digit - st->word_like - st->spaces - st->newlines - (non_ascii - word_scripts);
}

/* A tuple (or list) of ``n`` ints. */
static PyObject *
int_sequence(const Py_ssize_t *values, int n, int list)
{
    PyObject *seq = list ? PyList_New(n) : PyTuple_New(n);
    if (!seq)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *value = PyLong_FromSsize_t(values[i]);
        if (!value) {
            Py_DECREF(seq);
            return NULL;
        }
        if (list)
            PyList_SET_ITEM(seq, i, value);
        else
            PyTuple_SET_ITEM(seq, i, value);
    }
    return seq;
}

/* (counts, parts, n_bytes) as approximate_features.text_parts gives them. */
static PyObject *
build_parts(const Stats *st)
{
    Parts parts;
    collect_parts(st, &parts);
    PyObject *list = PyList_New(parts.n_parts);
    if (!list)
        return NULL;
    for (int i = 0; i < parts.n_parts; i++) {
        PyObject *pair = Py_BuildValue("(in)", parts.feature[i], parts.n[i]);
        if (!pair) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    PyObject *counts = int_sequence(parts.counts, 7, 0), *n_bytes = PyLong_FromSsize_t(st->n_bytes);
    PyObject *result = counts && n_bytes ? PyTuple_Pack(3, counts, list, n_bytes) : NULL;
    Py_XDECREF(counts);
    Py_XDECREF(n_bytes);
    Py_DECREF(list);
    return result;
}

/* Safe mode's statistics (approximate_features.safe_features): letter-digit boundaries, case changes, long runs, a constant. */
#define N_EXTRA 6
static void
extras(const Stats *st, Py_ssize_t *out)
{
    out[0] = st->digit_letter;
    out[1] = st->letter_digit;
    out[2] = st->case_changes;
    out[3] = st->long_runs;
    out[4] = st->long_words;
    out[5] = 1;
}

static int
scanned(PyObject *arg, Stats *st, int safe)
{
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "speedups.configure() was not called");
        return -1;
    }
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected a str, got %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    return scan(arg, st, safe);
}

static PyObject *
text_parts(PyObject *self, PyObject *arg)
{
    Stats st;
    return scanned(arg, &st, 0) ? NULL : build_parts(&st);
}

static PyObject *
safe_parts(PyObject *self, PyObject *arg)
{
    Stats st;
    if (scanned(arg, &st, 1))
        return NULL;
    PyObject *result = build_parts(&st);
    if (!result)
        return NULL;
    Py_ssize_t values[N_EXTRA];
    extras(&st, values);
    PyObject *extra = int_sequence(values, N_EXTRA, 1);
    if (!extra) {
        Py_DECREF(result);
        return NULL;
    }
    PyObject *full = PyTuple_Pack(4, PyTuple_GET_ITEM(result, 0), PyTuple_GET_ITEM(result, 1),
                                  PyTuple_GET_ITEM(result, 2), extra);
    Py_DECREF(extra);
    Py_DECREF(result);
    return full;
}


/* ---- The counter's arithmetic (ApproximateCounter's py_count and py_safe_count, in the same order of floating-point
 * operations, so that both give the same integers; built with -ffp-contract=off: no fused multiply-add). ---- */

/* Safe mode's families, in approximate_features.FAMILIES' order (checked by configure_safe). */
enum { ENGLISH, ASCII_SYMBOLIC, ASCII_IDS, ASCII, LATIN, CHINESE, JAPANESE, KOREAN, CYRILLIC, CYRILLIC_EXT, OTHER,
       N_FAMILIES };
static const char *family_names[N_FAMILIES] = {"english", "ascii_symbolic", "ascii_ids", "ascii", "latin", "chinese",
                                              "japanese", "korean", "cyrillic", "cyrillic_ext", "other"};
/* Feature indices safe_family reads, in this order. */
enum { F_LETTERS, F_LATIN1, F_LATIN_EXT, F_VIETNAMESE, F_KANA, F_KATAKANA, F_HAN, F_HANGUL, F_CYRILLIC,
       F_CYRILLIC_EXT, F_ARMENIAN, F_COMBINING, F_RARE, F_PUNCT, F_DIGITS, F_WORDS, N_ROLES };
#define MAX_FEATURES 256
static int n_features;
static int role[N_ROLES];
static int other_script[MAX_FEATURES], n_other_scripts;
static int system_of_feature[MAX_FEATURES], latin_system, n_systems;
static Py_ssize_t short_text, mixed_short_text;
static PyObject *the_word;  /* " the " */

/* configure_safe(n_features, families, roles, other_scripts, system_of_feature, latin_system, short_text,
 *                mixed_short_text, the_word) */
static PyObject *
configure_safe(PyObject *self, PyObject *args)
{
    PyObject *families, *roles, *others, *systems, *the;
    if (!PyArg_ParseTuple(args, "iOOOOinnU", &n_features, &families, &roles, &others, &systems, &latin_system,
                          &short_text, &mixed_short_text, &the))
        return NULL;
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "configure_safe: call it after configure()");
        return NULL;
    }
    safe_configured = 0;
    if (n_features <= 7 || n_features > MAX_FEATURES || !PyTuple_Check(families)
        || PyTuple_GET_SIZE(families) != N_FAMILIES || !PyTuple_Check(roles) || PyTuple_GET_SIZE(roles) != N_ROLES
        || !PyTuple_Check(others) || PyTuple_GET_SIZE(others) > MAX_FEATURES || !PyTuple_Check(systems)
        || PyTuple_GET_SIZE(systems) != n_features) {
        PyErr_SetString(PyExc_ValueError, "configure_safe: bad arguments");
        return NULL;
    }
    for (int i = 0; i < N_FAMILIES; i++) {
        PyObject *name = PyTuple_GET_ITEM(families, i);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, family_names[i])) {
            PyErr_Format(PyExc_ValueError, "configure_safe: family %d must be %s", i, family_names[i]);
            return NULL;
        }
    }
    n_systems = 0;
    for (int i = 0; i < N_ROLES; i++)
        role[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(roles, i));
    n_other_scripts = (int)PyTuple_GET_SIZE(others);
    for (int i = 0; i < n_other_scripts; i++)
        other_script[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(others, i));
    for (int i = 0; i < n_features; i++) {
        system_of_feature[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(systems, i));
        if (system_of_feature[i] >= n_systems)
            n_systems = system_of_feature[i] + 1;
    }
    if (PyErr_Occurred())
        return NULL;
    /* The features configure() counts into must be within the models' arrays. */
    int highest = latin1_feature > pieces_feature + 1 ? latin1_feature : pieces_feature + 1;
    int lowest = latin1_feature < pieces_feature ? latin1_feature : pieces_feature;
    for (int code = 0; code < 256; code++)
        if (feature_of_code[code] > highest)
            highest = feature_of_code[code];
    for (int i = 0; i < n_slots + N_ROLES + n_other_scripts; i++) {
        int f = i < n_slots ? slots[i].feature : i < n_slots + N_ROLES ? role[i - n_slots]
                                                                       : other_script[i - n_slots - N_ROLES];
        highest = f > highest ? f : highest;
        lowest = f < lowest ? f : lowest;
    }
    if (highest >= n_features || lowest < 0) {
        PyErr_Format(PyExc_ValueError, "configure_safe: features must be in 0-%d", n_features - 1);
        return NULL;
    }
    if (latin_system < 0 || latin_system >= 64 || n_systems > 64) {
        PyErr_SetString(PyExc_ValueError, "configure_safe: at most 64 writing systems");
        return NULL;
    }
    if (!PyUnicode_GET_LENGTH(the)) {
        PyErr_SetString(PyExc_ValueError, "configure_safe: the word must not be empty");
        return NULL;
    }
    Py_INCREF(the);
    Py_XSETREF(the_word, the);
    safe_configured = 1;
    Py_RETURN_NONE;
}

typedef struct {
    double *weights;  /* n_features, then N_EXTRA */
    double relative, spread;
} Bound;

/* ---- Vocabulary pieces (approximate_pieces.Pieces) ---- */

#define MAX_PIECE 64

/* A target's pieces as a trie (every prefix of a piece is a node) in an open-addressing hash table keyed by
 * (parent node, code point): a cut grows a match one code point at a time while it is a prefix of some piece, one
 * probe each, and keeps the longest that is a piece (the same cut as Pieces.count's). */
typedef struct {
    unsigned int parent;  /* the parent node; 0 for the root (a node of one code point) */
    unsigned int node;    /* 0 for an empty slot */
    unsigned int cp;
    unsigned int flags;   /* PIECE: the node is a piece; LONGER: it is the prefix of a longer piece */
} PieceSlot;

enum { PIECE = 1, LONGER = 2 };

typedef struct {
    unsigned char *first;  /* the flags of each code point of the BMP as a node of one code point */
    unsigned int *first_node;  /* and that node (the probes of the trie's first level, from a small table) */
    PieceSlot *slot;
    size_t mask;
    int shift;             /* 64 - log2(slots): a key's slot is the top bits of its mixed hash */
    unsigned int n;        /* nodes */
    int longest;
} PieceTable;

static void
pieces_free(PieceTable *t)
{
    PyMem_Free(t->first);
    PyMem_Free(t->first_node);
    PyMem_Free(t->slot);
    memset(t, 0, sizeof(*t));
}

/* The slot of the child of ``parent`` by ``cp``, or the empty slot where it would go. */
static inline PieceSlot *
find_slot(const PieceTable *t, unsigned int parent, Py_UCS4 cp)
{
    unsigned long long h = (((unsigned long long)parent << 21) ^ cp) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = (size_t)(h >> t->shift);; i = (i + 1) & t->mask) {
        PieceSlot *e = &t->slot[i];
        if (!e->node || (e->parent == parent && e->cp == cp))
            return e;
    }
}

/* Allocates ``1 << bits`` slots and places the nodes of ``old`` (``old_size`` slots) in them. */
static int
resize(PieceTable *t, int bits, PieceSlot *old, size_t old_size)
{
    PieceSlot *slots = PyMem_Calloc((size_t)1 << bits, sizeof(PieceSlot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    t->slot = slots;
    t->mask = ((size_t)1 << bits) - 1;
    t->shift = 64 - bits;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].node)
            *find_slot(t, old[i].parent, old[i].cp) = old[i];
    PyMem_Free(old);
    return 0;
}

/* The table of a sequence of str (the pieces of approximate_pieces.Pieces). */
static int
pieces_build(PieceTable *t, PyObject *pieces)
{
    PyObject *seq = PySequence_Fast(pieces, "Model pieces must be a sequence of str");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *piece = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(piece) || PyUnicode_GET_LENGTH(piece) < 1 || PyUnicode_GET_LENGTH(piece) > MAX_PIECE) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "Model pieces: each must be a str of 1 to %d characters", MAX_PIECE);
            return -1;
        }
    }
    int bits = 10;
    t->first = PyMem_Calloc(0x10000, 1);
    t->first_node = PyMem_Calloc(0x10000, sizeof(unsigned int));
    if (!t->first || !t->first_node || resize(t, bits, NULL, 0)) {
        Py_DECREF(seq);
        pieces_free(t);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *piece = PySequence_Fast_GET_ITEM(seq, i);
        int len = (int)PyUnicode_GET_LENGTH(piece), kind = PyUnicode_KIND(piece);
        const void *data = PyUnicode_DATA(piece);
        unsigned int node = 0;
        if (len > t->longest)
            t->longest = len;
        for (int j = 0; j < len; j++) {
            Py_UCS4 cp = PyUnicode_READ(kind, data, j);
            PieceSlot *e = find_slot(t, node, cp);
            if (!e->node) {
                /* Half the slots stay free: the probes end at an empty one, soon. */
                if ((size_t)(t->n + 1) * 2 > t->mask + 1) {
                    if (bits >= 31 || resize(t, ++bits, t->slot, t->mask + 1)) {
                        Py_DECREF(seq);
                        pieces_free(t);
                        if (!PyErr_Occurred())
                            PyErr_SetString(PyExc_ValueError, "Model pieces: too many");
                        return -1;
                    }
                    e = find_slot(t, node, cp);
                }
                *e = (PieceSlot){node, ++t->n, cp, 0};
            }
            e->flags |= j + 1 == len ? PIECE : LONGER;
            if (j == 0 && cp < 0x10000) {
                t->first[cp] = (unsigned char)e->flags;
                t->first_node[cp] = e->node;
            }
            node = e->node;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* The length of the longest piece at code point ``pos`` (at most ``limit`` long), 0 for none. */
static inline int
longest_piece(const PieceTable *t, int kind, const void *data, Py_ssize_t pos, int limit)
{
    const Py_UCS4 cp = PyUnicode_READ(kind, data, pos);
    if (cp >= 0x10000)
        return 0;
    int best = t->first[cp] & PIECE ? 1 : 0;
    if (!(t->first[cp] & LONGER))
        return best;
    unsigned int node = t->first_node[cp];
    for (int len = 2; len <= limit; len++) {
        const PieceSlot *e = find_slot(t, node, PyUnicode_READ(kind, data, pos + len - 1));
        if (!e->node)
            break;
        if (e->flags & PIECE)
            best = len;
        if (!(e->flags & LONGER))
            break;
        node = e->node;
    }
    return best;
}

/* The cut of recent runs (with the space before them) of up to RUN_CACHED code points, by a hash of their code
 * points, so that the words prose repeats are cut once (a probe of a small table instead of a trie walk per piece):
 * RUN_CACHE entries for the scripts' runs, LATIN_RUN_CACHE for Latin words (a Latin text has more distinct words).
 * Runs are of BMP code points (piece_of_bmp's), so an entry holds them in 16 bits: 32 bytes, half a cache line. */
#define RUN_CACHE 2048
#define LATIN_RUN_CACHE 16384
#define RUN_CACHED 15

typedef struct {
    Py_UCS2 chars[RUN_CACHED];
    unsigned char length;  /* 0 for an empty entry */
    unsigned char pieces;
} RunEntry;

/* Two entries per hash, in one cache line: the newer first, the older evicted (two words that share a hash both
 * stay). */
typedef struct {
    RunEntry *sets;  /* 2 * (mask + 1) entries, 64-byte aligned */
    void *memory;
    size_t mask;
} RunCache;

static int
run_cache_init(RunCache *c, size_t entries)
{
    if (!(c->memory = PyMem_Calloc(entries * sizeof(RunEntry) + 64, 1))) {
        PyErr_NoMemory();
        return -1;
    }
    c->sets = (RunEntry *)(((uintptr_t)c->memory + 63) & ~(uintptr_t)63);
    c->mask = entries / 2 - 1;
    return 0;
}

/* Whether ``e`` holds the ``size`` code points at ``start``. */
static inline int
run_is(const RunEntry *e, const int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    if (e->length != size)
        return 0;
    for (Py_ssize_t j = 0; j < size; j++)
        if (e->chars[j] != PyUnicode_READ(kind, data, start + j))
            return 0;
    return 1;
}

/* The pieces of the run at code points ``start`` to ``end`` (``start`` a space before the run if ``spaced``). */
static inline Py_ssize_t
cut_run(const PieceTable *t, int kind, const void *data, Py_ssize_t start, Py_ssize_t end, int spaced)
{
    Py_ssize_t n = 0, p = start;
    if (spaced) {
        int len = longest_piece(t, kind, data, start, end - start < t->longest ? (int)(end - start) : t->longest);
        if (len >= 2) {
            p = start + len;
            n++;
        }
        else
            p = start + 1;
    }
    while (p < end) {
        int len = longest_piece(t, kind, data, p, end - p < t->longest ? (int)(end - p) : t->longest);
        p += len ? len : 1;
        n++;
    }
    return n;
}

/* approximate_pieces.Pieces.count: each run of code points marked ``flag`` cut greedily into the longest pieces
 * that match (one code point where none does), the first holding the space before the run if one matches; the runs
 * in ``runs`` and their code points in ``chars``. ``cache`` remembers short runs' cuts. Specialised by the compiler
 * for each ``kind``, as scan_kind is. */
static inline Py_ssize_t
count_pieces_kind(const PieceTable *t, const RunCache *cache, unsigned char flag, const int kind, const void *data,
                  Py_ssize_t length, Py_ssize_t *runs, Py_ssize_t *chars)
{
    Py_ssize_t n = 0, i = 0, n_runs = 0, n_chars = 0;
    while (i < length) {
        Py_UCS4 cp = PyUnicode_READ(kind, data, i);
        if (cp >= 0x10000 || !(piece_of_bmp[cp] & flag)) {
            i++;
            continue;
        }
        /* The run's extent and the hash of its code points (with the space before it), in one pass. */
        const int spaced = i && PyUnicode_READ(kind, data, i - 1) == ' ';
        unsigned long long h = 0xCBF29CE484222325ULL;
        if (spaced)
            h = (h ^ ' ') * 0x100000001B3ULL;
        h = (h ^ cp) * 0x100000001B3ULL;
        Py_ssize_t end = i + 1;
        while (end < length && (cp = PyUnicode_READ(kind, data, end)) < 0x10000 && piece_of_bmp[cp] & flag) {
            h = (h ^ cp) * 0x100000001B3ULL;
            end++;
        }
        n_runs++;
        n_chars += end - i;
        const Py_ssize_t start = i - spaced, size = end - start;
        i = end;
        if (size > RUN_CACHED) {
            n += cut_run(t, kind, data, start, end, spaced);
            continue;
        }
        RunEntry *set = &cache->sets[2 * ((h ^ (h >> 32)) & cache->mask)];
        if (run_is(&set[0], kind, data, start, size))
            n += set[0].pieces;
        else if (run_is(&set[1], kind, data, start, size))
            n += set[1].pieces;
        else {
            set[1] = set[0];
            set[0].pieces = (unsigned char)cut_run(t, kind, data, start, end, spaced);
            set[0].length = (unsigned char)size;
            for (Py_ssize_t j = 0; j < size; j++)
                set[0].chars[j] = (Py_UCS2)PyUnicode_READ(kind, data, start + j);
            n += set[0].pieces;
        }
    }
    *runs = n_runs;
    *chars = n_chars;
    return n;
}

static Py_ssize_t
count_pieces(const PieceTable *t, const RunCache *cache, unsigned char flag, PyObject *text, Py_ssize_t *runs,
             Py_ssize_t *chars)
{
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return count_pieces_kind(t, cache, flag, PyUnicode_1BYTE_KIND, data, length, runs, chars);
    case PyUnicode_2BYTE_KIND:
        return count_pieces_kind(t, cache, flag, PyUnicode_2BYTE_KIND, data, length, runs, chars);
    default:
        return count_pieces_kind(t, cache, flag, PyUnicode_4BYTE_KIND, data, length, runs, chars);
    }
}

typedef struct {
    PyObject_HEAD
    double *weights, *floor;  /* the estimate's, per feature */
    double digit_floor, other_floor;
    int safe;
    Bound bounds[N_FAMILIES + 1];  /* per family, then the bound of text that is not language */
    PieceTable pieces;             /* the target's pieces; none (n == 0) leaves the statistic out */
    RunCache runs;                 /* the cut of recent runs (count_pieces), with the pieces */
    PieceTable latin;              /* the target's Latin pieces; none (n == 0) cuts no Latin word */
    RunCache latin_runs;           /* the cut of recent Latin words, with them */
    PyObject *latin_source;        /* what gives the Latin pieces, called at the first text to cut (ensure_latin) */
} Model;

static void
model_dealloc(Model *self)
{
    PyMem_Free(self->weights);
    PyMem_Free(self->floor);
    for (int i = 0; i <= N_FAMILIES; i++)
        PyMem_Free(self->bounds[i].weights);
    pieces_free(&self->pieces);
    PyMem_Free(self->runs.memory);
    pieces_free(&self->latin);
    PyMem_Free(self->latin_runs.memory);
    Py_XDECREF(self->latin_source);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ``n`` floats from a sequence, into a new array. */
static double *
doubles(PyObject *obj, Py_ssize_t n, const char *what)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values", what, n);
        return NULL;
    }
    double *out = PyMem_Malloc(n * sizeof(double));
    if (!out) {
        Py_DECREF(seq);
        return (double *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    if (PyErr_Occurred()) {
        PyMem_Free(out);
        return NULL;
    }
    return out;
}

/* Model(weights, floor, digit_floor, other_floor, bounds, pieces=None, latin=None): ``bounds`` is None (the
 * estimate only) or, per family and then for text that is not language, (weights per SAFE_FEATURES, relative,
 * spread); ``pieces`` the target's vocabulary pieces (approximate_pieces), or None to leave that statistic out;
 * ``latin`` its Latin pieces, or a callable that returns them (called at the first text to cut: most text is never
 * cut, and the table takes a tenth of a second to build), or None to cut no Latin word. */
static PyObject *
model_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *weights, *floor, *bounds, *pieces = Py_None, *latin = Py_None;
    double digit_floor, other_floor;
    if (!safe_configured) {
        PyErr_SetString(PyExc_RuntimeError, "speedups.configure_safe() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOddO|OO", &weights, &floor, &digit_floor, &other_floor, &bounds, &pieces, &latin))
        return NULL;
    Model *self = (Model *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->digit_floor = digit_floor;
    self->other_floor = other_floor;
    self->weights = doubles(weights, n_features, "Model weights");
    self->floor = self->weights ? doubles(floor, n_features, "Model floor") : NULL;
    if (!self->floor || (pieces != Py_None && pieces_build(&self->pieces, pieces)))
        goto fail;
    if (pieces != Py_None && run_cache_init(&self->runs, RUN_CACHE))
        goto fail;
    if (PyCallable_Check(latin))
        self->latin_source = Py_NewRef(latin);
    else if (latin != Py_None && (pieces_build(&self->latin, latin)
                                  || run_cache_init(&self->latin_runs, LATIN_RUN_CACHE)))
        goto fail;
    self->safe = bounds != Py_None;
    if (self->safe) {
        PyObject *seq = PySequence_Fast(bounds, "Model bounds");
        if (!seq)
            goto fail;
        if (PySequence_Fast_GET_SIZE(seq) != N_FAMILIES + 1) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "Model bounds: one per family and one for text that is not language");
            goto fail;
        }
        for (int i = 0; i <= N_FAMILIES; i++) {
            PyObject *w;
            Bound *b = &self->bounds[i];
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Odd", &w, &b->relative, &b->spread)
                || !(b->weights = doubles(w, n_features + N_EXTRA, "Model bound weights"))) {
                Py_DECREF(seq);
                goto fail;
            }
        }
        Py_DECREF(seq);
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* The statistics of a text, with its pieces last (approximate_features.text_parts given the Model's pieces). */
static int
model_scan(const Model *self, PyObject *text, Stats *st, Parts *parts, int safe)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "count_text expects a str, got %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
    if (scan(text, st, safe))
        return -1;
    collect_parts(st, parts);
    if (self->pieces.n && st->piece_chars) {
        int k = parts->n_parts;
        Py_ssize_t chars;
        parts->feature[k] = pieces_feature;
        parts->feature[k + 1] = pieces_feature + 1;
        parts->n[k] = count_pieces(&self->pieces, &self->runs, SCRIPT_PIECE, text, &parts->n[k + 1], &chars);
        parts->n_parts = k + 2;
    }
    return 0;
}

/* The dense features of parts (safe_family's and cut_latin's view). */
static void
dense_of(const Parts *p, Py_ssize_t *dense)
{
    memcpy(dense, p->counts, 7 * sizeof(Py_ssize_t));
    memset(dense + 7, 0, (n_features - 7) * sizeof(Py_ssize_t));
    for (int i = 0; i < p->n_parts; i++)
        dense[p->feature[i]] += p->n[i];
}

static int family_of(const Py_ssize_t *f, PyObject *text, Py_ssize_t boundaries);
static int has_the(PyObject *text, Py_ssize_t needed);

/* approximate_features.prose_among_symbols: 1, 0, or -1 on an error. */
static int
prose_among_symbols(const Py_ssize_t *f, PyObject *text)
{
    const Py_ssize_t latin = f[role[F_LETTERS]] + f[role[F_LATIN1]] + f[role[F_LATIN_EXT]] + f[role[F_VIETNAMESE]];
    const Py_ssize_t words = f[role[F_WORDS]], newlines = f[5];  /* the ASCII statistics' order: newlines sixth */
    if ((f[role[F_PUNCT]] + f[role[F_DIGITS]]) * 10 > latin * 4 || newlines * 20 > words)
        return 0;
    int english = has_the(text, (words + 59) / 60);
    return english < 0 ? -1 : !english;
}

/* approximate_features.cut_latin: the text's Latin words cut into the Model's Latin pieces if its family (``family``,
 * or from ``dense`` where it is -1 or ASCII_IDS, without letter-digit boundaries) is LATIN or ASCII, or
 * ASCII_SYMBOLIC where it reads as prose. 0, or -1 on an error. */
/* The Latin pieces' table, built from what ``latin_source`` gives if it is not built yet. 0, or -1 on an error. */
static int
ensure_latin(Model *self)
{
    if (self->latin_runs.memory || !self->latin_source)
        return 0;
    PyObject *pieces = PyObject_CallNoArgs(self->latin_source);
    if (!pieces)
        return -1;
    /* The call ran Python code, where another thread may have built the table. */
    if (!self->latin_runs.memory) {
        PieceTable table = {0};
        RunCache runs = {0};
        if (pieces_build(&table, pieces) || run_cache_init(&runs, LATIN_RUN_CACHE)) {
            pieces_free(&table);
            Py_DECREF(pieces);
            return -1;
        }
        self->latin = table;
        self->latin_runs = runs;
        Py_CLEAR(self->latin_source);
    }
    Py_DECREF(pieces);
    return 0;
}

static int
cut_latin(Model *self, PyObject *text, Parts *p, const Py_ssize_t *dense, int family)
{
    if (!self->latin.n && !self->latin_source)
        return 0;
    if (family < 0 || family == ASCII_IDS)
        family = family_of(dense, text, 0);
    if (family == ASCII_SYMBOLIC) {
        int prose = prose_among_symbols(dense, text);
        if (prose <= 0)
            return prose;
    }
    else if (family < 0)
        return -1;
    else if (family != LATIN && family != ASCII)
        return 0;
    if (ensure_latin(self))
        return -1;
    if (!self->latin.n)
        return 0;
    Py_ssize_t runs, chars;
    Py_ssize_t n = count_pieces(&self->latin, &self->latin_runs, LATIN_PIECE, text, &runs, &chars);
    const int ext = role[F_LATIN_EXT], viet = role[F_VIETNAMESE], comb = role[F_COMBINING];
    /* The runs' Latin-1 letters: what the runs hold besides the other groups, which are in the runs whole. */
    Py_ssize_t covered = chars - p->counts[0];
    for (int i = 0; i < p->n_parts; i++)
        if (p->feature[i] == ext || p->feature[i] == viet || p->feature[i] == comb)
            covered -= p->n[i];
    for (int i = 0; i < p->n_parts; i++) {
        if (p->feature[i] == ext || p->feature[i] == viet || p->feature[i] == comb)
            p->n[i] = 0;
        else if (p->feature[i] == role[F_LATIN1])
            p->n[i] -= covered;
    }
    p->feature[p->n_parts] = pieces_feature + 2;
    p->n[p->n_parts++] = n;
    p->counts[0] = 0;
    p->counts[2] = p->counts[2] > runs ? p->counts[2] - runs : 0;
    return 0;
}

/* The seven ASCII statistics' dot product, left to right. */
static double
ascii_dot(const double *w, const Py_ssize_t *counts)
{
    double total = 0.0;
    for (int i = 0; i < 7; i++)
        total += w[i] * (double)counts[i];
    return total;
}

/* ApproximateCounter.py_count: between the vocabulary's floor and the byte count. */
static PyObject *
model_estimate(Model *self, PyObject *text)
{
    Stats st;
    Parts p;
    if (model_scan(self, text, &st, &p, 0))
        return NULL;
    if (!st.n_bytes)
        return PyLong_FromLong(0);
    const Py_ssize_t *c = p.counts;
    /* The floor is of the text's characters, whether its words are cut or not. */
    double floor = ascii_dot(self->floor, c);
    for (int i = 0; i < p.n_parts; i++)
        floor += self->floor[p.feature[i]] * (double)p.n[i];
    Py_ssize_t dense[MAX_FEATURES];
    if (self->latin.n || self->latin_source) {
        dense_of(&p, dense);
        if (cut_latin(self, text, &p, dense, -1))
            return NULL;
    }
    double estimate = ascii_dot(self->weights, c);
    Py_ssize_t result;
    if (p.n_parts) {
        for (int i = 0; i < p.n_parts; i++)
            estimate += self->weights[p.feature[i]] * (double)p.n[i];
        Py_ssize_t low = (Py_ssize_t)ceil(floor), rounded = (Py_ssize_t)(estimate + 0.5);
        result = low > rounded ? low : rounded;
    }
    else {
        if (estimate < self->digit_floor * (double)c[1] + self->other_floor * (double)(st.n_bytes - c[1])) {
            double low = ceil(floor);
            if (low > estimate)
                estimate = low;
        }
        result = (Py_ssize_t)(estimate + 0.5);
    }
    if (result > st.n_bytes)
        result = st.n_bytes;
    return PyLong_FromSsize_t(result ? result : 1);
}

/* Whether ``text`` holds at least ``needed`` occurrences of " the ", not overlapping (str.count's): the search
 * stops at the last one needed (English prose has them all in its first third). 1, 0, or -1 on an error. */
static int
has_the(PyObject *text, Py_ssize_t needed)
{
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text), step = PyUnicode_GET_LENGTH(the_word);
    Py_ssize_t at = 0;
    for (Py_ssize_t found = 0; found < needed; found++) {
        at = PyUnicode_Find(text, the_word, at, length, 1);
        if (at < 0)
            return at == -1 ? 0 : -1;
        at += step;
    }
    return 1;
}

/* approximate_features.safe_family, for dense features ``f`` of ``text``; -1 on an error. */
static int
family_of(const Py_ssize_t *f, PyObject *text, Py_ssize_t boundaries)
{
    Py_ssize_t accented = f[role[F_LATIN1]] + f[role[F_LATIN_EXT]] + f[role[F_VIETNAMESE]];
    Py_ssize_t latin = f[role[F_LETTERS]] + accented;
    Py_ssize_t kana = f[role[F_KANA]] + f[role[F_KATAKANA]];
    Py_ssize_t cjk = f[role[F_HAN]] + kana + f[role[F_HANGUL]];
    Py_ssize_t cyrillic = f[role[F_CYRILLIC]];
    Py_ssize_t other = 0;
    for (int i = 0; i < n_other_scripts; i++)
        other += f[other_script[i]];
    Py_ssize_t top = latin;
    if (cjk > top)
        top = cjk;
    if (cyrillic > top)
        top = cyrillic;
    if (other > top)
        top = other;
    if (top == cjk && cjk) {
        if (kana * 20 > cjk)
            return JAPANESE;
        return f[role[F_HANGUL]] > f[role[F_HAN]] ? KOREAN : CHINESE;
    }
    if (top == cyrillic && cyrillic) {
        Py_ssize_t unusual = f[role[F_CYRILLIC_EXT]] + f[role[F_ARMENIAN]] + f[role[F_COMBINING]] + f[role[F_RARE]];
        return unusual * 50 > cyrillic ? CYRILLIC_EXT : CYRILLIC;
    }
    if (top == other && other)
        return OTHER;
    if (accented * 100 > latin)
        return LATIN;
    if (boundaries * 8 > latin)
        return ASCII_IDS;
    if ((f[role[F_PUNCT]] + f[role[F_DIGITS]]) * 10 > latin)
        return ASCII_SYMBOLIC;
    if (f[role[F_WORDS]] > 0) {  /* " the " once in 60 words: the * 60 >= words */
        int english = has_the(text, (f[role[F_WORDS]] + 59) / 60);
        if (english)
            return english > 0 ? ENGLISH : -1;
    }
    return ASCII;
}

/* A safe bound with its margin (approximate._widened). */
static double
widened(const Bound *b, const Parts *p, const Py_ssize_t *extra)
{
    double ascii = ascii_dot(b->weights, p->counts), more = 0.0;
    for (int i = 0; i < N_EXTRA; i++)
        more += b->weights[n_features + i] * (double)extra[i];
    double total = ascii + more;
    for (int i = 0; i < p->n_parts; i++)
        total += b->weights[p->feature[i]] * (double)p->n[i];
    return total * (1 + b->relative) + b->spread * sqrt(total);
}

/* ApproximateCounter.py_safe_count. */
static PyObject *
model_safe(Model *self, PyObject *text)
{
    Stats st;
    Parts p;
    if (!self->safe) {
        PyErr_SetString(PyExc_ValueError, "this Model has no safe bounds");
        return NULL;
    }
    if (model_scan(self, text, &st, &p, 1))
        return NULL;
    const Py_ssize_t *c = p.counts, length = PyUnicode_GET_LENGTH(text);
    if ((c[2] + c[6] + c[1]) * 3 > 2 * length || st.n_bytes < short_text)
        return PyLong_FromSsize_t(st.n_bytes);
    if (st.n_bytes < mixed_short_text) {
        unsigned long long systems = c[0] ? 1ULL << latin_system : 0;
        for (int i = 0; i < p.n_parts; i++)
            if (p.n[i] && system_of_feature[p.feature[i]] >= 0)
                systems |= 1ULL << system_of_feature[p.feature[i]];
        if (systems & (systems - 1))  /* more than one writing system */
            return PyLong_FromSsize_t(st.n_bytes);
    }
    double floor = ascii_dot(self->floor, c);
    Py_ssize_t dense[MAX_FEATURES];
    dense_of(&p, dense);
    for (int i = 0; i < p.n_parts; i++)
        floor += self->floor[p.feature[i]] * (double)p.n[i];
    Py_ssize_t extra[N_EXTRA];
    extras(&st, extra);
    int family = family_of(dense, text, extra[0] + extra[1]);
    if (family < 0 || cut_latin(self, text, &p, dense, family))
        return NULL;
    double bound = widened(&self->bounds[family], &p, extra);
    if (extra[4] * long_word * 2 > length) {  /* looks_random */
        double dense_bound = widened(&self->bounds[N_FAMILIES], &p, extra);
        if (dense_bound > bound)
            bound = dense_bound;
    }
    Py_ssize_t low = (Py_ssize_t)ceil(floor), high = (Py_ssize_t)ceil(bound);
    Py_ssize_t result = low > high ? low : high;
    return PyLong_FromSsize_t(result < st.n_bytes ? result : st.n_bytes);
}

static PyMethodDef model_methods[] = {
    {"estimate", (PyCFunction)model_estimate, METH_O, "The estimate of a text's tokens (py_count)."},
    {"safe", (PyCFunction)model_safe, METH_O, "Safe mode's upper bound of a text's tokens (py_safe_count)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxwin.counters._approximate.speedups.Model",
    .tp_basicsize = sizeof(Model),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An approximate counter's weights, floor and safe bounds, for estimate() and safe().",
    .tp_methods = model_methods,
    .tp_new = model_new,
};

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "Set the tables (from approximate_features)."},
    {"text_parts", text_parts, METH_O, "(counts, parts, n_bytes) of a text, as approximate_features.text_parts."},
    {"safe_parts", safe_parts, METH_O, "text_parts and the safe-mode statistics, as approximate_features.safe_parts."},
    {"configure_safe", configure_safe, METH_VARARGS, "Set safe mode's feature roles (from approximate_features)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit_speedups(void)
{
    if (PyType_Ready(&ModelType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0)
        Py_CLEAR(m);
    return m;
}
