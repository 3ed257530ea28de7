/* How often each of a query's terms occurs in each of many texts, every text read once (ctxwin/recall/_terms.py).

A plan's recall reads what it left out for a query's terms: up to a million characters, a pasted log's query
thirty-two terms. Searching each term in turn reads the text once per term; here the terms are one Aho-Corasick
automaton over code points, so each text is read once whatever their number. Counts are those of the pure-Python
``term_counts`` (the same left-to-right rules, checked by tests/recall/test_terms.py): a word counts where it is
whole (no letter or digit of a spaced script either side, nor an underscore for a word holding one; the scripts
written without spaces are the ranges the caller gives, ``_text.UNSPACED_RANGES``), non-overlapping; any other term
non-overlapping, as ``str.count``. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_UCS4 ch;      /* the character leading here from the parent */
    int32_t child;   /* first child, -1 for none */
    int32_t sibling; /* next child of the same parent, -1 for none */
    int32_t fail;    /* the longest proper suffix that is a prefix of a term */
    int32_t term;    /* the term ending here, -1 for none */
    int32_t out;     /* the next node on the fail chain where a term ends, -1 for none */
} Node;

typedef struct {
    Node *nodes;
    Py_ssize_t size, capacity;
    int32_t *root;  /* the root's child for each character below ROOT_CHARS (0: none) */
    int32_t *ascii; /* every node's next node for each ASCII character, fail links followed: one read a character */
} Automaton;

#define ROOT_CHARS 65536
#define ASCII 128

static int32_t child_of(const Automaton *a, int32_t node, Py_UCS4 ch) {
    if (node == 0 && ch < ROOT_CHARS) return a->root[ch] ? a->root[ch] : -1;
    for (int32_t k = a->nodes[node].child; k >= 0; k = a->nodes[k].sibling)
        if (a->nodes[k].ch == ch) return k;
    return -1;
}

static int32_t add_node(Automaton *a, int32_t parent, Py_UCS4 ch) {
    if (a->size == a->capacity) {
        Py_ssize_t capacity = a->capacity ? a->capacity * 2 : 64;
        Node *grown = PyMem_Realloc(a->nodes, (size_t)capacity * sizeof(Node));
        if (!grown) { PyErr_NoMemory(); return -1; }
        a->nodes = grown;
        a->capacity = capacity;
    }
    int32_t k = (int32_t)a->size++;
    Node *n = &a->nodes[k];
    n->ch = ch; n->child = -1; n->sibling = -1; n->fail = 0; n->term = -1; n->out = -1;
    if (parent >= 0) {
        n->sibling = a->nodes[parent].child;
        a->nodes[parent].child = k;
        if (parent == 0 && ch < ROOT_CHARS) a->root[ch] = k;
    }
    return k;
}

/* Links each node to its longest proper suffix in the trie (breadth first) and to the next term on that chain, and
   fills the ASCII transitions: a node's row is its suffix's (computed before it, breadth first) with its own
   children written over. */
static int link_suffixes(Automaton *a) {
    int32_t *queue = PyMem_Malloc((size_t)a->size * sizeof(int32_t));
    if (!queue) { PyErr_NoMemory(); return -1; }
    Py_ssize_t head = 0, tail = 0;
    for (int32_t k = a->nodes[0].child; k >= 0; k = a->nodes[k].sibling) {
        a->nodes[k].fail = 0;
        queue[tail++] = k;
    }
    while (head < tail) {
        int32_t node = queue[head++];
        for (int32_t k = a->nodes[node].child; k >= 0; k = a->nodes[k].sibling) {
            int32_t f = a->nodes[node].fail, to;
            while ((to = child_of(a, f, a->nodes[k].ch)) < 0 && f != 0) f = a->nodes[f].fail;
            a->nodes[k].fail = to >= 0 && to != k ? to : 0;
            int32_t target = a->nodes[k].fail;
            a->nodes[k].out = a->nodes[target].term >= 0 ? target : a->nodes[target].out;
            queue[tail++] = k;
        }
    }
    a->ascii = PyMem_Malloc((size_t)a->size * ASCII * sizeof(int32_t));
    if (!a->ascii) { PyMem_Free(queue); PyErr_NoMemory(); return -1; }
    memcpy(a->ascii, a->root, ASCII * sizeof(int32_t));
    for (Py_ssize_t q = 0; q < tail; q++) {
        int32_t node = queue[q];
        int32_t *row = a->ascii + (Py_ssize_t)node * ASCII;
        memcpy(row, a->ascii + (Py_ssize_t)a->nodes[node].fail * ASCII, ASCII * sizeof(int32_t));
        for (int32_t k = a->nodes[node].child; k >= 0; k = a->nodes[k].sibling)
            if (a->nodes[k].ch < ASCII) row[a->nodes[k].ch] = k;
    }
    PyMem_Free(queue);
    return 0;
}

