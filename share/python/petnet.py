"""petnet: PetNet from Python, on petsc4py objects.

    import sys, petsc4py
    petsc4py.init(sys.argv)              # PETSc's options (-net_layers, -malloc_debug, ...) come from the command line
    from petsc4py import PETSc
    import petnet                        # loads libpetnet.so and initializes every PetNet package

    net = petnet.Net().create(PETSc.COMM_WORLD, spec="dense:8,tanh,dense:1", input_shape=(4,))
    X, Y = net.createVecs(16)            # petsc4py Vecs: 16 samples on this rank
    net.forward(X, Y)
    J = net.getJacobianP()               # a petsc4py Mat (MATSHELL): mult = JVP, multTranspose = VJP

Net, Loss, Dataset and Trainer are petsc4py.PETSc.Object subclasses holding the C object: getComm(), getName(),
view(), getRefCount(), handle, destroy() work as for any petsc4py object, and each method calls the C function of the
same name (Net.forward -> NetForward) and checks its PetscErrorCode: a nonzero code raises petnet.Error, a
petsc4py.PETSc.Error whose text is PETSc's traceback and message (its `message` attribute: the message alone).
Arguments are checked in Python first, since this PETSc's argument checks are compiled out: a wrong type (None or a
numpy array where a Vec goes, a spec that is not a string) raises TypeError, a wrong value (a shape with a dimension
below 1, an unknown precision, an integer outside a PetscInt, such as createVecs(2**40)) ValueError, and any call on an
object after destroy() ValueError; each message names the method and the argument and says what to pass. Numbers
that were not measured are None: Trainer.train()'s test loss and accuracy without a test set, the accuracy of
regression targets (Trainer.evaluate(), Trainer.predict()).

How handles cross between Python and C (the soundness argument)
  Python -> C   obj.handle, the address of the C object a petsc4py object holds (Vec, Mat, TAO, and PetNet's own).
  C -> Python   petsc4py's C API (the capsules in PETSc.__pyx_capi__): PyPetscObject_GetPtr(obj) is the address of
                the slot where a petsc4py object keeps its C handle (what petsc4py's own create() methods write).
                  new objects (NetCreate, NetCreateVecs, NetCreateParameterVec): the C function writes the new
                  handle into the slot of a fresh wrapper, which then owns the one reference;
                  borrowed objects (NetGetJacobian, NetGetParameters, DatasetGetBatch, TrainerGetTao, ...):
                  PetscObjectReference() and the handle is put in a fresh wrapper's slot,
                so every wrapper owns exactly one reference and petsc4py's destroy()/deallocation drops it
                (PetscObjectDestroy: the class's own XxxDestroy). This is what PyPetscMat_New() does (setref).
  The Jacobian shells point at their Net without a reference (the Net owns them): the Mats returned here hold the
  Python Net, so a Jacobian keeps its Net alive; Net.destroy() destroys those wrappers first, after which using them
  raises petsc4py's "Object is null" error rather than reaching a destroyed Net. A C object that kept the shell on its
  own (a KSP given it by setOperators) must not outlive the Net, as in C.
  The library must use the libpetsc that petsc4py loaded: checked at import (PetscInitializeCalled seen through
  libpetnet must be true).

Finding libpetnet.so: $PETNET_LIB if set; else lib/libpetnet.so next to share/ in the build tree
(share/python/petnet.py); else PREFIX/lib/libpetnet.so for an installed module (PREFIX/share/petnet/python/petnet.py,
after make install PREFIX=...; PYTHONPATH=PREFIX/share/petnet/python); else the system's library search path.
"""

import collections
import ctypes
import ctypes.util
import os
import sys
import weakref

import petsc4py

if "petsc4py.PETSc" not in sys.modules:
    petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402

__all__ = ["Error", "Net", "Loss", "Dataset", "Trainer", "Results", "Prediction", "library"]

# ---------------------------------------------------------------------------------------------------------------------
# The library and the C types


