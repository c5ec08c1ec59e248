# The runner inside Xeo's Python sandbox (bubblewrap; see src/udf/sandbox.ts). It imports the
# libraries once (the warm part), says hello with their versions, lowers its own limits, and then
# runs one UDF call at a time for the one user this interpreter serves:
#
#   control in  (fd 3): 4-byte little-endian length + a JSON request
#   control out (fd 4): 4-byte little-endian length + a JSON answer
#   data in:  a file of raw little-endian float32 values (the cube, last dimension fastest),
#             mapped copy-on-write, so a UDF may change the array it gets
#   data out: /io/out.bin, the answer's float32 values in the dimension order Xeo asked for
#
# Everything a call prints, warns or passes to inspect() comes back as log entries (bounded); an
# exception comes back with the UDF's line and a traceback of the UDF's own frames only.
import json
import linecache
import mmap
import os
import resource
import signal
import struct
import threading
import sys
import time
import traceback

CTRL_IN, CTRL_OUT = 3, 4
UDF_FILE = "udf.py"
SETTINGS = json.loads(sys.argv[1])

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy  # noqa: E402
import pandas  # noqa: E402
import xarray  # noqa: E402
import scipy  # noqa: E402
import scipy.ndimage  # noqa: E402,F401
import scipy.signal  # noqa: E402,F401
import scipy.interpolate  # noqa: E402,F401

import openeo  # noqa: E402
import openeo.udf.debug as udf_debug  # noqa: E402
from openeo.metadata import Band, BandDimension, CollectionMetadata, Dimension, SpatialDimension, TemporalDimension  # noqa: E402
from openeo.udf import OpenEoUdfException, StructuredData, UdfData, XarrayDataCube  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Framing


def read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(CTRL_IN, min(n, 1 << 20))
        if not b:
            raise EOFError
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def receive():
    (n,) = struct.unpack("<I", read_exact(4))
    return json.loads(read_exact(n))


def send(msg):
    body = json.dumps(msg, allow_nan=False, default=str).encode()
    data = struct.pack("<I", len(body)) + body
    view = memoryview(data)
    while view:
        k = os.write(CTRL_OUT, view)
        view = view[k:]


# ---------------------------------------------------------------------------------------------
# Logs of one call: print() and warnings, inspect(), bounded


class OutputLimit(Exception):
    pass


class CallLog:
    def __init__(self, max_bytes, hard_bytes):
        self.entries = []
        self.kept = 0
        self.dropped = 0
        self.written = 0
        self.max_bytes = max_bytes
        self.hard_bytes = hard_bytes

    def add(self, entry):
        size = len(json.dumps(entry, default=str))
        if self.kept + size > self.max_bytes:
            self.dropped += 1
            return
        self.kept += size
        self.entries.append(entry)

    def finish(self):
        if self.dropped:
            self.entries.append({"level": "warning", "message": f"{self.dropped} more log entries of this UDF call were dropped: the log of one call keeps {self.max_bytes} bytes."})
        return self.entries


class Capture:
    """sys.stdout / sys.stderr of a call: complete lines become log entries."""

    def __init__(self, log, level):
        self.log = log
        self.level = level
        self.pending = ""

    def write(self, s):
        s = str(s)
        self.log.written += len(s)
        if self.log.written > self.log.hard_bytes:
            raise OutputLimit(f"the UDF wrote more than {self.log.hard_bytes} bytes to its standard output and error")
        self.pending += s
        if "\n" in self.pending:
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self.log.add({"level": self.level, "message": line[:4000]})
        elif len(self.pending) > 4000:
            self.log.add({"level": self.level, "message": self.pending[:4000]})
            self.pending = ""
        return len(s)

    def flush(self):
        pass

    def close_call(self):
        if self.pending:
            self.log.add({"level": self.level, "message": self.pending[:4000]})
            self.pending = ""

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"


# ---------------------------------------------------------------------------------------------
# The user's code


class UdfProblem(Exception):
    """The UDF cannot be used as written (kind 'invalid'), or answered something unusable ('result')."""

    def __init__(self, message, kind="invalid", line=None):
        super().__init__(message)
        self.kind = kind
        self.line = line


modules = {}
# The arrays of the call under way, let go of once its answer is sent.
retained = []


