/* ``BaseTokenCounter``'s message framing in C for the messages it meets most (ctxwin/counters/_base.py holds the
 * Python one, ``message_texts``, with the same results: checked by tests/counters/test_framing.py).
 *
 * ``frame(messages, labels, roles, kinds, per_message, per_name, dumps, texts_of)`` -> ``(texts, framed)``: every
 * message's strings to tokenize, in order, and for each message ``(how many strings, the tokens its framing adds)``,
 * as ``message_texts`` gives them. A message is framed here when it holds only what the common case holds: string
 * content, a role its ``type`` tells (``roles``), a name and call ids whose tokens ``labels`` (the counter's memo)
 * already holds; for an assistant message (``kinds``: its class's bit 1; a tool result's is bit 2), tool calls
 * built in Python (no text as received, no ``additional_kwargs``, no invalid calls), whose arguments ``dumps``
 * writes. Any other message (a class not in ``kinds``, list content, a label not counted yet, ...) is framed by
 * ``texts_of(message)`` (``message_texts``), so the results are Python's by construction. A cold trim frames every
 * message it keeps: here a message costs a few dictionary reads instead of the interpreter's attribute reads of a
 * pydantic object.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define CALLS 1  /* _base.py's _CALLS */
#define RESULT 2 /* _base.py's _RESULT */

static PyObject *content_name, *type_name, *name_name, *extra_name, *tool_calls_name, *invalid_name, *call_id_name,
    *private_name, *received_name, *args_key, *id_key, *empty;

/* The memo's count of ``label`` added to ``*fixed``: 1; 0 where the memo has no int for it; -1 on an error. */
static int
add_label(PyObject *labels, PyObject *label, long long *fixed)
{
    PyObject *count = PyDict_GetItemWithError(labels, label);
    if (count == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyLong_CheckExact(count))
        return 0;
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(count, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *fixed += value;
    return 1;
}

/* Tool calls built in Python: each one's arguments written by ``dumps`` into ``texts``, its name and id counted.
 * 1: done; 0: not the common case (left to Python, ``texts`` as it was); -1 on an error. */
static int
add_calls(PyObject *message, PyObject *fields, PyObject *labels, PyObject *dumps, PyObject *texts, long long *fixed)
{
    PyObject *extra = PyDict_GetItemWithError(fields, extra_name);
    PyObject *calls = PyDict_GetItemWithError(fields, tool_calls_name);
    PyObject *invalid = PyDict_GetItemWithError(fields, invalid_name);
    if (PyErr_Occurred())
        return -1;
    if (extra == NULL || !PyDict_CheckExact(extra) || PyDict_GET_SIZE(extra) || calls == NULL ||
        !PyList_CheckExact(calls) || invalid == NULL || !PyList_CheckExact(invalid) || PyList_GET_SIZE(invalid))
        return 0;
    if (!PyList_GET_SIZE(calls))
        return 1;
    PyObject *private = PyObject_GetAttr(message, private_name);
    if (private == NULL)
        return -1;
    int received = 0;
    if (private != Py_None) {
        PyObject *raw = PyDict_Check(private) ? PyDict_GetItemWithError(private, received_name) : Py_True;
        received = raw == NULL ? (PyErr_Occurred() ? -1 : 0) : PyObject_IsTrue(raw);
    }
    Py_DECREF(private);
    if (received)
        return received < 0 ? -1 : 0; /* read from a request: its text as received counts (sent_arguments) */
    Py_ssize_t size = PyList_GET_SIZE(texts);
    long long added = 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(calls); k++) {
        PyObject *call = PyList_GET_ITEM(calls, k);
        if (!PyDict_CheckExact(call))
            goto python;
        PyObject *name = PyDict_GetItemWithError(call, name_name);
        PyObject *id = PyDict_GetItemWithError(call, id_key);
        PyObject *args = PyDict_GetItemWithError(call, args_key);
        if (PyErr_Occurred())
            goto fail;
        if (name == NULL)
            goto python;
        int named = id == NULL ? 0 : PyObject_IsTrue(id);
        if (named < 0)
            goto fail;
        int known = add_label(labels, name, &added);
        if (known == 1)
            known = add_label(labels, named ? id : empty, &added);
        if (known <= 0) {
            if (known < 0)
                goto fail;
            goto python;
        }
        PyObject *text = PyObject_CallOneArg(dumps, args == NULL ? Py_None : args);
        if (text == NULL)
            goto fail;
        int appended = PyList_Append(texts, text);
        Py_DECREF(text);
        if (appended < 0)
            goto fail;
    }
    *fixed += added;
    return 1;
python:
    if (PyList_SetSlice(texts, size, PyList_GET_SIZE(texts), NULL) < 0)
        return -1;
    return 0;
fail:
    return -1;
}

/* One message framed here: its strings appended to ``texts``, its framing tokens in ``*fixed``. 1: done; 0: left to
 * Python (``texts`` as it was); -1 on an error. */
