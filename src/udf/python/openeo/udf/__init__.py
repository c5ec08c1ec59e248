# The UDF interface: what `from openeo.udf import ...` finds in Xeo's sandbox.
from openeo.udf.xarraydatacube import XarrayDataCube
from openeo.udf.structured_data import StructuredData
from openeo.udf.udf_data import UdfData
from openeo.udf.debug import inspect


class OpenEoUdfException(Exception):
    """Raised by the interface when a UDF cannot be run as written."""


__all__ = ["XarrayDataCube", "StructuredData", "UdfData", "inspect", "OpenEoUdfException"]
