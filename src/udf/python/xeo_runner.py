# The runner inside Xeo's Python sandbox (bubblewrap; see src/udf/sandbox.ts). It imports the
# libraries once (the warm part), says hello with their versions, lowers its own limits, and then
# runs one UDF call at a time for the one user this interpreter serves:
#
#   control in  (fd 3): 4-byte little-endian length + a JSON request
#   control out (fd 4): 4-byte little-endian length + a JSON answer
#   data in:  /io/in.bin, raw little-endian float32 values (the cube, last dimension fastest),
#             mapped copy-on-write, so a UDF may change the array it gets
#   data out: /io/out.bin, the answer's float32 values in the dimension order Xeo asked for
#   (both stay mapped from one call to the next: see xeo/exchange.py)
#
# Everything a call prints, warns or passes to inspect() comes back as log entries (bounded); an
# exception comes back with the UDF's line and a traceback of the UDF's own frames only.
import json
import linecache
import os
import resource
import signal
import struct
import sys
import time
import traceback

CTRL_IN, CTRL_OUT = 3, 4
UDF_FILE = "udf.py"
SETTINGS = json.loads(sys.argv[1])
RUNNER_PID = os.getpid()


def _in_forked_child():
    """A process the UDF forked loses the control channel: only the runner itself speaks on it."""
    for fd in (CTRL_IN, CTRL_OUT):
        try:
            os.close(fd)
        except OSError:
            pass


os.register_at_fork(after_in_child=_in_forked_child)


def leave_if_forked():
    """A forked copy of the runner that got back into the runner's code ends here, silently."""
    if os.getpid() != RUNNER_PID:
        os._exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy  # noqa: E402
import pandas  # noqa: E402
import xarray  # noqa: E402
import scipy  # noqa: E402
import scipy.ndimage  # noqa: E402,F401
import scipy.signal  # noqa: E402,F401
import scipy.interpolate  # noqa: E402,F401

import openeo.udf.debug as udf_debug  # noqa: E402
from openeo.metadata import CollectionMetadata  # noqa: E402
from openeo.udf import StructuredData, UdfData, XarrayDataCube  # noqa: E402
from xeo.calllog import CallLog, Capture, OutputLimit  # noqa: E402
from xeo.cubes import UdfProblem, apply_metadata_labels, as_array, call_user, input_array, normalise, run_series, wants_data_array  # noqa: E402
from xeo.exchange import InputFile, OutputFile  # noqa: E402


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
    leave_if_forked()
    body = json.dumps(msg, allow_nan=False, default=str).encode()
    data = struct.pack("<I", len(body)) + body
    view = memoryview(data)
    while view:
        k = os.write(CTRL_OUT, view)
        view = view[k:]


# ---------------------------------------------------------------------------------------------
# The user's code

modules = {}
# The arrays of the call under way, let go of once its answer is sent.
retained = []
# in.bin and out.bin, mapped once and kept (see exchange.py); out.bin while it takes at most an
# eighth of the address space a call may use.
INPUTS = InputFile()
OUTPUTS = OutputFile(SETTINGS["memoryBytes"] // 8)


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


def run_cube(ns, req, context):
    arr = input_array(req, INPUTS)
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
    nbytes = values.size * 4
    if nbytes > SETTINGS["outputBytes"]:
        raise UdfProblem(f"the UDF answered {nbytes} bytes; one call may answer at most {SETTINGS['outputBytes']}", "result")
    OUTPUTS.write(values)
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
        leave_if_forked()
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
            if req.get("kind") != "cube":
                # No cube: its kept mapping would only take address space from this call.
                INPUTS.drop()
            send(handle(req))
            # Freed after the answer is on its way (unmapping a large cube takes milliseconds),
            # as are the pages of the input the UDF wrote to.
            retained.clear()
            INPUTS.restore()


if __name__ == "__main__":
    main()
