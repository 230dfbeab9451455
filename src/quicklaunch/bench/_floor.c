/* The floor of any Python launcher: a METH_FASTCALL function that takes the
 * launch's arguments and does nothing with them. The launch benchmark times
 * it beside quicklaunch's launchers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *nothing(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    (void)args;
    (void)nargs;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"nothing", (PyCFunction)(void (*)(void))nothing, METH_FASTCALL,
     "nothing(*args): returns None; the cost of calling into C."},
    {NULL}};

static struct PyModuleDef floor_module = {PyModuleDef_HEAD_INIT, "quicklaunch.bench._floor",
                                          "The launch benchmark's floor.", -1, methods};

PyMODINIT_FUNC PyInit__floor(void) { return PyModule_Create(&floor_module); }
