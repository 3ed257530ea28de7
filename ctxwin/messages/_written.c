/* The writer of messages in C (ctxwin/messages/_writer.py holds its interface and the pure-Python one): the one
 * change detector, for the count cache's keys (ctxwin/trim/_count_cache.py) and for the LangChain objects read once
 * (ctxwin/messages/_forms.py) or kept by a history (ctxwin/history/_base.py).
 *
 * A message is written as the address of its class (whoever keeps the bytes keeps the class alive, so no other
 * class can take that address: the count cache holds every class it keys, a note on a LangChain object is used only
 * while the object lives) and its field values, ``(*m.__dict__.values(), m.__pydantic_extra__,
 * m.__pydantic_private__)`` (private attributes hold what a message was read from, such as tool-call text as
 * received, which counts as sent), in a self-delimiting form with a type tag per value: two messages' bytes are equal
 * exactly when their values are equal and of the same types, all the way down (``1``, ``1.0`` and ``True`` differ;
 * so do equal dicts in another order, which only costs a recount or a second reading; a set's elements are written
 * in the order of their bytes, as marshal does, so equal sets write alike). Strings are copied as they are stored
 * (their kind and code units), so nothing is encoded or allocated per value, unlike ``marshal`` (which the
 * pure-Python writer in _writer.py uses, with the same guarantees; a process uses one writer or the other, never
 * both). Values of any other type, and nesting deeper than marshal's limit, raise ValueError, as marshal does: the
 * count cache then keys the message by its values' reprs, and an object that cannot be written gets no note.
 *
 * ``write(m)`` -> bytes; ``keys(messages)`` -> [write(m), ...]; ``all_noted(messages, keys)`` -> whether each
 * message is written as its key (written into one reused buffer, not kept; a key that is not bytes never matches);
 * ``recalled(messages, notes)`` -> each note's value (notes are None or ``(key, value)``) where its message is
 * written as its key, else None: the count cache's recall by identity in one pass.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h> /* T_OBJECT_EX */

#define MAX_DEPTH 2000 /* marshal's */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buffer;

static PyObject *dict_name, *extra_name, *private_name;