def _find_library():
    env = os.environ.get("PETNET_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in (("..", "..", "lib"), ("..", "..", "..", "lib")):  # build tree share/python; PREFIX/share/petnet/python
        path = os.path.normpath(os.path.join(here, *rel, "libpetnet.so"))
        if os.path.exists(path):
            return path
    found = ctypes.util.find_library("petnet")
    if found:
        return found
    raise ImportError("petnet: libpetnet.so not found: build PetNet (make), or set PETNET_LIB to the library's path, "
                      "or install it (make install PREFIX=...) and put PREFIX/share/petnet/python on PYTHONPATH")


library = _find_library()
_lib = ctypes.CDLL(library)

if ctypes.c_int.in_dll(_lib, "PetscInitializeCalled").value != 1:
    raise ImportError("petnet: %s uses a libpetsc that petsc4py did not initialize (petsc4py %s loads another PETSc): "
                      "build PetNet against the PETSc petsc4py uses" % (library, petsc4py.__file__))
if PETSc.ScalarType().dtype.kind == "c":
    raise ImportError("petnet: PetNet needs a real PETSc; petsc4py uses a complex one")

_Int = {4: ctypes.c_int32, 8: ctypes.c_int64}[PETSc.IntType().itemsize]
_Real = ctypes.c_double
_Err = ctypes.c_int
_Handle = ctypes.c_void_p
try:  # MPI_Comm: a pointer in Open MPI, an int in MPICH
    from mpi4py import MPI as _MPI

    _Comm = {4: ctypes.c_int, 8: ctypes.c_void_p}[_MPI._sizeof(_MPI.Comm)]
except ImportError:
    _Comm = ctypes.c_void_p
_MAX_DIM = 4


class _Shape(ctypes.Structure):
    _fields_ = [("ndim", _Int), ("dim", _Int * _MAX_DIM)]


# petsc4py's C API through its capsules; PYFUNCTYPE: called with the GIL held, Python errors propagate
_GetName = ctypes.pythonapi.PyCapsule_GetName
_GetName.restype, _GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.restype, _GetPointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _capi(name, restype, *argtypes):
    capsule = PETSc.__pyx_capi__[name]
    return ctypes.PYFUNCTYPE(restype, *argtypes)(_GetPointer(capsule, _GetName(capsule)))


_ObjectGetPtr = _capi("PyPetscObject_GetPtr", ctypes.c_void_p, ctypes.py_object)  # PetscObject* (the wrapper's slot)
_CommGet = _capi("PyPetscComm_Get", _Comm, ctypes.py_object)  # MPI_Comm of a petsc4py Comm


def _proto(name, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = _Err, list(argtypes)
    return f


_P, _PP, _I, _PI, _R, _PR, _S, _B = (_Handle, ctypes.POINTER(_Handle), _Int, ctypes.POINTER(_Int), _Real,
                                     ctypes.POINTER(_Real), ctypes.c_char_p, ctypes.c_int)
_PS = ctypes.POINTER(_Shape)
_C = {
    name: _proto(name, *args)
    for name, args in {
        "PetNetInitializePackage": (),
        "PetNetSetNumThreads": (_I,),
        "PetNetGetNumThreads": (_PI,),
        "LayerSetGemmThinRows": (_I,),
        "LayerGetGemmThinRows": (_PI,),
        "PetNetGetBLASInfo": (ctypes.POINTER(_S), ctypes.POINTER(_S)),
        "PetNetGetCPUFeatures": (ctypes.POINTER(_S),),
        "PetscObjectReference": (_P,),
        "NetCreate": (_Comm, _P),
        "NetSetLayers": (_P, _S),
        "NetSetGraph": (_P, _S),
        "NetGetSpec": (_P, ctypes.c_size_t, ctypes.c_char_p),
        "NetSetInputShape": (_P, _PS),
        "NetGetInputShape": (_P, _PS),
        "NetGetOutputShape": (_P, _PS),
        "NetSetParallel": (_P, ctypes.c_int),
        "NetGetParallel": (_P, ctypes.POINTER(ctypes.c_int)),
        "NetSetPrecision": (_P, ctypes.c_int),
        "NetGetPrecision": (_P, ctypes.POINTER(ctypes.c_int)),
        "NetSetBackend": (_P, ctypes.c_int),
        "NetGetBackend": (_P, ctypes.POINTER(ctypes.c_int)),
        "NetSetOptionsPrefix": (_P, _S),
        "NetAppendOptionsPrefix": (_P, _S),
        "NetSetSeed": (_P, ctypes.c_ulong),
        "NetSetFromOptions": (_P,),
        "NetSetUp": (_P,),
        "NetSetTraining": (_P, _B),
        "NetGetTraining": (_P, ctypes.POINTER(ctypes.c_int)),
        "NetReset": (_P,),
        "NetGetNumLayers": (_P, _PI),
        "NetGetNumParameters": (_P, _PI),
        "NetGetParameters": (_P, _PP),
        "NetSetParameters": (_P, _P),
        "NetCreateParameterVec": (_P, _P),
        "NetInitializeParameters": (_P,),
        "NetGetLayerParameterRange": (_P, _I, _PI, _PI),
        "NetCreateVecs": (_P, _I, _P, _P),
        "NetGetBatchSize": (_P, _PI, _PI),
        "NetForward": (_P, _P, _P),
        "NetBackward": (_P, _P, _P, _P),
        "NetJVP": (_P, _P, _P, _P),
        "NetGetJacobian": (_P, _PP),
        "NetGetJacobianP": (_P, _PP),
        "NetGetLayerJacobian": (_P, _I, _PP),
        "NetGetLayerJacobianP": (_P, _I, _PP),
        "NetTestJacobian": (_P, _P, _P, _PR, _PR),
        "NetSave": (_P, _S),
        "NetTSSetRHS": (_P, _P, _P),
        "NetTSSetSaveTrajectory": (_P,),
        "NetTSCheckAdjoint": (_P,),
        "NetLoad": (_P, _S),
        "LossCreate": (_Comm, _P),
        "LossSetType": (_P, _S),
        "LossGetType": (_P, ctypes.POINTER(ctypes.c_char_p)),
        "LossSetOptionsPrefix": (_P, _S),
        "LossSetFromOptions": (_P,),
        "LossSetUp": (_P,),
        "LossEvaluate": (_P, _P, _P, _PR, _P),
        "LossHessianMult": (_P, _P, _P),
        "LossCountCorrect": (_P, _P, _P, _PI),
        "DatasetCreate": (_Comm, _P),
        "DatasetSetType": (_P, _S),
        "DatasetGetType": (_P, ctypes.POINTER(ctypes.c_char_p)),
        "DatasetSetOptionsPrefix": (_P, _S),
        "DatasetSetFromOptions": (_P,),
        "DatasetSetUp": (_P,),
        "DatasetReset": (_P,),
        "DatasetIDXSetFiles": (_P, _S, _S),
        "DatasetIDXSetDirectory": (_P, _S, _S),
        "DatasetFileSetName": (_P, _S),
        "DatasetHDF5SetNames": (_P, _S, _S),
        "DatasetMemorySetData": (_P, _PS, _P, _I, _P),
        "DatasetSetLimit": (_P, _I),
        "DatasetSetBatchSize": (_P, _I),
        "DatasetGetBatchSize": (_P, _PI),
        "DatasetSetShuffle": (_P, _B),
        "DatasetSetSeed": (_P, ctypes.c_ulong),
        "DatasetSetNormalization": (_P, _R, _R, _R),
        "DatasetGetNormalization": (_P, _PR, _PR, _PR),
        "DatasetSetSampleShape": (_P, _PS),
        "DatasetSetNumClasses": (_P, _I),
        "DatasetGetSize": (_P, _PI),
        "DatasetGetLocalSize": (_P, _PI),
        "DatasetGetSampleShape": (_P, _PS),
        "DatasetGetTargetSize": (_P, _PI),
        "DatasetGetNumClasses": (_P, _PI),
        "DatasetGetNumBatches": (_P, _PI),
        "DatasetBeginEpoch": (_P, _I),
        "DatasetGetBatch": (_P, _I, _PP, _PP),
        "DatasetGetAll": (_P, _PP, _PP),
        "TrainerCreate": (_Comm, _P),
        "TrainerSetNet": (_P, _P),
        "TrainerGetNet": (_P, _PP),
        "TrainerSetLoss": (_P, _P),
        "TrainerSetDatasets": (_P, _P, _P),
        "TrainerGetTao": (_P, _PP),
        "TrainerSetEpochs": (_P, _I),
        "TrainerSetOptionsPrefix": (_P, _S),
        "TrainerSetFromOptions": (_P,),
        "TrainerSetUp": (_P,),
        "TrainerTrain": (_P,),
        "TrainerEvaluate": (_P, _P, _PR, _PR),
        "TrainerPredict": (_P, _P, _P, _PR, _PR),
        "TrainerSavePredictions": (_P, _P, _S),
        "TrainerGetResults": (_P, _PI, _PR, _PR, _PR, _PR),
        "TrainerGetTaoIterations": (_P, _PI),
        "TrainerSaveCheckpoint": (_P, _S),
        "TrainerLoadCheckpoint": (_P, _S),
    }.items()
}

# ---------------------------------------------------------------------------------------------------------------------
# Errors, handles, arguments


class Error(PETSc.Error):
    """A PetNet call failed: str() is PETSc's traceback and message, .ierr the PetscErrorCode, .message the message."""

    def __init__(self, ierr, traceback=()):
        PETSc.Error.__init__(self, ierr)
        self._traceback_ = list(traceback)  # this error's own copy: petsc4py's str() reads self._traceback_
        self.message = self._traceback_[-1] if self._traceback_ else ""


def _check(ierr):
    if ierr:
        # petsc4py's error handler (pushed when petsc4py initializes PETSc) keeps the traceback, the message last
        # (emptied here, so that a later error under another handler cannot show this one's message)
        tb = getattr(PETSc.Error, "_traceback_", None) or []
        error = Error(ierr, tb)
        del tb[:]
        raise error


# Arguments are checked here, before they reach C: this PETSc is built without debugging, so PetscValidHeader() and
# friends are empty and a NULL handle ends in SEGV; ctypes keeps the low bits of an integer too large for its C type
# (createVecs(2**40) made empty Vecs). Each error names the argument and says what to pass.
_INT_MAX = 2 ** (8 * PETSc.IntType().itemsize - 1) - 1
_INT_MIN = -_INT_MAX - 1
_ULONG_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_ulong)) - 1


