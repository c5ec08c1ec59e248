// Our words for the processes implemented in src/processes/statistics.ts.
import type { ProcessTexts } from '../spec.js';

const DATA = 'The numbers; null marks no-data.';
const IGNORE = 'Skip null values (true, the default); with false a single null makes the result null.';
const CUM_IGNORE = 'Skip null values, which stay null in the result (true, the default); with false every element from the first null on is null.';

export const texts: Record<string, ProcessTexts> = {
  max: {
    summary: 'Largest number in an array',
    description:
      'Returns the greatest of the numbers in `data`. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty array or one with only nulls gives null; a NaN among the values makes the result NaN.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The greatest value, or null.',
  },
  min: {
    summary: 'Smallest number in an array',
    description:
      'Returns the least of the numbers in `data`. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty array or one with only nulls gives null; a NaN among the values makes the result NaN.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The least value, or null.',
  },
  extrema: {
    summary: 'Smallest and largest number at once',
    description:
      'Returns `[min, max]` of the numbers in `data`, found in a single pass. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives `[null, null]`; an empty or all-null array also gives `[null, null]`. A NaN among the values makes both elements NaN.',
    parameters: { data: DATA, ignore_nodata: 'Skip null values (true, the default); with false a single null makes both results null.' },
    returns: 'A two-element array: the minimum, then the maximum (both null if there is no value).',
  },
  sum: {
    summary: 'Total of an array of numbers',
    description:
      'Adds up the numbers in `data` following IEEE 754 (with compensated summation against rounding error). Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The sum, or null.',
  },
  product: {
    summary: 'Product of an array of numbers',
    description: 'Multiplies the numbers in `data` together following IEEE 754. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The product, or null.',
  },
  mean: {
    summary: 'Average of an array of numbers',
    description:
      'Divides the sum of the numbers in `data` by how many there are. Nulls are skipped (and not counted) unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null; NaN propagates.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The arithmetic mean, or null.',
  },
  median: {
    summary: 'Middle value of an array of numbers',
    description:
      'Sorts the numbers in `data` and returns the middle one; for an even count, the average of the two middle ones (the same as the 0.5 quantile). Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null; a NaN among the values gives NaN.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The median, or null.',
  },
  variance: {
    summary: 'Sample variance of an array of numbers',
    description:
      'The sum of squared differences from the mean divided by n - 1, where n is the number of values. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null; a single value, an infinity or a NaN gives NaN.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The sample variance, or null.',
  },
  sd: {
    summary: 'Sample standard deviation',
    description:
      'The square root of the sample variance (divisor n - 1) of the numbers in `data`. Nulls are skipped unless `ignore_nodata` is false, in which case any null gives null. An empty or all-null array gives null; a single value, an infinity or a NaN gives NaN.',
    parameters: { data: DATA, ignore_nodata: IGNORE },
    returns: 'The sample standard deviation, or null.',
  },
  quantiles: {
    summary: 'Sample quantiles (type 7)',
    description:
      'Computes quantiles of the numbers in `data` by linear interpolation between the sorted values at position (n - 1) p (Hyndman & Fan type 7), either at the given ascending `probabilities` or, for an integer q (in `probabilities` or the deprecated `q`), at k/q for k = 1..q-1. Exactly one of the two parameters must be given. With `ignore_nodata` false any null makes every quantile null; an empty or all-null array gives one null per quantile, and a NaN among the values gives NaN for all.',
    parameters: {
      data: DATA,
      probabilities: 'Ascending probabilities between 0 and 1, or an integer q ≥ 2 for the q-quantiles (the q - 1 cut points of q equal intervals).',
      q: 'Deprecated: the number q ≥ 2 of equal intervals; use `probabilities` instead.',
      ignore_nodata: 'Skip null values (true, the default); with false a single null makes every quantile null.',
    },
    returns: 'One quantile per probability (or q - 1 for q intervals), in that order.',
    exceptions: {
      QuantilesParameterMissing: 'Give either `probabilities` or `q` to compute quantiles.',
      QuantilesParameterConflict: 'Give only one of `probabilities` and `q`, not both.',
      AscendingProbabilitiesRequired: 'The probabilities must be listed in ascending order.',
    },
  },
  cummax: {
    summary: 'Running maximum',
    description:
      'Each element of the result is the greatest value of `data` up to and including that position. Nulls stay null and are skipped, unless `ignore_nodata` is false: then the first null and everything after it is null. The result has the length (and labels) of the input; a NaN stays in the running value.',
    parameters: { data: DATA, ignore_nodata: CUM_IGNORE },
    returns: 'The running maxima, as long as `data`.',
  },
  cummin: {
    summary: 'Running minimum',
    description:
      'Each element of the result is the least value of `data` up to and including that position. Nulls stay null and are skipped, unless `ignore_nodata` is false: then the first null and everything after it is null. The result has the length (and labels) of the input; a NaN stays in the running value.',
    parameters: { data: DATA, ignore_nodata: CUM_IGNORE },
    returns: 'The running minima, as long as `data`.',
  },
  cumsum: {
    summary: 'Running total',
    description:
      'Each element of the result is the sum of the values of `data` up to and including that position. Nulls stay null and are skipped, unless `ignore_nodata` is false: then the first null and everything after it is null. The result has the length (and labels) of the input.',
    parameters: { data: DATA, ignore_nodata: CUM_IGNORE },
    returns: 'The running sums, as long as `data`.',
  },
  cumproduct: {
    summary: 'Running product',
    description:
      'Each element of the result is the product of the values of `data` up to and including that position. Nulls stay null and are skipped, unless `ignore_nodata` is false: then the first null and everything after it is null. The result has the length (and labels) of the input.',
    parameters: { data: DATA, ignore_nodata: CUM_IGNORE },
    returns: 'The running products, as long as `data`.',
  },
};
