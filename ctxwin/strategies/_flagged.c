/* Which messages of a list carry additional kwargs or response metadata, in C (ctxwin/strategies/_pins.py holds the
 * Python reading, ``flagged_indexes``, with the same results: checked by tests/strategies/test_flagged.py).
 *
 * ``flagged(messages)`` -> the indexes of the messages whose ``additional_kwargs`` or ``response_metadata`` is a
 * non-empty dict, or None when a message's fields are not plain dicts in its ``__dict__`` (then Python reads them
 * as it does). A one-off plan reads every message of a long history once for pins: the messages are not in the
 * CPU's cache, and here the next messages are fetched while one is read, where Python's loop waits for each.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define AHEAD 16 /* messages fetched ahead of the one read */
#if defined(__GNUC__) || defined(__clang__)
#define FETCH(object) __builtin_prefetch(object)
#else
#define FETCH(object) ((void)(object))
#endif

static PyObject *kwargs_name, *metadata_name;

/* 1: a non-empty dict; 0: an empty dict; -1: not a plain dict (or missing). */
static int
holds(PyObject *fields, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(fields, name);
    if (value == NULL || !PyDict_CheckExact(value))
        return -1;
    return PyDict_GET_SIZE(value) > 0;
}

static PyObject *
flagged(PyObject *module, PyObject *messages)
{
    PyObject *seq = PySequence_Fast(messages, "flagged: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; i < n && out != NULL; i++) {
        if (i + AHEAD < n)
            FETCH(items[i + AHEAD]);
        PyObject *fields = PyObject_GenericGetDict(items[i], NULL);
        int kwargs = -1, metadata = -1;
        if (fields == NULL)
            PyErr_Clear();
        else {
            if (PyDict_CheckExact(fields)) {
                kwargs = holds(fields, kwargs_name);
                metadata = kwargs < 0 ? -1 : holds(fields, metadata_name);
            }
            Py_DECREF(fields);
        }
        if (PyErr_Occurred()) {
            Py_CLEAR(out);
            break;
        }
        if (kwargs < 0 || metadata < 0) { /* not the common shape: Python reads the list */
            Py_DECREF(out);
            Py_DECREF(seq);
            Py_RETURN_NONE;
        }
        if (kwargs || metadata) {
            PyObject *index = PyLong_FromSsize_t(i);
            if (index == NULL || PyList_Append(out, index) < 0)
                Py_CLEAR(out);
            Py_XDECREF(index);
        }
    }
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"flagged", flagged, METH_O, "Indexes of the messages with additional kwargs or response metadata, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ctxwin.strategies._flagged", "Which messages carry kwargs or metadata, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__flagged(void)
{
    kwargs_name = PyUnicode_InternFromString("additional_kwargs");
    metadata_name = PyUnicode_InternFromString("response_metadata");
    if (kwargs_name == NULL || metadata_name == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