def _typename(obj):
    t = type(obj)
    return t.__name__ if t.__module__ in ("builtins", None) else "%s.%s" % (t.__module__.split(".")[0], t.__name__)


def _int(value, name, lo=_INT_MIN, hi=_INT_MAX):
    """value as a Python int in [lo, hi] (a PetscInt by default)."""
    import operator

    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("petnet: %s must be an integer, not %s %r" % (name, _typename(value), value)) from None
    if not lo <= v <= hi:
        if hi == _INT_MAX:
            rng = "at least %d (and at most %d, the largest PetscInt)" % (lo, hi)
        else:
            rng = "from %d to %d" % (lo, hi)
        raise ValueError("petnet: %s = %d is out of range: give an integer %s" % (name, v, rng))
    return v


def _real(value, name):
    import numbers

    if not isinstance(value, numbers.Real):
        raise TypeError("petnet: %s must be a number, not %s %r" % (name, _typename(value), value))
    return float(value)


def _s(text, name, example="", optional=False):
    """text (a str, bytes or path) as C bytes; None only when optional (NULL)."""
    if text is None and optional:
        return None
    if isinstance(text, (str, os.PathLike)):
        text = os.fspath(text)
    if isinstance(text, str):
        return text.encode()
    if isinstance(text, bytes):
        return text
    raise TypeError("petnet: %s must be a string%s, not %s %r" % (name, " such as " + example if example else "",
                                                                   _typename(text), text))


def _choice(value, choices, name):
    """The index of value in choices (the C enum)."""
    if isinstance(value, str) and value in choices:
        return choices.index(value)
    raise ValueError("petnet: %s %r is unknown: pass one of %s" % (name, value, ", ".join(repr(c) for c in choices)))


def _h(obj, name, cls=None, optional=False):
    """The C handle of a petsc4py object of class cls (PETSc.Vec by default), or NULL for None when optional."""
    cls = cls or PETSc.Vec
    what = ("petnet." if cls.__module__ == __name__ else "petsc4py ") + cls.__name__
    if obj is None:
        if optional:
            return None
        raise TypeError("petnet: %s must be a %s%s, not None" % (name, what, _HINT.get(cls, "")))
    if not isinstance(obj, cls):
        hint = _HINT.get(cls, "")
        if type(obj).__module__ == "numpy":
            hint = ("; a numpy array is not accepted where the C function takes a Vec: wrap its local part with "
                    "PETSc.Vec().createWithArray(array, comm=comm), or copy it into one (Vec.setArray())")
        raise TypeError("petnet: %s must be a %s, not %s%s" % (name, what, _typename(obj), hint))
    if not obj.handle:
        raise ValueError("petnet: %s is an empty %s (never created, or destroyed): pass a live one" % (name, what))
    return obj.handle


_HINT = {PETSc.Vec: " (e.g. from Net.createVecs() or Net.createParameterVec())"}


def _comm(comm):
    """MPI_Comm of None (PETSC_COMM_WORLD), a petsc4py Comm or an mpi4py communicator."""
    if comm is None:
        comm = PETSc.COMM_WORLD
    elif not isinstance(comm, PETSc.Comm):
        comm = PETSc.Comm(comm)
    return _CommGet(comm)