def load(code, code_id):
    """The UDF's module namespace, executed once per code (later calls reuse it, as the reference does)."""
    # Tracebacks quote the lines of the code being run.
    linecache.cache[UDF_FILE] = (len(code), None, code.splitlines(True), UDF_FILE)
    ns = modules.get(code_id)
    if ns is not None:
        return ns
    try:
        compiled = compile(code, UDF_FILE, "exec")
    except SyntaxError as e:
        raise UdfProblem(f"SyntaxError: {e.msg} (line {e.lineno} of the UDF)", "invalid", e.lineno)
    ns = {
        "__name__": "udf",
        "numpy": numpy, "np": numpy, "xarray": xarray, "pandas": pandas, "pd": pandas,
        "XarrayDataCube": XarrayDataCube, "DataCube": XarrayDataCube, "UdfData": UdfData,
        "StructuredData": StructuredData, "CollectionMetadata": CollectionMetadata,
    }
    exec(compiled, ns)
    if len(modules) >= 16:
        modules.pop(next(iter(modules)))
    modules[code_id] = ns
    return ns


def annotation_text(a):
    if isinstance(a, str):
        return a
    if isinstance(a, type):
        return f"{a.__module__}.{a.__qualname__}"
    return str(a)


def wants_data_array(func):
    import inspect as pyinspect

    try:
        params = list(pyinspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params:
        return False
    a = params[0].annotation
    return a is xarray.DataArray or "DataArray" in annotation_text(a)


def call_user(func, first, context):
    """Calls f(cube, context) the way the interface documents it: by keyword when the names fit."""
    import inspect as pyinspect

    try:
        params = pyinspect.signature(func).parameters
    except (TypeError, ValueError):
        return func(first, context)
    names = list(params)
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) == 1 and not any(p.kind == p.VAR_POSITIONAL for p in params.values()) and "context" not in params:
        return func(first)
    if len(names) >= 2 and names[1] == "context":
        return func(first, context=context)
    return func(first, context)


# ---------------------------------------------------------------------------------------------
# Cubes in and out

DIM_TYPES = {"temporal": TemporalDimension, "bands": BandDimension, "spatial": SpatialDimension}


def coords_of(dims):
    coords = {}
    for d in dims:
        labels = d.get("labels")
        if labels is None:
            continue
        if d["type"] == "temporal":
            coords[d["name"]] = pandas.to_datetime([str(l).replace("Z", "") for l in labels])
        else:
            coords[d["name"]] = numpy.asarray(labels)
    return coords


def input_array(req):
    shape = tuple(req["shape"])
    n = int(numpy.prod(shape)) if shape else 1
    if n == 0:
        values = numpy.empty(shape, dtype=numpy.float32)
    else:
        with open(req["input"], "rb") as f:
            mm = mmap.mmap(f.fileno(), n * 4, access=mmap.ACCESS_COPY)
        values = numpy.frombuffer(mm, dtype="<f4", count=n).reshape(shape)
    dims = [d["name"] for d in req["dims"]]
    return xarray.DataArray(values, dims=dims, coords=coords_of(req["dims"]))


def metadata_of(dims):
    out = []
    for d in dims:
        labels = d.get("labels")
        if d["type"] == "bands":
            out.append(BandDimension(d["name"], [Band(str(l)) for l in (labels or [])]))
        elif d["type"] == "temporal":
            out.append(TemporalDimension(d["name"], labels=labels))
        elif d["type"] == "spatial":
            out.append(SpatialDimension(d["name"], labels=None))
        else:
            out.append(Dimension(d["type"], d["name"], labels))
    return CollectionMetadata({}, out)


def as_array(value, like):
    if isinstance(value, XarrayDataCube):
        return value.get_array()
    if isinstance(value, xarray.DataArray):
        return value
    if isinstance(value, UdfData):
        cubes = value.get_datacube_list()
        if len(cubes) != 1:
            raise UdfProblem(f"the UDF answered UdfData with {len(cubes)} data cubes; one is expected", "result")
        return cubes[0].get_array()
    if isinstance(value, numpy.ndarray) and like is not None and value.shape == like.shape:
        return xarray.DataArray(value, dims=like.dims, coords=like.coords)
    if isinstance(value, numpy.ndarray) and like is not None and value.ndim == like.ndim:
        return xarray.DataArray(value, dims=like.dims)
    raise UdfProblem(f"the UDF answered {type(value).__name__}; a data cube (XarrayDataCube or xarray.DataArray) is expected", "result")


def label_out(v):
    if isinstance(v, (numpy.datetime64, pandas.Timestamp)):
        return pandas.Timestamp(v).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, numpy.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return v
    return v if isinstance(v, (int, float, str)) else str(v)


