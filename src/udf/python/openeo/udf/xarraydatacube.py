# XarrayDataCube: a data cube handed to and returned by a UDF, a thin holder of an
# xarray.DataArray whose dimensions (t, bands, y, x, ...) carry their labels as coordinates.
import numpy
import xarray


class XarrayDataCube:
    def __init__(self, array: xarray.DataArray):
        if isinstance(array, numpy.ndarray):
            array = xarray.DataArray(array)
        if not isinstance(array, xarray.DataArray):
            raise TypeError(f"XarrayDataCube holds an xarray.DataArray, not {type(array).__name__}")
        self._array = array

    def get_array(self) -> xarray.DataArray:
        """The cube's values with their dimensions and labels."""
        return self._array

    @property
    def array(self) -> xarray.DataArray:
        return self._array

    @property
    def id(self):
        return self._array.name

    def to_dict(self) -> dict:
        a = self._array
        return {
            "id": a.name,
            "data": a.values.tolist(),
            "dimensions": [
                {"name": d, **({"coordinates": a.coords[d].values.tolist()} if d in a.coords else {})}
                for d in a.dims
            ],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "XarrayDataCube":
        dims = [x["name"] for x in d.get("dimensions", [])]
        coords = {x["name"]: x["coordinates"] for x in d.get("dimensions", []) if "coordinates" in x}
        data = numpy.asarray(d["data"])
        return cls(xarray.DataArray(data, dims=dims or None, coords=coords or None, name=d.get("id")))

    def __repr__(self) -> str:
        a = self._array
        return f"<XarrayDataCube shape:{tuple(a.shape)} dims:{tuple(a.dims)}>"