def _slot(obj):
    """The address of obj's handle slot; obj must be empty, since the C function writes a new object there."""
    if obj.handle:
        raise ValueError("petnet: %s already holds an object; destroy() it first" % type(obj).__name__)
    return _ObjectGetPtr(obj)


def _borrow(cls, handle, **attrs):
    """A new wrapper of class cls holding its own reference to the borrowed C object handle."""
    obj = cls()
    for k, v in attrs.items():
        setattr(obj, k, v)
    if handle:
        _check(_C["PetscObjectReference"](handle))
        _Handle.from_address(_ObjectGetPtr(obj)).value = handle
    return obj


def _new(cls, create, *args):
    """A new wrapper whose slot create(*args, slot) fills with a new C object (owned by the wrapper)."""
    obj = cls()
    _check(create(*args, _slot(obj)))
    return obj


def _shape(shape, name="shape"):
    """A PetNetShape from (f,), (h, w, c), (d, h, w, c), an int, or a string "28x28x1": 1 to 4 dimensions, each at
    least 1, fewer entries than a PetscInt holds (the checks of NetSetInputShape(), said in Python terms)."""
    example = "784, (28, 28, 1) or \"28x28x1\""
    if isinstance(shape, str):
        parts = shape.lower().replace(",", "x").split("x")
        if not all(p.strip().isdigit() for p in parts):
            raise ValueError("petnet: %s %r is not a shape: write positive integers separated by 'x', e.g. 784 or "
                             "28x28x1" % (name, shape))
        dims = tuple(int(p) for p in parts)
    elif isinstance(shape, (list, tuple)):
        dims = tuple(_int(d, "%s[%d] (of %r; shapes are integers)" % (name, i, shape), _INT_MIN, _INT_MAX)
                     for i, d in enumerate(shape))
    elif hasattr(shape, "__index__") and not isinstance(shape, bool):
        dims = (_int(shape, name),)
    else:
        raise TypeError("petnet: %s must be a tuple of integers, an integer or a string, e.g. %s; not %s %r" %
                        (name, example, _typename(shape), shape))
    if not 1 <= len(dims) <= _MAX_DIM:
        raise ValueError("petnet: %s %r has %d dimensions: a sample shape has 1 to %d, (f,), (h, w, c) or (d, h, w, c)"
                         % (name, shape, len(dims), _MAX_DIM))
    size = 1
    for i, d in enumerate(dims):
        if d < 1:
            raise ValueError("petnet: %s %r: dimension %d is %d; every dimension must be at least 1, e.g. %s" %
                             (name, shape, i, d, example))
        size *= d
    if size > _INT_MAX:
        raise ValueError("petnet: %s %r has %d entries per sample, more than a PetscInt holds (%d)" %
                         (name, shape, size, _INT_MAX))
    s = _Shape()
    s.ndim = len(dims)
    for i, d in enumerate(dims):
        s.dim[i] = d
    return s


def _tuple(s):
    return tuple(s.dim[i] for i in range(s.ndim))


def _out(ctype, fn, *args):
    v = ctype()
    _check(fn(*args, ctypes.byref(v)))
    return v.value


class _PetNetObject(PETSc.Object):
    """A PETSc object of one of PetNet's classes: the base of Net, Loss, Dataset and Trainer."""

    _create = None  # the C XxxCreate
    _prefix = None  # the C XxxSetOptionsPrefix

    def create(self, comm=None):
        """XxxCreate on comm (None: PETSC_COMM_WORLD; a petsc4py Comm or an mpi4py communicator)."""
        _check(self._create(_comm(comm), _slot(self)))
        return self

    def _handle(self):
        """The C object; an empty wrapper (never created, or destroyed) is refused here: C would dereference NULL."""
        h = self.handle
        if not h:
            name = type(self).__name__
            raise ValueError("petnet: this %s was destroyed (or never created): make a new one with petnet.%s().create(...)"
                             % (name, name))
        return h

    def setOptionsPrefix(self, prefix):
        _check(self._prefix(self._handle(), _s(prefix, "prefix", "'net_'", optional=True)))
        return self

    def _call(self, name, *args):
        _check(_C[name](self._handle(), *args))
        return self


class _TypedObject(_PetNetObject):
    """A PetNet class with registered types (Loss, Dataset): _cls is its C prefix ("Loss")."""

    _cls = None
    _types = ""

    def create(self, comm=None, type=None):
        _PetNetObject.create(self, comm)
        if type is not None:
            self.setType(type)
        return self

    def setType(self, type):
        return self._call(self._cls + "SetType", _s(type, "%s.setType(): type" % self._cls, self._types))

    def getType(self):
        t = _out(ctypes.c_char_p, _C[self._cls + "GetType"], self._handle())
        return t.decode() if t else None

    def setFromOptions(self):
        return self._call(self._cls + "SetFromOptions")

    def setUp(self):
        return self._call(self._cls + "SetUp")


# ---------------------------------------------------------------------------------------------------------------------
# Net

_PARALLEL = ["replicated", "sharded", "model", "tensor", "sequence", "subgraph"]  # NetParallelTypes, in order
_PRECISION = ["double", "single", "bfloat16"]
_BACKEND = ["native", "onednn"]
_SPEC = "'dense:8,tanh,dense:1' (a layer list) or 'h = dense:8 <- input; o = dense:1 <- h;' (a graph)"


class _NetMat(PETSc.Mat):
    """A Jacobian shell of a Net: a petsc4py Mat that keeps its Net alive (the shell points at the Net unreferenced)."""


