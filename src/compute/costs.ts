// What processing costs, in credits: one rule for /result, batch jobs and their estimates.

/** Credits per million raster values loaded: the basis of the {Brand}-Costs header and job costs. */
export const CREDITS_PER_MVALUE = 0.001;

export const costsOf = (values: number) => Math.round((values / 1e6) * CREDITS_PER_MVALUE * 1e6) / 1e6;

/** Raster values a budget in credits pays for. */
export const valuesFor = (credits: number) => (credits / CREDITS_PER_MVALUE) * 1e6;
