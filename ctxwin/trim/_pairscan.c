/* The tool-pair index's walk in C (ctxwin/trim/_tool_pairs.py holds the Python one, with the same results: checked
 * by tests/trim/test_pairscan.py).
 *
 * ``scan(messages, start, roles, result, caller)`` walks ``messages[start:]`` in order, as ``_bind_in_order``
 * does: a call (an id in an assistant message's ``tool_calls`` or ``invalid_tool_calls``) waits for its result, and
 * a result (a tool message's ``tool_call_id``) answers the latest call with its id not yet answered. It returns
 * ``(call_of, unresolved)``: result position -> call position, and call id -> the first result in the suffix that
 * answered no call there (its call may be earlier). A message's role is its class's in ``roles`` (``result``,
 * ``caller`` or another object); its fields are read from its ``__dict__``, as pydantic keeps them. Where a class
 * is not in ``roles`` or a message is not shaped as ctxwin's messages are (a field missing from its ``__dict__``,
 * calls that are not a list of dicts with an ``"id"``), it returns None and Python walks instead (and raises what
 * the shape calls for). A re-trim indexes the kept part of the conversation at every call, so a message costs here
 * a few dictionary reads instead of the interpreter's attribute reads of a pydantic object.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *tool_calls_name, *invalid_name, *call_id_name, *id_key;

/* The ids of a list of calls into ``pending`` (id -> position). 1: done; 0: not shaped as expected; -1: error. */
static int
note_calls(PyObject *calls, PyObject *position, PyObject *pending)
{
    if (calls == NULL || !PyList_Check(calls))
        return 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(calls); k++) {
        PyObject *call = PyList_GET_ITEM(calls, k);
        if (!PyDict_Check(call))
            return 0;
        PyObject *id = PyDict_GetItemWithError(call, id_key);
        if (id == NULL)
            return PyErr_Occurred() ? -1 : 0;
        int named = PyObject_IsTrue(id);
        if (named < 0)
            return -1;
        if (named && PyDict_SetItem(pending, id, position) < 0)
            return -1;
    }
    return 1;
}

/* One message of the walk. 1: done; 0: not shaped as expected; -1: error. */
static int
walk_one(PyObject *message, PyObject *role, PyObject *result_role, PyObject *position, PyObject *pending,
         PyObject *call_of, PyObject *unresolved)
{
    PyObject *dict = PyObject_GenericGetDict(message, NULL);
    if (dict == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError) && !PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int done = 0;
    if (!PyDict_Check(dict))
        goto out;
    if (role == result_role) {
        PyObject *id = PyDict_GetItemWithError(dict, call_id_name);
        if (id == NULL) {
            done = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
        Py_INCREF(id);
        PyObject *caller = PyDict_GetItemWithError(pending, id);
        if (caller != NULL) {
            Py_INCREF(caller);
            done = PyDict_DelItem(pending, id) < 0 || PyDict_SetItem(call_of, position, caller) < 0 ? -1 : 1;
            Py_DECREF(caller);
        }
        else if (PyErr_Occurred())
            done = -1;
        else {
            int known = PyDict_Contains(unresolved, id);
            done = known < 0 || (!known && PyDict_SetItem(unresolved, id, position) < 0) ? -1 : 1;
        }
        Py_DECREF(id);
    }
    else {
        PyObject *calls = PyDict_GetItemWithError(dict, tool_calls_name);
        if (calls == NULL && PyErr_Occurred()) {
            done = -1;
            goto out;
        }
        done = note_calls(calls, position, pending);
        if (done == 1) {
            PyObject *invalid = PyDict_GetItemWithError(dict, invalid_name);
            done = invalid == NULL && PyErr_Occurred() ? -1 : note_calls(invalid, position, pending);
        }
    }
out:
    Py_DECREF(dict);
    return done;
}

static PyObject *
scan(PyObject *module, PyObject *args)
{
    PyObject *messages, *roles, *result_role, *caller_role;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "OnO!OO:scan", &messages, &start, &PyDict_Type, &roles, &result_role, &caller_role))
        return NULL;
    PyObject *seq = PySequence_Fast(messages, "scan: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *pending = PyDict_New(), *call_of = PyDict_New(), *unresolved = PyDict_New(), *out = NULL;
    if (pending == NULL || call_of == NULL || unresolved == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int shaped = 1;
    for (Py_ssize_t i = start < 0 ? 0 : start; shaped == 1 && i < n; i++) {
        PyObject *message = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *role = PyDict_GetItemWithError(roles, (PyObject *)Py_TYPE(message));
        if (role == NULL) {
            shaped = PyErr_Occurred() ? -1 : 0;
            break;
        }
        if (role != result_role && role != caller_role)
            continue;
        PyObject *position = PyLong_FromSsize_t(i);
        if (position == NULL) {
            shaped = -1;
            break;
        }
        shaped = walk_one(message, role, result_role, position, pending, call_of, unresolved);
        Py_DECREF(position);
    }
    if (shaped == 1)
        out = PyTuple_Pack(2, call_of, unresolved);
    else if (shaped == 0)
        out = Py_NewRef(Py_None);
done:
    Py_DECREF(seq);
    Py_XDECREF(pending);
    Py_XDECREF(call_of);
    Py_XDECREF(unresolved);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "The pairs of messages[start:], walked in order (see the module comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ctxwin.trim._pairscan", "The tool-pair index's walk in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__pairscan(void)
{
    tool_calls_name = PyUnicode_InternFromString("tool_calls");
    invalid_name = PyUnicode_InternFromString("invalid_tool_calls");
    call_id_name = PyUnicode_InternFromString("tool_call_id");
    id_key = PyUnicode_InternFromString("id");
    if (tool_calls_name == NULL || invalid_name == NULL || call_id_name == NULL || id_key == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