class Net(_PetNetObject):
    """A PetNet Net: a graph of layers, its parameters (a PETSc Vec) and its Jacobians (PETSc Mats)."""

    _create = _C["NetCreate"]
    _prefix = _C["NetSetOptionsPrefix"]

    def __init__(self):
        self._mats = []  # weak references to the Jacobian wrappers handed out (petsc4py Mats are not hashable)

    def create(self, comm=None, spec=None, input_shape=None, prefix=None):
        """NetCreate; then, if given, the layers (spec: a layer list, or a graph whose entries end with ';'), the input
        shape ((f,), (h, w, c), (d, h, w, c) or "28x28x1") and the options prefix. Arguments are checked before the
        Net is created."""
        if spec is not None:
            _s(spec, "Net.create(): spec", _SPEC)
        if input_shape is not None:
            _shape(input_shape, "Net.create(): input_shape")
        _PetNetObject.create(self, comm)
        if prefix is not None:
            self.setOptionsPrefix(prefix)
        if spec is not None:
            self.setSpec(spec)
        if input_shape is not None:
            self.setInputShape(input_shape)
        return self

    def destroy(self):
        """NetDestroy, after destroying the Jacobian Mats handed out (they point at this Net)."""
        for ref in self._mats:
            mat = ref()
            if mat is not None:
                mat.destroy()
        self._mats = []
        return PETSc.Object.destroy(self)

    def setSpec(self, spec):
        """NetSetGraph for a graph (entries end with ';'), else NetSetLayers."""
        text = _s(spec, "Net.setSpec(): spec", _SPEC)
        return self._call("NetSetGraph" if b";" in text else "NetSetLayers", text)

    def setLayers(self, layers):
        return self._call("NetSetLayers", _s(layers, "Net.setLayers(): layers", "'dense:8,tanh,dense:1'"))

    def setGraph(self, graph):
        return self._call("NetSetGraph", _s(graph, "Net.setGraph(): graph", "'h = dense:8 <- input; o = dense:1 <- h;'"))

    def getSpec(self):
        buf = ctypes.create_string_buffer(65536)
        self._call("NetGetSpec", ctypes.sizeof(buf), buf)
        return buf.value.decode()

    def setInputShape(self, shape):
        """(f,), (h, w, c), (d, h, w, c), an int or "28x28x1": every dimension at least 1."""
        return self._call("NetSetInputShape", ctypes.byref(_shape(shape, "Net.setInputShape(): shape")))

    def getInputShape(self):
        s = _Shape()
        self._call("NetGetInputShape", ctypes.byref(s))
        return _tuple(s)

    def getOutputShape(self):
        s = _Shape()
        self._call("NetGetOutputShape", ctypes.byref(s))
        return _tuple(s)

    def setParallel(self, mode):
        """'replicated', 'sharded', 'model', 'tensor', 'sequence' or 'subgraph' (-net_parallel)."""
        return self._call("NetSetParallel", _choice(mode, _PARALLEL, "Net.setParallel(): mode"))

    def getParallel(self):
        return _PARALLEL[_out(ctypes.c_int, _C["NetGetParallel"], self._handle())]

    def setPrecision(self, precision):
        """'double', 'single' or 'bfloat16' (-net_precision): the values inside the Net; parameters and Vecs stay double."""
        return self._call("NetSetPrecision", _choice(precision, _PRECISION, "Net.setPrecision(): precision"))

    def getPrecision(self):
        return _PRECISION[_out(ctypes.c_int, _C["NetGetPrecision"], self._handle())]

    def setBackend(self, backend):
        """'native' or 'onednn' (-net_backend): who runs the float GEMMs at single and bfloat16 precision."""
        return self._call("NetSetBackend", _choice(backend, _BACKEND, "Net.setBackend(): backend"))

    def getBackend(self):
        return _BACKEND[_out(ctypes.c_int, _C["NetGetBackend"], self._handle())]

    def appendOptionsPrefix(self, prefix):
        return self._call("NetAppendOptionsPrefix", _s(prefix, "Net.appendOptionsPrefix(): prefix", "'net_'"))

    def setSeed(self, seed):
        """The seed of the parameter initialisation, an integer from 0 to the largest unsigned long."""
        return self._call("NetSetSeed", _int(seed, "Net.setSeed(): seed", 0, _ULONG_MAX))

    def setFromOptions(self):
        return self._call("NetSetFromOptions")

    def setUp(self):
        return self._call("NetSetUp")

    def setTraining(self, training=True):
        return self._call("NetSetTraining", bool(training))

    def getTraining(self):
        return bool(_out(ctypes.c_int, _C["NetGetTraining"], self._handle()))

    def reset(self):
        return self._call("NetReset")

    def getNumLayers(self):
        return _out(_Int, _C["NetGetNumLayers"], self._handle())

    def getNumParameters(self):
        return _out(_Int, _C["NetGetNumParameters"], self._handle())

    def getLayerParameterRange(self, layer):
        lo, hi = _Int(), _Int()
        self._call("NetGetLayerParameterRange", _int(layer, "Net.getLayerParameterRange(): layer", 0), ctypes.byref(lo),
                   ctypes.byref(hi))
        return lo.value, hi.value

    def getParameters(self):
        """The Net's parameter Vec itself (NetGetParameters): changing it changes the network."""
        return _borrow(PETSc.Vec, _out(_Handle, _C["NetGetParameters"], self._handle()))

    def setParameters(self, theta):
        """Copies theta (a petsc4py Vec laid out like createParameterVec()) into the parameters."""
        return self._call("NetSetParameters", _h(theta, "Net.setParameters(): theta", PETSc.Vec))

    def createParameterVec(self):
        return _new(PETSc.Vec, _C["NetCreateParameterVec"], self._handle())

    def initializeParameters(self):
        return self._call("NetInitializeParameters")

    def createVecs(self, nlocal):
        """(X, Y): an input and an output batch of nlocal samples on this rank (NetCreateVecs); nlocal from 0 to
        as many as a PetscInt can index (nlocal times the sample size at most 2^31 - 1 with 32-bit PetscInt)."""
        n = _int(nlocal, "Net.createVecs(): nlocal", 0)
        h = self._handle()
        s = _Shape()
        _check(_C["NetGetInputShape"](h, ctypes.byref(s)))
        size = 1
        for d in _tuple(s):
            size *= d
        if n * size > _INT_MAX:
            raise ValueError("petnet: Net.createVecs(): nlocal = %d samples of %d entries are %d entries, more than a "
                             "PetscInt indexes (%d): create fewer samples per rank" % (n, size, n * size, _INT_MAX))
        X, Y = PETSc.Vec(), PETSc.Vec()
        self._call("NetCreateVecs", n, _slot(X), _slot(Y))
        return X, Y

    def getBatchSize(self):
        """(local, global) number of samples of the last forward pass."""
        n, N = _Int(), _Int()
        self._call("NetGetBatchSize", ctypes.byref(n), ctypes.byref(N))
        return n.value, N.value

    def forward(self, X, Y):
        """Y = f(X; theta), keeping the linearization point. X and Y are petsc4py Vecs (createVecs())."""
        return self._call("NetForward", _h(X, "Net.forward(): X"), _h(Y, "Net.forward(): Y"))

    def backward(self, dY, dX=None, G=None):
        """dX = J_x^T dY (if dX is given); G += J_theta^T dY (if G is given), at the last forward pass."""
        return self._call("NetBackward", _h(dY, "Net.backward(): dY"), _h(dX, "Net.backward(): dX", optional=True),
                          _h(G, "Net.backward(): G", optional=True))

    def jvp(self, dX, dtheta, dY):
        """dY = J_x dX + J_theta dtheta (dX or dtheta may be None: zero)."""
        return self._call("NetJVP", _h(dX, "Net.jvp(): dX", optional=True),
                          _h(dtheta, "Net.jvp(): dtheta", optional=True), _h(dY, "Net.jvp(): dY"))

    def _jacobian(self, name, *args):
        mat = _borrow(_NetMat, _out(_Handle, _C[name], self._handle(), *args), _net=self)
        self._mats = [ref for ref in self._mats if ref() is not None] + [weakref.ref(mat)]
        return mat

    def getJacobian(self):
        """d output / d input at the last forward pass: a MATSHELL (mult = JVP, multTranspose = VJP)."""
        return self._jacobian("NetGetJacobian")

    def getJacobianP(self):
        """d output / d parameters at the last forward pass: a MATSHELL (multTranspose overwrites, no accumulation)."""
        return self._jacobian("NetGetJacobianP")

    def getLayerJacobian(self, layer):
        return self._jacobian("NetGetLayerJacobian", _int(layer, "Net.getLayerJacobian(): layer", 0))

    def getLayerJacobianP(self, layer):
        return self._jacobian("NetGetLayerJacobianP", _int(layer, "Net.getLayerJacobianP(): layer", 0))

    def testJacobian(self, X, viewer=None):
        """NetTestJacobian: (dot-product test error, finite-difference error) at the batch X."""
        d, f = _Real(), _Real()
        self._call("NetTestJacobian", _h(X, "Net.testJacobian(): X"),
                   _h(viewer, "Net.testJacobian(): viewer", PETSc.Viewer, optional=True), ctypes.byref(d),
                   ctypes.byref(f))
        return d.value, f.value

    def save(self, filename):
        """NetSave: architecture and parameters; '.h5' is HDF5, any other name PETSc binary."""
        return self._call("NetSave", _s(filename, "Net.save(): filename", "'model.h5'"))

    def load(self, filename):
        """NetLoad: replaces the layers, input shape and parameters by those of a NetSave() file."""
        return self._call("NetLoad", _s(filename, "Net.load(): filename", "'model.h5'"))


