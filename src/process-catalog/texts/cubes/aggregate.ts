// Our words for the processes implemented in src/processes/cubes/aggregate.ts.
import type { ProcessTexts } from '../../spec.js';

const REDUCER_TEXT = 'The reducer: it gets the array `data` of the values in one group (and `context`) and answers one value.';

export const texts: Record<string, ProcessTexts> = {
  aggregate_temporal: {
    summary: 'Reduce time over given intervals',
    description:
      'Groups the dates of the temporal dimension by the intervals (start included, end excluded; intervals may overlap) and runs the reducer once per interval on the values of the dates inside it. An interval without dates gives the reducer an empty array. Intervals of times of day (HH:MM:SS) match dates by their time of day and may wrap over midnight. The temporal dimension keeps its name and type; its labels become the interval labels.',
    parameters: {
      data: 'A data cube with a temporal dimension.',
      intervals: 'The intervals, each [start, end] of dates, date-times or times of day; start included, end excluded.',
      reducer: REDUCER_TEXT,
      labels: 'One distinct label per interval; by default the start of each interval, which then must differ.',
      dimension: 'The temporal dimension to aggregate; null when the cube has exactly one.',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'The cube with one label per interval along the temporal dimension.',
    exceptions: {
      TooManyDimensions: 'The data cube has several temporal dimensions; name one in `dimension`.',
      DimensionNotAvailable: 'The data cube has no temporal dimension of that name, or none at all.',
      DistinctDimensionLabelsRequired: 'The interval labels are not all different; give distinct labels.',
      TemporalExtentEmpty: 'An interval is empty: its end must come after its start.',
    },
  },
  aggregate_temporal_period: {
    summary: 'Reduce time per calendar period',
    description:
      'Groups the dates of the temporal dimension by calendar period (UTC) and runs the reducer once per period. The periods run without gaps from the one of the earliest date to the one of the latest; a period without dates gives the reducer an empty array. Labels: hour `YYYY-MM-DD-HH`, day `YYYY-DDD` (day of year), week `YYYY-WW` (ISO 8601 week and week-year), dekad `YYYY-KK` (01-36; days 1-10, 11-20 and 21 to month end), month `YYYY-MM`, season `YYYY-djf|mam|jja|son` (a winter is labelled by the year of its December), tropical-season `YYYY-ndjfma|mjjaso` (November to April labelled by the year of its November), year `YYYY`, decade `YYY0` (years ending in 0 to 9), decade-ad `YYY1` (years ending in 1 to 0).',
    parameters: {
      data: 'A data cube with a temporal dimension.',
      period: 'The calendar period: hour, day, week, dekad, month, season, tropical-season, year, decade or decade-ad.',
      reducer: REDUCER_TEXT,
      dimension: 'The temporal dimension to aggregate; null when the cube has exactly one.',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'The cube with one label per period along the temporal dimension.',
    exceptions: {
      TooManyDimensions: 'The data cube has several temporal dimensions; name one in `dimension`.',
      DimensionNotAvailable: 'The data cube has no temporal dimension of that name, or none at all.',
    },
  },
};
