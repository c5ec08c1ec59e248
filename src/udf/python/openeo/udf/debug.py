# inspect(): a UDF's way to write to the log of its job (or of its synchronous request). The
# runner collects the entries of a call (bounded in size) and hands them to Xeo with the result.
import numpy
import xarray

LEVELS = ("error", "warning", "info", "debug")

# Filled by the runner for each call: a function taking one log entry (a dict).
_sink = None


def _summary(data):
    """A JSON-friendly description of data: cubes by their dimensions, shape and value range."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    from openeo.udf.xarraydatacube import XarrayDataCube

    if isinstance(data, XarrayDataCube):
        data = data.get_array()
    if isinstance(data, (xarray.DataArray, numpy.ndarray)):
        values = numpy.asarray(data, dtype="float64") if data.size and data.dtype.kind in "biuf" else None
        finite = values[numpy.isfinite(values)] if values is not None else None
        out = {"shape": [int(s) for s in data.shape], "dtype": str(data.dtype)}
        if isinstance(data, xarray.DataArray):
            out["dims"] = [str(d) for d in data.dims]
        if finite is not None and finite.size:
            out.update({"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean())})
        return out
    if isinstance(data, dict):
        return {str(k): _summary(v) for k, v in list(data.items())[:100]}
    if isinstance(data, (list, tuple)):
        return [_summary(v) for v in list(data)[:100]]
    return repr(data)[:1000]


def inspect(data=None, message: str = "", code: str = "User", level: str = "info"):
    """Writes `message` (and a summary of `data`) to the log; answers `data` unchanged."""
    lvl = str(level).lower()
    if lvl not in LEVELS:
        lvl = "info"
    entry = {"level": lvl, "message": str(message) if message else f"inspect ({code})", "code": str(code)}
    if data is not None:
        entry["data"] = _summary(data)
    if _sink is not None:
        _sink(entry)
    return data