# ---------------------------------------------------------------------------------------------------------------------
# Loss


class Loss(_TypedObject):
    """A PetNet Loss: 'crossentropy', 'mse', 'l1'."""

    _create = _C["LossCreate"]
    _prefix = _C["LossSetOptionsPrefix"]
    _cls = "Loss"
    _types = "'crossentropy', 'mse' or 'l1'"

    def evaluate(self, Y, T, dY=None):
        """The mean loss over the global batch; dY = d loss / dY if given."""
        f = _Real()
        self._call("LossEvaluate", _h(Y, "Loss.evaluate(): Y"), _h(T, "Loss.evaluate(): T"), ctypes.byref(f),
                   _h(dY, "Loss.evaluate(): dY", optional=True))
        return f.value

    def hessianMult(self, V, HV):
        return self._call("LossHessianMult", _h(V, "Loss.hessianMult(): V"), _h(HV, "Loss.hessianMult(): HV"))

    def countCorrect(self, Y, T):
        return _out(_Int, _C["LossCountCorrect"], self._handle(), _h(Y, "Loss.countCorrect(): Y"),
                    _h(T, "Loss.countCorrect(): T"))


# ---------------------------------------------------------------------------------------------------------------------
# Dataset


class Dataset(_TypedObject):
    """A PetNet Dataset: 'idx', 'binary', 'hdf5', 'memory' (petsc4py Vecs)."""

    _create = _C["DatasetCreate"]
    _prefix = _C["DatasetSetOptionsPrefix"]
    _cls = "Dataset"
    _types = "'idx', 'binary', 'hdf5' or 'memory'"

    def reset(self):
        return self._call("DatasetReset")

    def setIDXFiles(self, images, labels):
        return self._call("DatasetIDXSetFiles", _s(images, "Dataset.setIDXFiles(): images"),
                          _s(labels, "Dataset.setIDXFiles(): labels"))

    def setIDXDirectory(self, directory, split):
        """DIR/split-images-idx3-ubyte[.gz]; split 'train' or 't10k'."""
        return self._call("DatasetIDXSetDirectory", _s(directory, "Dataset.setIDXDirectory(): directory"),
                          _s(split, "Dataset.setIDXDirectory(): split", "'train' or 't10k'"))

    def setFile(self, filename):
        """The file of a binary or hdf5 Dataset."""
        return self._call("DatasetFileSetName", _s(filename, "Dataset.setFile(): filename", "'data.h5'"))

    def setHDF5Names(self, inputs, targets):
        return self._call("DatasetHDF5SetNames", _s(inputs, "Dataset.setHDF5Names(): inputs"),
                          _s(targets, "Dataset.setHDF5Names(): targets"))

    def setMemoryData(self, shape, X, T, tsize=1):
        """Inputs X ([N][sample], a petsc4py Vec) and targets T ([N][tsize]); both referenced, never modified."""
        s = _shape(shape, "Dataset.setMemoryData(): shape")
        return self._call("DatasetMemorySetData", ctypes.byref(s), _h(X, "Dataset.setMemoryData(): X"),
                          _int(tsize, "Dataset.setMemoryData(): tsize", 1), _h(T, "Dataset.setMemoryData(): T"))

    def setLimit(self, limit):
        """Only the first limit samples (-1: all)."""
        return self._call("DatasetSetLimit", _int(limit, "Dataset.setLimit(): limit", -1))

    def setBatchSize(self, batch):
        """Global mini-batch size (-1: all samples in one batch)."""
        return self._call("DatasetSetBatchSize", _int(batch, "Dataset.setBatchSize(): batch", -1))

    def getBatchSize(self):
        return _out(_Int, _C["DatasetGetBatchSize"], self._handle())

    def setShuffle(self, shuffle=True):
        return self._call("DatasetSetShuffle", bool(shuffle))

    def setSeed(self, seed):
        return self._call("DatasetSetSeed", _int(seed, "Dataset.setSeed(): seed", 0, _ULONG_MAX))

    def setNormalization(self, scale, mean, std):
        """x -> (scale x - mean) / std."""
        return self._call("DatasetSetNormalization", _real(scale, "Dataset.setNormalization(): scale"),
                          _real(mean, "Dataset.setNormalization(): mean"), _real(std, "Dataset.setNormalization(): std"))

    def getNormalization(self):
        s, m, d = _Real(), _Real(), _Real()
        self._call("DatasetGetNormalization", ctypes.byref(s), ctypes.byref(m), ctypes.byref(d))
        return s.value, m.value, d.value

    def setSampleShape(self, shape):
        return self._call("DatasetSetSampleShape", ctypes.byref(_shape(shape, "Dataset.setSampleShape(): shape")))

    def setNumClasses(self, nclasses):
        """Labels are integers in [0, nclasses); 0: regression targets."""
        return self._call("DatasetSetNumClasses", _int(nclasses, "Dataset.setNumClasses(): nclasses", 0))

    def getSize(self):
        return _out(_Int, _C["DatasetGetSize"], self._handle())

    def getLocalSize(self):
        return _out(_Int, _C["DatasetGetLocalSize"], self._handle())

    def getSampleShape(self):
        s = _Shape()
        self._call("DatasetGetSampleShape", ctypes.byref(s))
        return _tuple(s)

    def getTargetSize(self):
        return _out(_Int, _C["DatasetGetTargetSize"], self._handle())

    def getNumClasses(self):
        return _out(_Int, _C["DatasetGetNumClasses"], self._handle())

    def getNumBatches(self):
        return _out(_Int, _C["DatasetGetNumBatches"], self._handle())

    def beginEpoch(self, epoch):
        return self._call("DatasetBeginEpoch", _int(epoch, "Dataset.beginEpoch(): epoch", 0))

    def getBatch(self, b):
        """(X, T) of batch b: the Dataset's Vecs, overwritten by the next getBatch()."""
        X, T = _Handle(), _Handle()
        self._call("DatasetGetBatch", _int(b, "Dataset.getBatch(): b", 0), ctypes.byref(X), ctypes.byref(T))
        return _borrow(PETSc.Vec, X.value), _borrow(PETSc.Vec, T.value)

    def getAll(self):
        """(X, T): every sample in source order, the Dataset's storage (do not modify)."""
        X, T = _Handle(), _Handle()
        self._call("DatasetGetAll", ctypes.byref(X), ctypes.byref(T))
        return _borrow(PETSc.Vec, X.value), _borrow(PETSc.Vec, T.value)