static int
frame_one(PyObject *message, PyObject *labels, PyObject *roles, PyObject *kinds, long long per_message,
          long long per_name, PyObject *dumps, PyObject *texts, long long *fixed)
{
    PyObject *kind_obj = PyDict_GetItemWithError(kinds, (PyObject *)Py_TYPE(message));
    if (kind_obj == NULL)
        return PyErr_Occurred() ? -1 : 0;
    long kind = PyLong_AsLong(kind_obj);
    if (kind == -1 && PyErr_Occurred())
        return -1;
    PyObject *fields = PyObject_GenericGetDict(message, NULL);
    if (fields == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError) && !PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int done = 0;
    if (!PyDict_Check(fields))
        goto out;
    PyObject *content = PyDict_GetItemWithError(fields, content_name);
    PyObject *type = PyDict_GetItemWithError(fields, type_name);
    PyObject *name = PyDict_GetItemWithError(fields, name_name);
    if (PyErr_Occurred()) {
        done = -1;
        goto out;
    }
    if (content == NULL || !PyUnicode_CheckExact(content) || type == NULL || name == NULL)
        goto out;
    PyObject *role = PyDict_GetItemWithError(roles, type);
    if (role == NULL) {
        done = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    long long total = per_message;
    int known = add_label(labels, role, &total);
    if (known == 1 && name != Py_None) {
        int named = PyObject_IsTrue(name);
        if (named < 0)
            known = -1;
        else if (named) {
            total += per_name;
            known = add_label(labels, name, &total);
        }
    }
    if (known == 1 && (kind & RESULT)) {
        PyObject *call_id = PyDict_GetItemWithError(fields, call_id_name);
        known = call_id == NULL ? (PyErr_Occurred() ? -1 : 0) : add_label(labels, call_id, &total);
    }
    if (known <= 0) {
        done = known;
        goto out;
    }
    Py_ssize_t size = PyList_GET_SIZE(texts);
    if (PyList_Append(texts, content) < 0) {
        done = -1;
        goto out;
    }
    done = kind & CALLS ? add_calls(message, fields, labels, dumps, texts, &total) : 1;
    if (done == 1)
        *fixed = total;
    else if (PyList_SetSlice(texts, size, PyList_GET_SIZE(texts), NULL) < 0)
        done = -1;
out:
    Py_DECREF(fields);
    return done;
}

/* What ``texts_of(message)`` (Python's framing) gives, added: its strings to ``texts``, ``(len, fixed)`` to
 * ``framed``. */
static int
frame_in_python(PyObject *texts_of, PyObject *message, PyObject *texts, PyObject *framed)
{
    PyObject *got = PyObject_CallOneArg(texts_of, message);
    if (got == NULL)
        return -1;
    int failed = 1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2 || !PyList_Check(PyTuple_GET_ITEM(got, 0)))
        PyErr_SetString(PyExc_TypeError, "message_texts must return (list of texts, tokens)");
    else {
        PyObject *parts = PyTuple_GET_ITEM(got, 0);
        PyObject *size = PyLong_FromSsize_t(PyList_GET_SIZE(parts));
        PyObject *entry = size == NULL ? NULL : PyTuple_Pack(2, size, PyTuple_GET_ITEM(got, 1));
        Py_XDECREF(size);
        failed = entry == NULL ||
                 PyList_SetSlice(texts, PyList_GET_SIZE(texts), PyList_GET_SIZE(texts), parts) < 0 ||
                 PyList_Append(framed, entry) < 0;
        Py_XDECREF(entry);
    }
    Py_DECREF(got);
    return failed ? -1 : 0;
}

static PyObject *
frame(PyObject *module, PyObject *args)
{
    PyObject *messages, *labels, *roles, *kinds, *dumps, *texts_of;
    long long per_message, per_name;
    if (!PyArg_ParseTuple(args, "OO!O!O!LLOO:frame", &messages, &PyDict_Type, &labels, &PyDict_Type, &roles,
                          &PyDict_Type, &kinds, &per_message, &per_name, &dumps, &texts_of))
        return NULL;
    PyObject *seq = PySequence_Fast(messages, "frame: messages must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *texts = PyList_New(0), *framed = PyList_New(0), *out = NULL;
    if (texts == NULL || framed == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *message = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t before = PyList_GET_SIZE(texts);
        long long fixed = 0;
        int done = frame_one(message, labels, roles, kinds, per_message, per_name, dumps, texts, &fixed);
        if (done < 0)
            goto done;
        if (done == 0) {
            if (frame_in_python(texts_of, message, texts, framed) < 0)
                goto done;
            continue;
        }
        PyObject *size = PyLong_FromSsize_t(PyList_GET_SIZE(texts) - before), *tokens = PyLong_FromLongLong(fixed);
        PyObject *entry = size == NULL || tokens == NULL ? NULL : PyTuple_Pack(2, size, tokens);
        Py_XDECREF(size);
        Py_XDECREF(tokens);
        if (entry == NULL)
            goto done;
        int appended = PyList_Append(framed, entry);
        Py_DECREF(entry);
        if (appended < 0)
            goto done;
    }
    out = PyTuple_Pack(2, texts, framed);
done:
    Py_DECREF(seq);
    Py_XDECREF(texts);
    Py_XDECREF(framed);
    return out;
}

static PyMethodDef methods[] = {
    {"frame", frame, METH_VARARGS, "Messages' texts and framing tokens (see the module comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ctxwin.counters._framing", "BaseTokenCounter's message framing in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__framing(void)
{
    content_name = PyUnicode_InternFromString("content");
    type_name = PyUnicode_InternFromString("type");
    name_name = PyUnicode_InternFromString("name");
    extra_name = PyUnicode_InternFromString("additional_kwargs");
    tool_calls_name = PyUnicode_InternFromString("tool_calls");
    invalid_name = PyUnicode_InternFromString("invalid_tool_calls");
    call_id_name = PyUnicode_InternFromString("tool_call_id");
    private_name = PyUnicode_InternFromString("__pydantic_private__");
    received_name = PyUnicode_InternFromString("_openai_tool_calls");
    args_key = PyUnicode_InternFromString("args");
    id_key = PyUnicode_InternFromString("id");
    empty = PyUnicode_InternFromString("");
    if (!content_name || !type_name || !name_name || !extra_name || !tool_calls_name || !invalid_name ||
        !call_id_name || !private_name || !received_name || !args_key || !id_key || !empty)
        return NULL;
    return PyModule_Create(&module_def);
}
