# Cubes into and out of a UDF: the input's values (exchange.py) as an xarray.DataArray with its
# labels as coordinates, the user's functions called as the interface documents them, and the
# answer in the dimension order Xeo asked for.
import numpy
import pandas
import xarray

from openeo.metadata import Band, BandDimension, CollectionMetadata, Dimension, SpatialDimension, TemporalDimension
from openeo.udf import UdfData, XarrayDataCube


class UdfProblem(Exception):
    """The UDF cannot be used as written (kind 'invalid'), or answered something unusable ('result')."""

    def __init__(self, message, kind="invalid", line=None):
        super().__init__(message)
        self.kind = kind
        self.line = line


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


def input_array(req, inputs):
    """The call's cube as an xarray.DataArray over the values of in.bin (no copy), its labels as coordinates."""
    values = inputs.array(req.get("input"), tuple(req["shape"]))
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
    values = numpy.asarray(result.values)
    if values.dtype.kind not in "biuf":
        raise UdfProblem(f"the UDF answered values of type {values.dtype}; numbers are expected", "result")
    labels = []
    for d in result.dims:
        if d in ("x", "y") or d not in result.coords:
            labels.append(None)
        else:
            labels.append([label_out(v) for v in result.coords[d].values])
    # As they are (any layout, any number type): they become float32 in C order as they are written out.
    return result, values, labels


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