/* The ranges of the scripts written without spaces (first and last code point of each). */
typedef struct {
    Py_UCS4 (*ranges)[2];
    Py_ssize_t count;
} Unspaced;

/* A letter or digit of a script written with spaces (recall's word rule, _text.whole_at): a character of an
   unspaced script bounds a word, an underscore too unless the word holds one (an identifier). Out of line: it runs
   only where a word ends, and inlined into the scanning loop it slowed every character's step by 5%. */
Py_NO_INLINE static int is_letter(const Unspaced *unspaced, Py_UCS4 c, char identifier) {
    if (c == '_') return identifier;
    if (!Py_UNICODE_ISALNUM(c)) return 0;
    for (Py_ssize_t r = 0; r < unspaced->count && c >= unspaced->ranges[r][0]; r++)  /* the ranges are in order */
        if (c <= unspaced->ranges[r][1]) return 0;
    return 1;
}

/* One pass over a text of code units of type T: each term's count (see the module's comment), and whether any
   term counted. Written once for each of CPython's three string kinds, so the compiler sees the unit's width. */
#define SCAN(NAME, T)                                                                                          \
    static int NAME(const Automaton *a, const Unspaced *unspaced, const void *data, Py_ssize_t length,          \
                    const Py_ssize_t *lengths, const char *words, Py_ssize_t *counts, Py_ssize_t *next) {      \
        const T *text = (const T *)data;                                                                       \
        const int32_t *ascii = a->ascii;                                                                       \
        int any = 0;                                                                                           \
        int32_t state = 0;                                                                                     \
        for (Py_ssize_t i = 0; i < length; i++) {                                                              \
            Py_UCS4 ch = text[i];                                                                              \
            if (ch < ASCII) {                                                                                  \
                state = ascii[(Py_ssize_t)state * ASCII + ch];                                                 \
            } else {                                                                                           \
                int32_t to;                                                                                    \
                while ((to = child_of(a, state, ch)) < 0 && state != 0) state = a->nodes[state].fail;          \
                state = to >= 0 ? to : 0;                                                                      \
            }                                                                                                  \
            if (state == 0) continue;                                                                          \
            for (int32_t s = a->nodes[state].term >= 0 ? state : a->nodes[state].out; s >= 0;                 \
                 s = a->nodes[s].out) {                                                                        \
                int32_t t = a->nodes[s].term;                                                                  \
                Py_ssize_t start = i - lengths[t] + 1;                                                         \
                if (start < next[t]) continue;                                                                 \
                if (words[t] && ((start > 0 && is_letter(unspaced, text[start - 1], words[t] > 1)) ||         \
                                 (i + 1 < length && is_letter(unspaced, text[i + 1], words[t] > 1))))          \
                    continue;                                                                                  \
                counts[t]++;                                                                                   \
                next[t] = i + 1;                                                                               \
                any = 1;                                                                                       \
            }                                                                                                  \
        }                                                                                                      \
        return any;                                                                                            \
    }

SCAN(scan_ucs1, Py_UCS1)
SCAN(scan_ucs2, Py_UCS2)
SCAN(scan_ucs4, Py_UCS4)

