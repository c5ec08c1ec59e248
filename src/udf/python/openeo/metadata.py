# CollectionMetadata: the dimensions and labels of a cube, as `apply_metadata(metadata, context)`
# gets and answers them. Enough of the openEO client's class for UDFs that rename or add labels
# (bands especially): every method answers a new object, the original is left as it was.
from typing import List, Optional


class Band:
    def __init__(self, name: str, common_name: Optional[str] = None, wavelength_um: Optional[float] = None, aliases=None, gsd=None):
        self.name = name
        self.common_name = common_name
        self.wavelength_um = wavelength_um
        self.aliases = aliases
        self.gsd = gsd

    def __repr__(self) -> str:
        return f"Band({self.name!r})"


class Dimension:
    def __init__(self, type: str, name: str, labels: Optional[list] = None):
        self.type = type
        self.name = name
        self._labels = list(labels) if labels is not None else None

    @property
    def labels(self) -> Optional[list]:
        return self._labels

    def rename(self, name: str) -> "Dimension":
        return type(self)._like(self, name=name)

    def rename_labels(self, target: list, source: Optional[list] = None) -> "Dimension":
        return type(self)._like(self, labels=_renamed(self._labels, target, source))

    @classmethod
    def _like(cls, d, name=None, labels=None):
        return cls(d.type, name if name is not None else d.name, labels if labels is not None else d._labels)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, labels={self._labels!r})"


class SpatialDimension(Dimension):
    def __init__(self, name: str, extent=None, crs=None, step=None, labels=None, type: str = "spatial"):
        super().__init__("spatial", name, labels)
        self.extent = extent
        self.crs = crs
        self.step = step


class TemporalDimension(Dimension):
    def __init__(self, name: str, extent=None, labels=None, type: str = "temporal"):
        super().__init__("temporal", name, labels)
        self.extent = extent


class BandDimension(Dimension):
    def __init__(self, name: str, bands: List[Band], type: str = "bands"):
        super().__init__("bands", name, [b.name for b in bands])
        self.bands = list(bands)

    @classmethod
    def _like(cls, d, name=None, labels=None):
        names = labels if labels is not None else [b.name for b in d.bands]
        by_name = {b.name: b for b in d.bands}
        return cls(name if name is not None else d.name, [by_name.get(n) or Band(str(n)) for n in names])

    @property
    def band_names(self) -> List[str]:
        return [b.name for b in self.bands]

    @property
    def common_names(self) -> List[Optional[str]]:
        return [b.common_name for b in self.bands]

    def band_index(self, band) -> int:
        if isinstance(band, int):
            return band
        for i, b in enumerate(self.bands):
            if band in (b.name, b.common_name):
                return i
        raise ValueError(f"no band {band!r} among {self.band_names}")

    def band_name(self, band) -> str:
        return self.bands[self.band_index(band)].name

    def filter_bands(self, bands: list) -> "BandDimension":
        return BandDimension(self.name, [self.bands[self.band_index(b)] for b in bands])

    def append_band(self, band: Band) -> "BandDimension":
        if band.name in self.band_names:
            raise ValueError(f"a band {band.name!r} exists already")
        return BandDimension(self.name, self.bands + [band])


def _renamed(labels, target, source):
    target = list(target)
    if source is None:
        if labels is not None and len(labels) != len(target):
            # A new set of labels of another length: the dimension is re-labelled entirely.
            return target
        return target
    source = list(source)
    if len(source) != len(target):
        raise ValueError("source and target must have the same number of labels")
    if labels is None:
        return target
    mapping = dict(zip(source, target))
    for s in source:
        if s not in labels:
            raise ValueError(f"no label {s!r} in {labels}")
    return [mapping.get(l, l) for l in labels]