# ---------------------------------------------------------------------------------------------------------------------
# Trainer

# What was not measured is None: the test loss and accuracy without a test set, the accuracy of regression targets
Results = collections.namedtuple("Results", "epochs train_loss test_loss test_accuracy seconds")
Prediction = collections.namedtuple("Prediction", "outputs loss accuracy")


def _measured(value, unmeasured):
    """None for C's "not measured" marker (PETSC_MAX_REAL for a loss, -1 for a loss or an accuracy)."""
    return None if value == unmeasured or (unmeasured == -1.0 and value < 0) else value


class Trainer(_PetNetObject):
    """A PetNet Trainer: a Net, a Loss and Datasets driven by a TAO solver."""

    _create = _C["TrainerCreate"]
    _prefix = _C["TrainerSetOptionsPrefix"]

    def setNet(self, net):
        return self._call("TrainerSetNet", _h(net, "Trainer.setNet(): net", Net))

    def getNet(self):
        return _borrow(Net, _out(_Handle, _C["TrainerGetNet"], self._handle()))

    def setLoss(self, loss):
        return self._call("TrainerSetLoss", _h(loss, "Trainer.setLoss(): loss", Loss))

    def setDatasets(self, train, test=None):
        """Datasets without a prefix get "train_" and "test_" (-train_dataset_limit, ...)."""
        return self._call("TrainerSetDatasets", _h(train, "Trainer.setDatasets(): train", Dataset),
                          _h(test, "Trainer.setDatasets(): test", Dataset, optional=True))

    def getTao(self):
        """The TAO solver, a petsc4py TAO."""
        return _borrow(PETSc.TAO, _out(_Handle, _C["TrainerGetTao"], self._handle()))

    def setEpochs(self, epochs):
        return self._call("TrainerSetEpochs", _int(epochs, "Trainer.setEpochs(): epochs", 0))

    def setFromOptions(self):
        return self._call("TrainerSetFromOptions")

    def setUp(self):
        return self._call("TrainerSetUp")

    def train(self):
        """TrainerTrain; returns getResults()."""
        self._call("TrainerTrain")
        return self.getResults()

    def evaluate(self, dataset):
        """(mean loss, accuracy) of the Net on a Dataset, in evaluation mode; accuracy None for regression targets."""
        f, a = _Real(), _Real()
        self._call("TrainerEvaluate", _h(dataset, "Trainer.evaluate(): dataset", Dataset), ctypes.byref(f),
                   ctypes.byref(a))
        return f.value, _measured(a.value, -1.0)

    def predict(self, dataset, outputs=True):
        """TrainerPredict: the Net on every sample of a Dataset, in evaluation mode, with the Net's recorded input
        normalisation unless the Dataset has its own. Returns Prediction(outputs, loss, accuracy): outputs a new
        petsc4py Vec [N][nout] in file order, distributed as the Dataset's samples (None if outputs=False); loss None
        when the Dataset has no targets; accuracy None without class labels. The Trainer needs a Net and a Loss,
        no training Dataset."""
        f, a = _Real(), _Real()
        Y = PETSc.Vec()
        self._call("TrainerPredict", _h(dataset, "Trainer.predict(): dataset", Dataset), _slot(Y) if outputs else None,
                   ctypes.byref(f), ctypes.byref(a))
        return Prediction(Y if outputs else None, _measured(f.value, -1.0), _measured(a.value, -1.0))

    def savePredictions(self, outputs, filename):
        """TrainerSavePredictions: writes the outputs of predict() to a file (see TrainerSavePredictions)."""
        return self._call("TrainerSavePredictions", _h(outputs, "Trainer.savePredictions(): outputs"),
                          _s(filename, "Trainer.savePredictions(): filename", "'predictions.h5'"))

    def getResults(self):
        """Results(epochs, train_loss, test_loss, test_accuracy, seconds) of the last train(); test_loss and
        test_accuracy are None without a test set, test_accuracy None for regression targets."""
        e, r = _Int(), [_Real() for _ in range(4)]
        self._call("TrainerGetResults", ctypes.byref(e), *[ctypes.byref(x) for x in r])
        train, test, acc, seconds = [x.value for x in r]
        return Results(e.value, train, _measured(test, sys.float_info.max), _measured(acc, -1.0), seconds)

    def getTaoIterations(self):
        return _out(_Int, _C["TrainerGetTaoIterations"], self._handle())

    def saveCheckpoint(self, filename):
        return self._call("TrainerSaveCheckpoint", _s(filename, "Trainer.saveCheckpoint(): filename", "'run.ckpt'"))

    def loadCheckpoint(self, filename):
        return self._call("TrainerLoadCheckpoint", _s(filename, "Trainer.loadCheckpoint(): filename", "'run.ckpt'"))