static PyObject *term_counts(PyObject *self, PyObject *args) {
    PyObject *texts, *terms, *whole, *ranges;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &texts, &PyList_Type, &terms, &PyList_Type, &whole,
                          &PyTuple_Type, &ranges))
        return NULL;
    Py_ssize_t n_terms = PyList_GET_SIZE(terms);
    if (PyList_GET_SIZE(whole) != n_terms) {
        PyErr_SetString(PyExc_ValueError, "term_counts: terms and whole differ in length");
        return NULL;
    }
    Py_ssize_t n_ranges = PyTuple_GET_SIZE(ranges);
    Unspaced unspaced = {PyMem_Calloc((size_t)(n_ranges ? n_ranges : 1), sizeof(Py_UCS4[2])), n_ranges};
    if (!unspaced.ranges) return PyErr_NoMemory();
    for (Py_ssize_t r = 0; r < n_ranges; r++) {
        unsigned int first, last;
        PyObject *range = PyTuple_GET_ITEM(ranges, r);
        if (!PyTuple_Check(range) || !PyArg_ParseTuple(range, "II", &first, &last)) {
            PyErr_Format(PyExc_TypeError, "term_counts: range %zd is not a (first, last) pair of code points", r);
            PyMem_Free(unspaced.ranges);
            return NULL;
        }
        unspaced.ranges[r][0] = first;
        unspaced.ranges[r][1] = last;
    }
    Automaton a = {NULL, 0, 0, PyMem_Calloc(ROOT_CHARS, sizeof(int32_t)), NULL};
    Py_ssize_t *lengths = PyMem_Calloc((size_t)(n_terms ? n_terms : 1), sizeof(Py_ssize_t));
    char *words = PyMem_Calloc((size_t)(n_terms ? n_terms : 1), 1);
    Py_ssize_t *counts = PyMem_Calloc((size_t)(n_terms ? n_terms : 1), sizeof(Py_ssize_t));
    Py_ssize_t *next = PyMem_Calloc((size_t)(n_terms ? n_terms : 1), sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (!a.root || !lengths || !words || !counts || !next) { PyErr_NoMemory(); goto done; }
    if (add_node(&a, -1, 0) < 0) goto done;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term = PyList_GET_ITEM(terms, t);
        if (!PyUnicode_Check(term) || PyUnicode_GET_LENGTH(term) == 0) {
            PyErr_Format(PyExc_TypeError, "term_counts: term %zd is not a non-empty str", t);
            goto done;
        }
        int flag = PyObject_IsTrue(PyList_GET_ITEM(whole, t));
        if (flag < 0) goto done;
        lengths[t] = PyUnicode_GET_LENGTH(term);
        /* 0: any term; 1: a word; 2: an identifier (a word holding an underscore, which an underscore continues) */
        words[t] = (char)(flag ? 1 + (PyUnicode_FindChar(term, '_', 0, lengths[t], 1) >= 0) : 0);
        int kind = PyUnicode_KIND(term);
        const void *data = PyUnicode_DATA(term);
        int32_t node = 0;
        for (Py_ssize_t i = 0; i < lengths[t]; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            int32_t to = child_of(&a, node, ch);
            if (to < 0 && (to = add_node(&a, node, ch)) < 0) goto done;
            node = to;
        }
        if (a.nodes[node].term >= 0) {
            PyErr_Format(PyExc_ValueError, "term_counts: term %zd is given twice", t);
            goto done;
        }
        a.nodes[node].term = (int32_t)t;
    }
    if (link_suffixes(&a) < 0) goto done;

    Py_ssize_t n_texts = PyList_GET_SIZE(texts);
    result = PyList_New(n_texts);
    if (!result) goto done;
    for (Py_ssize_t x = 0; x < n_texts; x++) {
        PyObject *text = PyList_GET_ITEM(texts, x);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "term_counts: text %zd is not a str", x);
            Py_CLEAR(result);
            goto done;
        }
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t length = PyUnicode_GET_LENGTH(text);
        memset(counts, 0, (size_t)n_terms * sizeof(Py_ssize_t));
        memset(next, 0, (size_t)n_terms * sizeof(Py_ssize_t));
        const Unspaced *u = &unspaced;
        int any;
        switch (kind) {
        case PyUnicode_1BYTE_KIND: any = scan_ucs1(&a, u, data, length, lengths, words, counts, next); break;
        case PyUnicode_2BYTE_KIND: any = scan_ucs2(&a, u, data, length, lengths, words, counts, next); break;
        default: any = scan_ucs4(&a, u, data, length, lengths, words, counts, next); break;
        }
        PyObject *item;
        if (!any) {
            item = Py_NewRef(Py_None);
        } else {
            item = PyTuple_New(n_terms);
            if (!item) { Py_CLEAR(result); goto done; }
            for (Py_ssize_t t = 0; t < n_terms; t++) {
                PyObject *count = PyLong_FromSsize_t(counts[t]);
                if (!count) { Py_DECREF(item); Py_CLEAR(result); goto done; }
                PyTuple_SET_ITEM(item, t, count);
            }
        }
        PyList_SET_ITEM(result, x, item);
    }
done:
    PyMem_Free(unspaced.ranges);
    PyMem_Free(a.nodes);
    PyMem_Free(a.root);
    PyMem_Free(a.ascii);
    PyMem_Free(lengths);
    PyMem_Free(words);
    PyMem_Free(counts);
    PyMem_Free(next);
    return result;
}

static PyMethodDef methods[] = {
    {"term_counts", term_counts, METH_VARARGS,
     "term_counts(texts, terms, whole, unspaced): for each text, None where no term occurs, else each term's count."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_termscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__termscan(void) { return PyModule_Create(&module); }