class CollectionMetadata:
    def __init__(self, metadata: Optional[dict] = None, dimensions: Optional[List[Dimension]] = None):
        self._orig = metadata or {}
        self._dimensions = list(dimensions or [])

    # --- what a UDF reads -------------------------------------------------------------------
    def get(self, *keys, default=None):
        d = self._orig
        for k in keys:
            if not isinstance(d, dict) or k not in d:
                return default
            d = d[k]
        return d

    @property
    def dimension_names(self) -> List[str]:
        return [d.name for d in self._dimensions]

    def dimension_names_list(self) -> List[str]:
        return self.dimension_names

    def assert_valid_dimension(self, name: str) -> str:
        if name not in self.dimension_names:
            raise ValueError(f"no dimension {name!r} (the cube has {self.dimension_names})")
        return name

    def has_dimension(self, name: str) -> bool:
        return name in self.dimension_names

    def get_dimension(self, name: str) -> Dimension:
        for d in self._dimensions:
            if d.name == name:
                return d
        raise ValueError(f"no dimension {name!r} (the cube has {self.dimension_names})")

    def _of_type(self, cls):
        return [d for d in self._dimensions if isinstance(d, cls)]

    def has_band_dimension(self) -> bool:
        return bool(self._of_type(BandDimension))

    @property
    def band_dimension(self) -> BandDimension:
        dims = self._of_type(BandDimension)
        if not dims:
            raise ValueError("the cube has no bands dimension")
        return dims[0]

    def has_temporal_dimension(self) -> bool:
        return bool(self._of_type(TemporalDimension))

    @property
    def temporal_dimension(self) -> TemporalDimension:
        dims = self._of_type(TemporalDimension)
        if not dims:
            raise ValueError("the cube has no temporal dimension")
        return dims[0]

    @property
    def spatial_dimensions(self) -> List[SpatialDimension]:
        return self._of_type(SpatialDimension)

    @property
    def bands(self) -> List[Band]:
        return self.band_dimension.bands

    @property
    def band_names(self) -> List[str]:
        return self.band_dimension.band_names

    @property
    def band_common_names(self) -> List[Optional[str]]:
        return self.band_dimension.common_names

    def get_band_index(self, band) -> int:
        return self.band_dimension.band_index(band)

    # --- what a UDF answers (each a new object) ---------------------------------------------
    def _with(self, dims: List[Dimension]) -> "CollectionMetadata":
        return type(self)(self._orig, dims)

    def _replace(self, name: str, new: Dimension) -> "CollectionMetadata":
        self.assert_valid_dimension(name)
        return self._with([new if d.name == name else d for d in self._dimensions])

    def rename_labels(self, dimension: str, target: list, source: list = None) -> "CollectionMetadata":
        return self._replace(dimension, self.get_dimension(dimension).rename_labels(target, source))

    def rename_dimension(self, source: str, target: str) -> "CollectionMetadata":
        return self._replace(source, self.get_dimension(source).rename(target))

    def filter_bands(self, band_names: list) -> "CollectionMetadata":
        bd = self.band_dimension
        return self._replace(bd.name, bd.filter_bands(band_names))

    def append_band(self, band) -> "CollectionMetadata":
        bd = self.band_dimension
        return self._replace(bd.name, bd.append_band(band if isinstance(band, Band) else Band(str(band))))

    def add_dimension(self, name: str, label, type: str = None) -> "CollectionMetadata":
        if name in self.dimension_names:
            raise ValueError(f"a dimension {name!r} exists already")
        if type == "bands":
            dim = BandDimension(name, [Band(str(label))])
        elif type == "temporal":
            dim = TemporalDimension(name, labels=[label])
        else:
            dim = Dimension(type or "other", name, [label])
        return self._with(self._dimensions + [dim])

    def drop_dimension(self, name: str) -> "CollectionMetadata":
        self.assert_valid_dimension(name)
        return self._with([d for d in self._dimensions if d.name != name])

    def reduce_dimension(self, dimension_name: str) -> "CollectionMetadata":
        return self.drop_dimension(dimension_name)

    def reduce_spatial(self) -> "CollectionMetadata":
        return self._with([d for d in self._dimensions if not isinstance(d, SpatialDimension)])

    def __repr__(self) -> str:
        return f"CollectionMetadata({self._dimensions!r})"