static int
reserve(Buffer *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int
put(Buffer *b, const void *src, Py_ssize_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* A tag and a length (or a small code). */
static int
put_head(Buffer *b, char tag, Py_ssize_t n)
{
    if (reserve(b, 1 + sizeof(n)) < 0)
        return -1;
    b->data[b->len++] = tag;
    memcpy(b->data + b->len, &n, sizeof(n));
    b->len += sizeof(n);
    return 0;
}

static int write_value(Buffer *b, PyObject *v, int depth);

static int
write_items(Buffer *b, char tag, PyObject **items, Py_ssize_t n, int depth)
{
    if (put_head(b, tag, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (write_value(b, items[i], depth + 1) < 0)
            return -1;
    return 0;
}

/* The spans of a set's written elements, for qsort (set just before the sort, which calls nothing else). */
static const char *span_base;

typedef struct {
    Py_ssize_t start, len;
} Span;

static int
compare_spans(const void *x, const void *y)
{
    const Span *a = x, *b = y;
    int order = memcmp(span_base + a->start, span_base + b->start, a->len < b->len ? a->len : b->len);
    return order ? order : (a->len > b->len) - (a->len < b->len);
}

/* A set's elements in the order of their written bytes, as marshal writes them: equal sets iterate in other orders
 * (elements whose hashes collide, such as -1 and -2, sit in insertion order), and must write equal bytes. */
static int
write_set(Buffer *b, char tag, PyObject *v, int depth)
{
    Py_ssize_t n = PySet_GET_SIZE(v);
    if (put_head(b, tag, n) < 0)
        return -1;
    Py_ssize_t start = b->len, count = 0;
    Span *spans = PyMem_Malloc((n ? n : 1) * sizeof(Span));
    if (spans == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *it = PyObject_GetIter(v), *item;
    if (it == NULL) {
        PyMem_Free(spans);
        return -1;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t at = b->len;
        int failed = count >= n || write_value(b, item, depth + 1) < 0;
        Py_DECREF(item);
        if (failed) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "set changed size during writing");
            Py_DECREF(it);
            PyMem_Free(spans);
            return -1;
        }
        spans[count].start = at - start;
        spans[count].len = b->len - at;
        count++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        PyMem_Free(spans);
        return -1;
    }
    Py_ssize_t size = b->len - start;
    char *copy = PyMem_Malloc(size ? size : 1);
    if (copy == NULL) {
        PyMem_Free(spans);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(copy, b->data + start, size);
    span_base = copy;
    qsort(spans, count, sizeof(Span), compare_spans);
    Py_ssize_t at = start;
    for (Py_ssize_t i = 0; i < count; i++) {
        memcpy(b->data + at, copy + spans[i].start, spans[i].len);
        at += spans[i].len;
    }
    PyMem_Free(copy);
    PyMem_Free(spans);
    return 0;
}

static int
write_value(Buffer *b, PyObject *v, int depth)
{
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "object too deeply nested to write");
        return -1;
    }
    if (v == Py_None)
        return put(b, "N", 1);
    if (v == Py_True)
        return put(b, "T", 1);
    if (v == Py_False)
        return put(b, "F", 1);
    PyTypeObject *type = Py_TYPE(v);
    if (type == &PyUnicode_Type) {
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(v) < 0)
            return -1;
#endif
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        int kind = PyUnicode_KIND(v); /* canonical: equal strings have equal kinds */
        if (put_head(b, (char)('0' + kind), n) < 0)
            return -1;
        return put(b, PyUnicode_DATA(v), n * kind);
    }
    if (type == &PyLong_Type) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {
            if (put(b, "i", 1) < 0)
                return -1;
            return put(b, &x, sizeof(x));
        }
        PyObject *digits = PyNumber_ToBase(v, 16);
        if (digits == NULL)
            return -1;
        int failed = put(b, "I", 1) < 0 || write_value(b, digits, depth + 1) < 0;
        Py_DECREF(digits);
        return failed ? -1 : 0;
    }
    if (type == &PyFloat_Type) {
        double x = PyFloat_AS_DOUBLE(v);
        if (put(b, "f", 1) < 0)
            return -1;
        return put(b, &x, sizeof(x));
    }
    if (type == &PyComplex_Type) {
        Py_complex x = PyComplex_AsCComplex(v);
        if (put(b, "c", 1) < 0)
            return -1;
        return put(b, &x, sizeof(x));
    }
    if (type == &PyBytes_Type) {
        if (put_head(b, 'b', PyBytes_GET_SIZE(v)) < 0)
            return -1;
        return put(b, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
    }
    if (type == &PyTuple_Type)
        return write_items(b, '(', ((PyTupleObject *)v)->ob_item, PyTuple_GET_SIZE(v), depth);
    if (type == &PyList_Type)
        return write_items(b, '[', ((PyListObject *)v)->ob_item, PyList_GET_SIZE(v), depth);
    if (type == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        if (put_head(b, '{', PyDict_GET_SIZE(v)) < 0)
            return -1;
        while (PyDict_Next(v, &pos, &key, &value))
            if (write_value(b, key, depth + 1) < 0 || write_value(b, value, depth + 1) < 0)
                return -1;
        return 0;
    }
    if (type == &PySet_Type)
        return write_set(b, '<', v, depth);
    if (type == &PyFrozenSet_Type)
        return write_set(b, '>', v, depth);
    PyErr_Format(PyExc_ValueError, "cannot write a %.100s", type->tp_name);
    return -1;
}

/* Where a message class keeps ``__pydantic_extra__`` and ``__pydantic_private__``: the offsets of their slots, read
 * without the attribute machinery (a pydantic class's ``__getattr__`` hook makes every attribute read a slow one),
 * or -1 where the attribute must be read as an attribute (no plain slot, or a class of its own
 * ``__getattribute__``). Found once per class and call: a call's classes are a handful, kept alive by its messages. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t extra, private;
} Slots;

#define SLOT_CACHE 8

typedef struct {
    Slots entries[SLOT_CACHE];
    int size;
} SlotCache;

static PyObject *getattribute_name, *object_getattribute;

static Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(type, name); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    return member->type == T_OBJECT_EX ? member->offset : -1;
}

static const Slots *
slots_of(SlotCache *cache, PyTypeObject *type)
{
    for (int k = 0; k < cache->size; k++)
        if (cache->entries[k].type == type)
            return &cache->entries[k];
    Slots found = {type, -1, -1};
    if (_PyType_Lookup(type, getattribute_name) == object_getattribute) {
        found.extra = slot_offset(type, extra_name);
        found.private = slot_offset(type, private_name);
    }
    int at = cache->size < SLOT_CACHE ? cache->size++ : SLOT_CACHE - 1;
    cache->entries[at] = found;
    return &cache->entries[at];
}

/* The attribute ``name`` of ``m`` (a new reference): from its slot where it is set, else read as an attribute. */
static PyObject *
read_slot(PyObject *m, Py_ssize_t offset, PyObject *name)
{
    if (offset >= 0) {
        PyObject *value = *(PyObject **)((char *)m + offset);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(m, name);
}

/* The message's field values and extras, as one tuple would be written. */
static int
write_message(Buffer *b, PyObject *m, SlotCache *cache)
{
    PyObject *dict = PyObject_GenericGetDict(m, NULL);
    if (dict == NULL)
        return -1;
    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "a message's __dict__ must be a dict, got %.100s", Py_TYPE(dict)->tp_name);
        Py_DECREF(dict);
        return -1;
    }
    const Slots *slots = slots_of(cache, Py_TYPE(m));
    PyObject *extra = read_slot(m, slots->extra, extra_name);
    if (extra == NULL) {
        Py_DECREF(dict);
        return -1;
    }
    PyObject *private = read_slot(m, slots->private, private_name);
    if (private == NULL) {
        Py_DECREF(dict);
        Py_DECREF(extra);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    PyTypeObject *type = Py_TYPE(m); /* the class by address: the cache holds every class it keys */
    int failed = put(b, &type, sizeof(type)) < 0 || put_head(b, '(', PyDict_GET_SIZE(dict) + 2) < 0;
    while (!failed && PyDict_Next(dict, &pos, &key, &value))
        failed = write_value(b, value, 1) < 0;
    failed = failed || write_value(b, extra, 1) < 0 || write_value(b, private, 1) < 0;
    Py_DECREF(dict);
    Py_DECREF(extra);
    Py_DECREF(private);
    return failed ? -1 : 0;
}

/* Whether ``m`` is written as ``expected`` (1), not (0: another value, or one that cannot be written), or an error. */
static int
written_as(Buffer *b, PyObject *m, PyObject *expected, SlotCache *cache)
{
    if (!PyBytes_Check(expected)) /* keyed by repr: never recalled */
        return 0;
    b->len = 0;
    if (write_message(b, m, cache) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) /* only "cannot write" means "changed" */
            return -1;
        PyErr_Clear();
        return 0;
    }
    return b->len == PyBytes_GET_SIZE(expected) && memcmp(b->data, PyBytes_AS_STRING(expected), b->len) == 0;
}

