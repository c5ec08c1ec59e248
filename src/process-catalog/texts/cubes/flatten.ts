// Our words for the processes implemented in src/processes/cubes/flatten.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  flatten_dimensions: {
    summary: 'Join dimensions into one',
    description:
      'Replaces the named dimensions by one dimension of type `other` at the place of the first of them, whose labels are their labels joined by `label_separator` (e.g. 2020~B1), the last named dimension varying fastest. Labels that are not text are written as text. Flattening x or y leaves a cube without a raster grid; flattening the geometry dimension leaves one without geometries.',
    parameters: {
      data: 'A data cube.',
      dimensions: 'The dimensions to join, in the order their labels are joined.',
      target_dimension: 'The name of the new dimension.',
      label_separator: 'The text between the joined labels (~ by default).',
    },
    returns: 'The data cube with the dimensions joined.',
    exceptions: {
      DimensionNotAvailable: 'A named dimension does not exist.',
      TargetDimensionExists: 'A dimension with the target name exists (other than those joined).',
    },
  },
  unflatten_dimension: {
    summary: 'Split a dimension into several',
    description:
      'Splits each label of the dimension at `label_separator` into as many parts as there are target dimensions, and replaces the dimension by those dimensions (type `other`, at its place, in the order given), each with its distinct parts as labels in the order they first occur. Every label must split into exactly that many parts and no combination may occur twice; combinations that do not occur hold no-data.',
    parameters: {
      data: 'A data cube.',
      dimension: 'The dimension to split.',
      target_dimensions: 'The names of the new dimensions, in the order of the label parts.',
      label_separator: 'The text the labels are split at (~ by default).',
    },
    returns: 'The data cube with the dimension split.',
    exceptions: {
      DimensionNotAvailable: 'The dimension does not exist.',
      TargetDimensionExists: 'A dimension with a target name exists.',
    },
  },
};
