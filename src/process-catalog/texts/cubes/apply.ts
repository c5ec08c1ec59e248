// Our words for the processes implemented in src/processes/cubes/apply.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  apply: {
    summary: 'Run a process on every value',
    description:
      'Runs the child process once for each value of the data cube and puts its answer in place of the value. Dimensions, labels and no-data positions are kept unless the child process answers a value for no-data.',
    parameters: {
      data: 'The data cube to work on.',
      process: 'The child process: it gets one value `x` (and `context`) and answers one value.',
      context: 'Any data handed to the child process as its `context` parameter.',
    },
    returns: 'A data cube of the same shape with the computed values.',
  },
  reduce_dimension: {
    summary: 'Collapse a dimension into one value',
    description: 'Runs the reducer on the array of values along the dimension, for every position of the other dimensions, and drops the dimension. The reducer sees the dimension labels as array labels.',
    parameters: {
      data: 'The data cube to reduce.',
      reducer: 'The child process: it gets the array `data` (and `context`) and answers one value.',
      dimension: 'The name of the dimension to collapse; DimensionNotAvailable if the cube has none of that name.',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'A data cube with one dimension less.',
    exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
  },
  apply_dimension: {
    summary: 'Run a process on the values along a dimension',
    description:
      'Runs the child process on the array of values along the dimension, for every position of the other dimensions, and writes the answered arrays back along that dimension, or along `target_dimension`. Labels are kept when the dimension stays and the count of values does not change; otherwise they become 0, 1, 2, ...',
    parameters: {
      data: 'The data cube to work on.',
      process: 'The child process: it gets the array `data` (and `context`) and answers an array of at least one value.',
      dimension: 'The name of the source dimension; DimensionNotAvailable if the cube has none of that name.',
      target_dimension:
        'The name of the dimension for the answers; null keeps the source dimension. Otherwise the source dimension is dropped. A new name gives a dimension of type `other` in its place. The name of another dimension of the cube (e.g. `bands` when applying along `t`) runs the child process once per label of that dimension and writes the answers of all its labels, in order, as its values: it keeps its labels when each label answered one value, else they become 0, 1, 2, ...',
      context: 'Any data handed to the child process as its `context` parameter.',
    },
    returns: 'A data cube with the computed values along the target dimension.',
    exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
  },
  ndvi: {
    summary: 'Normalized difference vegetation index',
    description:
      'Computes (nir - red) / (nir + red) for every pixel, taking the bands from the `bands` dimension by name or by the common names `nir` and `red`. Drops the bands dimension, or with `target_band` appends the index as a new band.',
    parameters: {
      data: 'A raster data cube with a `bands` dimension holding a near-infrared and a red band.',
      nir: 'The near-infrared band, by name or common name; the band with common name `nir` by default.',
      red: 'The red band, by name or common name; the band with common name `red` by default.',
      target_band: 'If given, the name of a new band that receives the index; the bands dimension is kept then.',
    },
    returns: 'The NDVI cube: without the bands dimension, or with the index appended as a band.',
    exceptions: {
      NirBandAmbiguous: 'No single near-infrared band can be found; name it in `nir`.',
      RedBandAmbiguous: 'No single red band can be found; name it in `red`.',
      DimensionAmbiguous: 'The data cube has no single dimension of type bands.',
      BandExists: 'A band with the target name exists already.',
    },
  },
};
