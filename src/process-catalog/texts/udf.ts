// Our words for the processes implemented in src/processes/udf.ts.
import type { ProcessTexts } from '../spec.js';

export const texts: Record<string, ProcessTexts> = {
  run_udf: {
    summary: 'Run your own code (a UDF)',
    description:
      'Runs a user-defined function in one of the runtimes of GET /udf_runtimes: Python (a sandboxed CPython with numpy, pandas, xarray and scipy, and the openEO UDF interface `openeo.udf`) or AssemblyScript (compiled to WebAssembly like the built-in kernels). As the only process of the child process of apply, reduce_dimension, apply_dimension or apply_neighborhood, it gets the whole data cube (or block) at once; on its own it runs on its data, a data cube or plain values.',
    parameters: {
      data: "The data for the UDF: usually the parent process's data parameter.",
      udf: 'The UDF: its code (with at least one line break), an http(s) URL to fetch it from, or the path of a file in your workspace.',
      runtime: 'The runtime: Python or AssemblyScript.',
      version: 'The runtime version (GET /udf_runtimes); null for the default.',
      context: 'Anything the UDF gets as its context.',
    },
    returns: 'What the UDF answers: a data cube, or plain values.',
    exceptions: {
      InvalidRuntime: 'There is no such UDF runtime here, or it cannot run here (the message says what is missing).',
      InvalidVersion: 'The UDF runtime has no such version here.',
      FileNotFound: 'The UDF file is not in your workspace.',
    },
  },
};
