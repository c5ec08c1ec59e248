# UdfData: everything a generic UDF (`apply_udf_data(data: UdfData)`) gets and may change in
# place: the data cubes, structured data and the user's context.
from typing import List, Optional

from openeo.udf.structured_data import StructuredData
from openeo.udf.xarraydatacube import XarrayDataCube


class UdfData:
    def __init__(
        self,
        proj: dict = None,
        datacube_list: Optional[List[XarrayDataCube]] = None,
        feature_collection_list: Optional[list] = None,
        structured_data_list: Optional[List[StructuredData]] = None,
        user_context: Optional[dict] = None,
    ):
        self.proj = proj
        self._datacubes = list(datacube_list or [])
        self._features = list(feature_collection_list or [])
        self._structured = list(structured_data_list or [])
        self._context = user_context if user_context is not None else {}

    @property
    def user_context(self) -> dict:
        return self._context

    def get_datacube_list(self) -> List[XarrayDataCube]:
        return self._datacubes

    def set_datacube_list(self, datacube_list: List[XarrayDataCube]):
        self._datacubes = list(datacube_list or [])

    datacube_list = property(get_datacube_list, set_datacube_list)

    def get_feature_collection_list(self) -> list:
        return self._features

    def set_feature_collection_list(self, feature_collection_list: list):
        self._features = list(feature_collection_list or [])

    feature_collection_list = property(get_feature_collection_list, set_feature_collection_list)

    def get_structured_data_list(self) -> List[StructuredData]:
        return self._structured

    def set_structured_data_list(self, structured_data_list: List[StructuredData]):
        self._structured = list(structured_data_list or [])

    structured_data_list = property(get_structured_data_list, set_structured_data_list)

    def to_dict(self) -> dict:
        return {
            "proj": self.proj,
            "user_context": self._context,
            "datacubes": [c.to_dict() for c in self._datacubes],
            "structured_data_list": [s.to_dict() for s in self._structured],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "UdfData":
        return cls(
            proj=d.get("proj"),
            datacube_list=[XarrayDataCube.from_dict(c) for c in d.get("datacubes", [])],
            structured_data_list=[StructuredData.from_dict(s) for s in d.get("structured_data_list", [])],
            user_context=d.get("user_context"),
        )

    def __repr__(self) -> str:
        return f"<UdfData datacubes:{len(self._datacubes)} structured:{len(self._structured)}>"