static PyObject *
write_one(PyObject *module, PyObject *m)
{
    Buffer b = {NULL, 0, 0};
    SlotCache cache = {.size = 0};
    PyObject *written = write_message(&b, m, &cache) < 0 ? NULL : PyBytes_FromStringAndSize(b.data, b.len);
    PyMem_Free(b.data);
    return written;
}

static PyObject *
keys(PyObject *module, PyObject *messages)
{
    PyObject *seq = PySequence_Fast(messages, "keys: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = PyList_New(n);
    Buffer b = {NULL, 0, 0};
    SlotCache cache = {.size = 0};
    if (result == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PySequence_Fast_GET_ITEM(seq, i);
        b.len = 0;
        if (write_message(&b, m, &cache) < 0)
            goto fail;
        PyObject *written = PyBytes_FromStringAndSize(b.data, b.len);
        if (written == NULL)
            goto fail;
        PyList_SET_ITEM(result, i, written);
    }
    PyMem_Free(b.data);
    Py_DECREF(seq);
    return result;
fail:
    PyMem_Free(b.data);
    Py_DECREF(seq);
    Py_XDECREF(result);
    return NULL;
}

static PyObject *
all_noted(PyObject *module, PyObject *args)
{
    PyObject *messages, *noted;
    if (!PyArg_ParseTuple(args, "OO:all_noted", &messages, &noted))
        return NULL;
    PyObject *seq = PySequence_Fast(messages, "all_noted: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *keys_seq = PySequence_Fast(noted, "all_noted: keys must be a sequence");
    if (keys_seq == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    Buffer b = {NULL, 0, 0};
    SlotCache cache = {.size = 0};
    int same = PySequence_Fast_GET_SIZE(seq) == PySequence_Fast_GET_SIZE(keys_seq);
    for (Py_ssize_t i = 0; same == 1 && i < PySequence_Fast_GET_SIZE(seq); i++)
        same = written_as(&b, PySequence_Fast_GET_ITEM(seq, i), PySequence_Fast_GET_ITEM(keys_seq, i), &cache);
    PyMem_Free(b.data);
    Py_DECREF(seq);
    Py_DECREF(keys_seq);
    return same < 0 ? NULL : PyBool_FromLong(same);
}

/* ``recalled(messages, notes)``: for each message and its note (None, or ``(key, value)``), the value where the
 * message is written as the key, else None. */
static PyObject *
recalled(PyObject *module, PyObject *args)
{
    PyObject *messages, *noted;
    if (!PyArg_ParseTuple(args, "OO:recalled", &messages, &noted))
        return NULL;
    PyObject *seq = PySequence_Fast(messages, "recalled: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *notes = PySequence_Fast(noted, "recalled: notes must be a sequence");
    if (notes == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL;
    Buffer b = {NULL, 0, 0};
    SlotCache cache = {.size = 0};
    if (PySequence_Fast_GET_SIZE(notes) != n) {
        PyErr_SetString(PyExc_ValueError, "recalled: one note per message");
        goto done;
    }
    result = PyList_New(n);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        PyObject *note = PySequence_Fast_GET_ITEM(notes, i), *value = Py_None;
        if (PyTuple_Check(note) && PyTuple_GET_SIZE(note) == 2) {
            Py_INCREF(note); /* held while the message is written: writing may run a class's own Python */
            int same = written_as(&b, PySequence_Fast_GET_ITEM(seq, i), PyTuple_GET_ITEM(note, 0), &cache);
            if (same < 0) {
                Py_DECREF(note);
                Py_CLEAR(result);
                break;
            }
            if (same)
                value = PyTuple_GET_ITEM(note, 1);
            PyList_SET_ITEM(result, i, Py_NewRef(value));
            Py_DECREF(note);
        }
        else
            PyList_SET_ITEM(result, i, Py_NewRef(value));
    }
done:
    PyMem_Free(b.data);
    Py_DECREF(seq);
    Py_DECREF(notes);
    return result;
}

static PyMethodDef methods[] = {
    {"write", write_one, METH_O, "A message's field values written (see the module comment)."},
    {"keys", keys, METH_O, "The messages' content keys: write(m) each."},
    {"all_noted", all_noted, METH_VARARGS, "Whether each message is written as its key."},
    {"recalled", recalled, METH_VARARGS, "Each note's value where its message is written as its key, else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ctxwin.messages._written", "The writer of messages in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__written(void)
{
    dict_name = PyUnicode_InternFromString("__dict__");
    extra_name = PyUnicode_InternFromString("__pydantic_extra__");
    private_name = PyUnicode_InternFromString("__pydantic_private__");
    getattribute_name = PyUnicode_InternFromString("__getattribute__");
    if (dict_name == NULL || extra_name == NULL || private_name == NULL || getattribute_name == NULL)
        return NULL;
    object_getattribute = _PyType_Lookup(&PyBaseObject_Type, getattribute_name); /* borrowed: object lives on */
    if (object_getattribute == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
