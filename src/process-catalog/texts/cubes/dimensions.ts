// Our words for the processes implemented in src/processes/cubes/dimensions.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  rename_labels: {
    summary: 'Give the labels of a dimension new names',
    description:
      'Replaces labels of one dimension: each label of `source` becomes the label at the same position of `target`. With an empty `source` the dimension must be labelled 0, 1, 2, ... and label i becomes `target[i]`. Order and values stay as they are. The labels of a temporal dimension may become any text (a week, a season, a name): outputs write them as text, and processes that need instants (filter_temporal, aggregate_temporal) say so. The labels of x and y are the coordinates of the raster grid and cannot be renamed.',
    parameters: {
      data: 'The data cube.',
      dimension: 'The dimension whose labels change.',
      target: 'The new labels, without duplicates; none of them may remain in use by a label that is not renamed.',
      source: 'The labels to rename, in any order and possibly only some of them; as many as `target`. Empty (the default) means the labels 0, 1, 2, ...',
    },
    returns: 'The data cube with the new labels on that dimension.',
    exceptions: {
      LabelsNotEnumerated: 'No `source` is given, but the labels of the dimension are not 0, 1, 2, ...',
      LabelMismatch: '`source` and `target` differ in length (or `target` is longer than the dimension).',
      LabelNotAvailable: 'A label of `source` is not a label of the dimension.',
      LabelExists: 'A label of `target` would occur twice in the dimension.',
    },
  },
  add_dimension: {
    summary: 'Add a dimension with one label',
    description:
      'Adds a dimension of the given name and type holding the single label given, as the first dimension of the cube; the values do not change. Spatial dimensions get the first free axis of x, y and z. Dimensions of type geometry cannot be added here, as they need geometries.',
    parameters: {
      data: 'The data cube to extend.',
      name: 'The name of the new dimension; it must not be in use.',
      label: 'The only label of the new dimension (a date or date-time for a temporal dimension).',
      type: 'The type of the new dimension: `other` unless given.',
    },
    returns: 'The data cube with one more dimension, of one label.',
    exceptions: { DimensionExists: 'A dimension of that name exists, or a spatial one is asked for while x, y and z all exist.' },
  },
  drop_dimension: {
    summary: 'Remove a dimension of one label',
    description:
      'Removes a dimension that has exactly one label; the values do not change. Reduce or filter a dimension with more labels first. Dropping x or y of a raster cube leaves a cube without a raster grid.',
    parameters: { data: 'The data cube.', name: 'The name of the dimension to remove.' },
    returns: 'The data cube with one dimension less.',
    exceptions: {
      DimensionLabelCountMismatch: 'The dimension does not have exactly one label; reduce it (reduce_dimension) or filter it first.',
      DimensionNotAvailable: 'The data cube has no dimension of that name.',
    },
  },
  dimension_labels: {
    summary: 'List the labels of a dimension',
    description: 'Answers the labels of one dimension as an array, in the order of the cube. For x and y these are the coordinates of the pixel centres.',
    parameters: { data: 'The data cube.', dimension: 'The name of the dimension.' },
    returns: 'The labels of the dimension.',
    exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
  },
  rename_dimension: {
    summary: 'Give a dimension a new name',
    description: 'Changes the name of one dimension; its type, labels and values stay as they are.',
    parameters: {
      data: 'The data cube.',
      source: 'The current name of the dimension; DimensionNotAvailable if there is none.',
      target: 'The new name; DimensionExists if a dimension has it already.',
    },
    returns: 'The data cube with the dimension renamed.',
    exceptions: {
      DimensionNotAvailable: 'The data cube has no dimension of the source name.',
      DimensionExists: 'The data cube has a dimension of the target name already.',
    },
  },
  trim_cube: {
    summary: 'Drop labels that hold only no-data',
    description:
      'Removes the labels whose values are all no-data. Along dimensions with an order (spatial and temporal) only such labels at the start and the end go, so the dimension stays regular; along bands, geometry and other dimensions they go wherever they are.',
    parameters: { data: 'The data cube to trim.' },
    returns: 'The data cube with the same dimensions and possibly fewer labels.',
  },
  create_data_cube: {
    summary: 'An empty data cube',
    description: 'Creates a data cube without dimensions (holding a single no-data value), to be given dimensions with add_dimension.',
    parameters: {},
    returns: 'A data cube without dimensions.',
  },
  filter_labels: {
    summary: 'Keep the labels that meet a condition',
    description:
      'Runs the condition once for each label of the dimension and keeps the labels (and their values) for which it answers true; null or false drops them. The order of the labels stays. On x or y of a raster cube the kept labels must be one contiguous range.',
    parameters: {
      data: 'A data cube.',
      condition: 'The child process: it gets one label as `value` (and `context`) and answers true to keep it.',
      dimension: 'The dimension to filter; DimensionNotAvailable if the cube has none of that name.',
      context: 'Any data handed to the condition as its `context` parameter.',
    },
    returns: 'The data cube with the labels that met the condition.',
    exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
  },
};