def normalise(result, req):
    """The answer in the dimension order Xeo asked for, with its labels, as float32."""
    expect = req.get("expect")
    squeeze = req.get("squeeze")
    dims = list(result.dims)
    if squeeze and squeeze in dims and result.sizes[squeeze] == 1 and expect is not None and squeeze not in expect:
        result = result.squeeze(squeeze, drop=True)
        dims = list(result.dims)
    if expect is not None:
        if sorted(map(str, dims)) != sorted(expect):
            raise UdfProblem(f"the UDF answered a cube with dimensions ({', '.join(map(str, dims))}); here ({', '.join(expect)}) are expected", "result")
        if dims != expect:
            result = result.transpose(*expect)
    else:
        spatial = [d for d in ("y", "x") if d in dims]
        order = [d for d in dims if d not in spatial] + spatial
        if order != dims:
            result = result.transpose(*order)
    values = result.values
    if values.dtype.kind not in "biuf":
        raise UdfProblem(f"the UDF answered values of type {values.dtype}; numbers are expected", "result")
    labels = []
    for d in result.dims:
        if d in ("x", "y") or d not in result.coords:
            labels.append(None)
        else:
            labels.append([label_out(v) for v in result.coords[d].values])
    return result, numpy.ascontiguousarray(values, dtype="<f4"), labels


def apply_metadata_labels(ns, req, labels, result_dims, context):
    fn = ns.get("apply_metadata")
    if not callable(fn):
        return labels
    meta = call_user(fn, metadata_of(req["dims"]), context)
    if not isinstance(meta, CollectionMetadata):
        raise UdfProblem(f"apply_metadata answered {type(meta).__name__}; CollectionMetadata is expected", "result")
    out = list(labels)
    for i, name in enumerate(result_dims):
        if name in ("x", "y") or not meta.has_dimension(name):
            continue
        new = meta.get_dimension(name).labels
        if new is not None:
            out[i] = [label_out(v) for v in new]
    return out


