# Xeo's own `openeo` package for user-defined functions: the parts of the openEO UDF interface
# that code run in Xeo's Python sandbox imports (openeo.udf, openeo.metadata). Written for Xeo;
# it is not the openEO Python client, which is not installed in the sandbox.
__version__ = "xeo-udf-1"
