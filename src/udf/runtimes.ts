// GET /udf_runtimes: the runtimes of user-defined functions in the spec's shape (type `language`,
// a default version, and per version the libraries with their versions). Python is listed only
// when its interpreter, libraries and bubblewrap work here, with the versions the interpreter
// itself reported at start; AssemblyScript always, with the version of our compiler.
import type { RuntimeInfo } from './protocol.js';

const minor = (v: string) => v.split('.').slice(0, 2).join('.');

export function runtimesDocument(info: RuntimeInfo): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (info.python.available) {
    const v = minor(info.python.version);
    out.Python = {
      title: 'Python',
      description: `CPython ${info.python.version} in a sandbox (bubblewrap: no network, a read-only system, a private /tmp, limits on memory, time, processes and output), with numpy, pandas, xarray and scipy and the openEO UDF interface (openeo.udf: XarrayDataCube, UdfData, StructuredData, inspect; openeo.metadata.CollectionMetadata). Entry points: apply_datacube, apply_hypercube, apply_timeseries, apply_udf_data, apply_metadata.`,
      type: 'language',
      default: v,
      versions: {
        [v]: { libraries: Object.fromEntries(Object.entries(info.python.libraries).map(([name, version]) => [name, { version }])) },
      },
    };
  }
  const asv = minor(info.assemblyscript.version);
  out.AssemblyScript = {
    title: 'AssemblyScript',
    description:
      "AssemblyScript functions over pixel values, compiled to WebAssembly by the compiler of the built-in kernels and run on the cube in the kernel engine: apply(x: f64): f64 in apply, reduce(values: Float64Array): f64 in reduce_dimension, apply_dimension(values: Float64Array, out: Float64Array): void in apply_dimension. The numbers of context are read with contextValue(i) and contextLength(). No imports but the standard library's math.",
    type: 'language',
    default: asv,
    versions: { [asv]: { libraries: { assemblyscript: { version: info.assemblyscript.version } } } },
  };
  return out;
}
