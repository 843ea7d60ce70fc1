// Small CPython types of the extension's own (Decision, Outcome): what they share. They are
// returned by every `evaluate` and `execute`, so they are not pybind11 classes: creating and
// freeing a pybind11 instance (its registry entry) costs several times more.
#pragma once

#include <pybind11/pybind11.h>

#include <structmember.h>

#include <cstddef>
#include <exception>
#include <new>
#include <utility>

namespace clampai::python {

namespace py = pybind11;

/// Runs `f` (returning a py::object) for a CPython slot: C++ and pybind11 errors become the
/// pending Python error and nullptr.
template <typename F>
PyObject* guarded(F&& f) {
  try {
    return f().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

/// The layout of such an object: the header, a list of weak references (pybind11 instances
/// could be weakly referenced, and so can these) and a `T` in raw storage, so that the layout
/// is standard and its offsets defined.
template <typename T>
struct Boxed {
  PyObject_HEAD PyObject* weakrefs;
  alignas(T) unsigned char storage[sizeof(T)];

  static T& of(PyObject* self) {
    return *std::launder(reinterpret_cast<T*>(reinterpret_cast<Boxed*>(self)->storage));
  }

  /// `tp_dealloc`.
  static void dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if (reinterpret_cast<Boxed*>(self)->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
    of(self).~T();
    type->tp_free(self);
    Py_DECREF(type);  // heap types are referenced by their instances
  }

  /// `Py_tp_members`: the weak reference list.
  static PyMemberDef* members() {
    static PyMemberDef defs[] = {
        {"__weaklistoffset__", T_PYSSIZET, offsetof(Boxed, weakrefs), READONLY, nullptr},
        {nullptr, 0, 0, 0, nullptr}};
    return defs;
  }

  /// Makes the heap type `qualified` (`clampai._clampai.NAME`, documented by `doc`) of these
  /// getters, methods, repr and truth value (static arrays: the type refers to them), and adds
  /// it to `m` as `name`, which owns it.
  static PyTypeObject* add_type(py::module_& m,
                                const char* name,
                                const char* qualified,
                                const char* doc,
                                PyGetSetDef* getset,
                                PyMethodDef* methods,
                                reprfunc repr,
                                inquiry truth) {
    PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(&Boxed::dealloc)},
                           {Py_tp_members, members()},
                           {Py_tp_getset, getset},
                           {Py_tp_methods, methods},
                           {Py_tp_repr, reinterpret_cast<void*>(repr)},
                           {Py_nb_bool, reinterpret_cast<void*>(truth)},
                           {Py_tp_doc, const_cast<char*>(doc)},
                           {0, nullptr}};
    PyType_Spec spec = {qualified,
                        static_cast<int>(sizeof(Boxed)),
                        0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                        slots};
    PyObject* type = PyType_FromSpec(&spec);
    if (type == nullptr) throw py::error_already_set();
    m.add_object(name, py::reinterpret_steal<py::object>(type));
    return reinterpret_cast<PyTypeObject*>(type);
  }

  /// A new instance of `type` (made by add_type) holding `value`.
  static py::object make(PyTypeObject* type, T value) {
    PyObject* obj = type->tp_alloc(type, 0);
    if (obj == nullptr) throw py::error_already_set();
    new (reinterpret_cast<Boxed*>(obj)->storage) T(std::move(value));
    return py::reinterpret_steal<py::object>(obj);
  }
};

}  // namespace clampai::python