def write_output(values):
    """
    Writes the answer over the file's old pages (tmpfs keeps them: no new pages to zero), large
    answers in two halves at once (os.pwrite lets go of the GIL), then cuts the file to length.
    """
    data = memoryview(values).cast("B")
    n = len(data)
    fd = os.open("/io/out.bin", os.O_WRONLY)
    try:
        def put(start, end):
            while start < end:
                start += os.pwrite(fd, data[start:end], start)

        if n < (8 << 20):
            put(0, n)
        else:
            half = (n // 2) & ~4095
            other = threading.Thread(target=put, args=(half, n))
            other.start()
            put(0, half)
            other.join()
        os.ftruncate(fd, n)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# One call


def run_series(func, arr, dim, context):
    axis = arr.dims.index(dim)
    moved = numpy.moveaxis(numpy.asarray(arr.values), axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    n = flat.shape[1]
    index = arr.indexes[dim] if dim in arr.coords else pandas.RangeIndex(n)
    out = numpy.empty(flat.shape, dtype=numpy.float32)
    for i in range(flat.shape[0]):
        r = call_user(func, pandas.Series(flat[i], index=index), context)
        r = numpy.asarray(r.values if isinstance(r, pandas.Series) else r, dtype=numpy.float32)
        if r.shape != (n,):
            raise UdfProblem(f"apply_timeseries answered {r.size} values for a series of {n}; the same length is expected", "result")
        out[i] = r
    back = numpy.moveaxis(out.reshape(moved.shape), -1, axis)
    return xarray.DataArray(back, dims=arr.dims, coords=arr.coords)


def run_cube(ns, req, context):
    arr = input_array(req)
    started = time.perf_counter()
    mode = req["mode"]
    dim = req.get("dimension")
    cube_fn = ns.get("apply_datacube") if callable(ns.get("apply_datacube")) else ns.get("apply_hypercube")
    series_fn = ns.get("apply_timeseries")
    data_fn = ns.get("apply_udf_data")
    if callable(series_fn) and (mode == "apply_dimension" or not callable(cube_fn)):
        series_dim = dim if mode == "apply_dimension" else next((d["name"] for d in req["dims"] if d["type"] == "temporal"), None)
        if mode in ("reduce", "run") or series_dim is None:
            raise UdfProblem("apply_timeseries maps a series to a series of the same length: use it in apply_dimension (or apply on a cube with a temporal dimension)")
        result = run_series(series_fn, arr, series_dim, context)
    elif callable(cube_fn):
        if wants_data_array(cube_fn):
            result = as_array(call_user(cube_fn, arr, context), arr)
        else:
            result = as_array(call_user(cube_fn, XarrayDataCube(arr), context), arr)
    elif callable(data_fn):
        data = UdfData(datacube_list=[XarrayDataCube(arr)], user_context=context)
        answer = data_fn(data)
        result = as_array(answer if isinstance(answer, UdfData) else data, arr)
    else:
        raise UdfProblem("the UDF defines none of apply_datacube, apply_hypercube, apply_timeseries or apply_udf_data")
    user_ms = (time.perf_counter() - started) * 1000
    result, values, labels = normalise(result, req)
    retained.extend((arr, result, values))
    labels = apply_metadata_labels(ns, req, labels, list(result.dims), context)
    nbytes = values.nbytes
    if nbytes > SETTINGS["outputBytes"]:
        raise UdfProblem(f"the UDF answered {nbytes} bytes; one call may answer at most {SETTINGS['outputBytes']}", "result")
    write_output(values)
    return {"dims": [str(d) for d in result.dims], "shape": [int(s) for s in values.shape], "labels": labels, "bytes": nbytes, "userMs": user_ms}


def run_json(ns, req, context):
    data_fn = ns.get("apply_udf_data")
    if not callable(data_fn):
        raise UdfProblem("for data that is not a data cube the UDF must define apply_udf_data(data: UdfData)")
    data = UdfData(structured_data_list=[StructuredData(req.get("json"))], user_context=context)
    answer = data_fn(data)
    data = answer if isinstance(answer, UdfData) else data
    items = data.get_structured_data_list()
    value = items[0].data if items else None
    text = json.dumps(value, allow_nan=False, default=_plain)
    limit = min(SETTINGS["outputBytes"], 16 << 20)
    if len(text) > limit:
        raise UdfProblem(f"the UDF answered {len(text)} bytes of JSON; plain values may take at most {limit}", "result")
    return {"json": json.loads(text)}


def _plain(v):
    if isinstance(v, numpy.generic):
        return v.item()
    if isinstance(v, numpy.ndarray):
        return v.tolist()
    raise TypeError(f"{type(v).__name__} is not JSON")


def user_traceback(tb):
    frames = [f for f in traceback.extract_tb(tb) if f.filename == UDF_FILE]
    return frames


def describe_exception(e):
    frames = user_traceback(e.__traceback__)
    name = type(e).__name__
    text = f"{name}: {e}" if str(e) else name
    line = frames[-1].lineno if frames else None
    lines = ["Traceback (most recent call last, UDF frames only):"]
    for f in frames:
        lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line.strip()}")
    lines.append(text)
    where = f" (line {line} of the UDF)" if line else ""
    return {"kind": "exception", "message": f"{text}{where}", "exception": name, "line": line, "stacktrace": "\n".join(lines)}


def handle(req):
    log = CallLog(SETTINGS["logBytes"], SETTINGS["printBytes"])
    out, err = Capture(log, "info"), Capture(log, "warning")
    udf_debug._sink = log.add
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    budget = int(usage.ru_utime + usage.ru_stime) + int(req.get("cpuSeconds", 60)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (min(budget, hard) if hard != resource.RLIM_INFINITY else budget, hard))
    answer = {"type": "result", "id": req["id"]}
    try:
        ns = load(req["code"], req["codeId"])
        context = req.get("context")
        answer.update(run_json(ns, req, context) if req["kind"] == "json" else run_cube(ns, req, context))
        answer["ok"] = True
    except UdfProblem as e:
        answer.update(ok=False, error={"kind": e.kind, "message": str(e), "line": e.line})
    except OutputLimit as e:
        answer.update(ok=False, error={"kind": "limit", "message": str(e)})
    except MemoryError as e:
        d = describe_exception(e)
        d.update(kind="limit", message=f"MemoryError: the UDF needed more memory than the {SETTINGS['memoryBytes']} bytes a call may use{' (line %d of the UDF)' % d['line'] if d['line'] else ''}")
        answer.update(ok=False, error=d)
    except BaseException as e:  # noqa: B902 - a UDF may raise anything, SystemExit included
        answer.update(ok=False, error=describe_exception(e))
    finally:
        out.close_call()
        err.close_call()
        sys.stdout, sys.stderr = saved
        udf_debug._sink = None
        answer["logs"] = log.finish()
        tidy()
    return answer


def tidy():
    """After a call no process the UDF started survives it (the sandbox's PID namespace is ours)."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def versions():
    libs = {}
    for mod in (numpy, pandas, xarray, scipy):
        libs[mod.__name__] = getattr(mod, "__version__", "unknown")
    v = sys.version_info
    return {"python": f"{v.major}.{v.minor}.{v.micro}", "libraries": libs}


def limit_self():
    lim = SETTINGS
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memoryBytes"], lim["memoryBytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["outputBytes"], lim["outputBytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CPU, (lim["lifetimeCpuSeconds"], lim["lifetimeCpuSeconds"]))


def main():
    # The control channel only; standard input is closed, output and error go to Xeo (counted).
    send({"type": "hello", **versions()})
    limit_self()
    while True:
        try:
            req = receive()
        except EOFError:
            return
        if req.get("type") == "call":
            send(handle(req))
            # Freed after the answer is on its way (unmapping a large cube takes milliseconds).
            retained.clear()


if __name__ == "__main__":
    main()
