// Our words for the processes implemented in src/processes/cubes/curves.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  fit_curve: {
    summary: 'Fit a model function by least squares',
    description:
      "Finds the parameters of the model function that fit the array best in the least-squares sense (Levenberg-Marquardt from the initial guess, Jacobian by forward differences), with the labels as x and the values as y; a date label counts as its seconds since 1970-01-01T00:00:00Z. Used in apply_dimension it fits every pixel's values along the dimension at once. No-data values are left out (with ignore_nodata true); fewer valid values than parameters give no-data parameters.",
    parameters: {
      data: 'The labeled array of values (y), e.g. along the temporal dimension; the labels are x.',
      parameters: 'The initial guess of the parameters; their number is the number fitted.',
      function: 'The model: it gets `x` and the array `parameters` and answers y.',
      ignore_nodata: 'true (the default) leaves no-data values out of the fit; false makes any no-data value give no-data parameters.',
    },
    returns: 'The fitted parameters.',
  },
  predict_curve: {
    summary: 'Evaluate a fitted model at new labels',
    description:
      'Evaluates the model function with the parameters of a cube (as fit_curve in apply_dimension leaves them: the parameters along `dimension`) at each of `labels`, which replace the parameters along that dimension: dates as seconds since 1970-01-01T00:00:00Z, numbers as they are. Pixels with no-data parameters give no-data. This back-end needs the labels; there is no data cube here whose gaps could be filled in place (fill them with merge_cubes or mask).',
    parameters: {
      parameters: 'A data cube with the parameters along `dimension` (e.g. the result of apply_dimension with fit_curve).',
      function: 'The model: it gets `x` and the array `parameters` and answers y.',
      dimension: 'The dimension that holds the parameters and receives the predictions.',
      labels: 'The labels to predict for (dates or numbers).',
    },
    returns: 'The cube with one value per label along `dimension`.',
  },
};
