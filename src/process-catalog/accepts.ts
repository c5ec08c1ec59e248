// Values some parameters take beyond their definition's schema, by process and parameter name:
// what the clients write where the definition asks for something else. Validation accepts them
// too (src/graph/validate.ts widens the schemas); GET /processes shows the definitions' schemas only.

/** A single plain value (not an array, not an object). */
const ONE_VALUE = { type: ['number', 'string', 'boolean', 'null'] };

export const ACCEPTS: Record<string, Record<string, unknown>> = {
  // `array_concat(data, ndvi)` in a child process: a single value counts as an array of one.
  array_concat: { array1: ONE_VALUE, array2: ONE_VALUE },
};

/**
 * Parameters a definition requires that this back-end fills in when a graph leaves them out: what
 * the clients omit (the Python client sends no `max_variables`; the process then uses its default).
 */
export const OMITTABLE: Record<string, string[]> = {
  fit_class_random_forest: ['max_variables'],
  fit_regr_random_forest: ['max_variables'],
};
