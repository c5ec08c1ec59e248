// Our words for the processes implemented in src/processes/cubes/climate.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  climatological_normal: {
    summary: 'Long-term mean per period of the year',
    description:
      'Averages the values of the dates inside a span of whole years (1981 to 2010 unless given) per day of the year, month, season or tropical season, or over the whole span, ignoring no-data. A winter season (December to February, or November to April) that begins in the year before the span counts if the data holds a date of that year in it, else that winter is left out entirely; the winter that begins in the last year of the span is never counted. The temporal dimension keeps its name and type; its labels become the periods: `001` to `365` (`366` too if a leap day occurs), `01` to `12`, `djf` `mam` `jja` `son`, `ndjfma` `mjjaso`, or `climatology-period`. A period without any date is no-data.',
    parameters: {
      data: 'A data cube with one temporal dimension whose dates cover the climatology period.',
      period: 'What to average over: `day` (day of the year), `month`, `season`, `tropical-season` or `climatology-period` (the whole span at once).',
      climatology_period: 'The first and the last year of the span, both included, as integers.',
    },
    returns: 'The data cube with one label per period along its temporal dimension; other dimensions are unchanged.',
  },
  anomaly: {
    summary: 'Subtract the normals from the data',
    description:
      'Subtracts from every value the normal of its period: each label of the temporal dimension of `data` is matched with the label of `normals` that names the same period of the year, e.g. `2020-06` (or any date in June 2020) with `06` for months, `2020-djf` with `djf` for seasons, `2020` with `2020` for years. For `climatology-period` and `single-period` the normals have one label that serves every date. The other dimensions of the normals must be dimensions of the data with labels the data has (missing ones repeat the normals along them); x and y must be on the same grid. Dates without a matching normal become no-data.',
    parameters: {
      data: 'A data cube with one temporal dimension, labelled by period (as aggregate_temporal_period makes them) or by date.',
      normals: 'A data cube with one temporal dimension labelled by the period of the year (as climatological_normal makes them), or with a single label for `climatology-period` and `single-period`.',
      period: 'The periods the labels of the normals stand for: hour, day, week, dekad, month, season, tropical-season, year, decade, decade-ad, climatology-period or single-period.',
    },
    returns: 'The data cube with the differences; dimensions and labels are those of `data`.',
  },
  resample_cube_temporal: {
    summary: 'Put a cube on the dates of another cube',
    description:
      'Replaces the labels of temporal dimensions by those of the same-named temporal dimensions of `target`: every target date takes the values of the nearest source date (the earlier one on a tie), so a source date can serve several target dates. With `valid_within` the search is made per value and only among source dates at most that many days before or after the target date, skipping no-data, NaN and infinite values; where none is found the value is no-data. Other dimensions are unchanged.',
    parameters: {
      data: 'A data cube with one or more temporal dimensions.',
      target: 'A data cube whose temporal labels the data is put on; only its labels are used.',
      dimension: 'The temporal dimension to resample, present in both cubes; null resamples every temporal dimension both cubes have under the same name.',
      valid_within: 'A number of days (0 or more): only valid values of source dates that close to a target date are used. Null (the default) takes the nearest date whatever its values.',
    },
    returns: 'The data cube with the temporal labels of the target; name and type of the dimensions are kept.',
    exceptions: {
      DimensionMismatch: 'The named dimension is not temporal in one of the cubes, or the cubes share no temporal dimension.',
      DimensionNotAvailable: 'The named dimension is missing from the data or the target.',
    },
  },
};