# ---------------------------------------------------------------------------------------------------------------------
# Threads of this process


def setNumThreads(nthreads):
    """PetNetSetNumThreads: the threads of this process for the layers' loops (-net_threads); results do not depend
    on the number."""
    _check(_C["PetNetSetNumThreads"](_int(nthreads, "setNumThreads(): nthreads", 1)))


def getNumThreads():
    """PetNetGetNumThreads: the threads of this process (the default, OMP_NUM_THREADS or the cores over the ranks on
    the node, until set)."""
    return _out(_Int, _C["PetNetGetNumThreads"])


def setGemmThinRows(rows):
    """LayerSetGemmThinRows: the widest batch (0 to 64, default 64; 0: BLAS always) whose double GEMMs run on PetNet's
    thin AVX-512 kernels (-petnet_gemm_thin_rows)."""
    _check(_C["LayerSetGemmThinRows"](_int(rows, "setGemmThinRows(): rows", 0)))


def getGemmThinRows():
    """LayerGetGemmThinRows: the widest batch on the thin kernels (LayerSetGemmThinRows())."""
    return _out(_Int, _C["LayerGetGemmThinRows"])


def getBLASInfo():
    """PetNetGetBLASInfo: (name, core) of the BLAS the layers' GEMMs call, e.g. ("OpenBLAS 0.3.21", "Zen"); another
    BLAS is named by its library, with core "unknown"."""
    name, core = ctypes.c_char_p(), ctypes.c_char_p()
    _check(_C["PetNetGetBLASInfo"](ctypes.byref(name), ctypes.byref(core)))
    return name.value.decode(), core.value.decode()


def getCPUFeatures():
    """PetNetGetCPUFeatures: the CPU's vector and matrix units that matter to GEMMs, e.g. "avx avx2 fma"."""
    return _out(_S, _C["PetNetGetCPUFeatures"]).decode()


# ---------------------------------------------------------------------------------------------------------------------
# A Net in a petsc4py TS


def tsSetRHS(ts, net, u=None):
    """NetTSSetRHS: the Net is the right-hand side of the petsc4py TS, du/dt = N(u; theta) (explicit types: the RHS
    form; implicit ones: F = udot - N(u) with the Jacobian shells), the parameters NetGetParameters() (the layout of
    TSSetCostGradients()' mu). Set the TS type first; the TS keeps a reference to the Net."""
    _check(_C["NetTSSetRHS"](_h(ts, "tsSetRHS(): ts", PETSc.TS), _h(net, "tsSetRHS(): net", Net),
                             _h(u, "tsSetRHS(): u", optional=True)))


def tsSetSaveTrajectory(ts):
    """NetTSSetSaveTrajectory: what TSAdjointSolve() needs, called before TSSolve()."""
    _check(_C["NetTSSetSaveTrajectory"](_h(ts, "tsSetSaveTrajectory(): ts", PETSc.TS)))


def tsCheckAdjoint(ts):
    """NetTSCheckAdjoint: refuses the TS types whose discrete adjoint is wrong in this PETSc."""
    _check(_C["NetTSCheckAdjoint"](_h(ts, "tsCheckAdjoint(): ts", PETSc.TS)))


# Every PetNet package (the ode layer kind included), as PetNetInitialize() does after PetscInitialize()
_check(_C["PetNetInitializePackage"]())
