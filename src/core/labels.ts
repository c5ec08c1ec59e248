// Labels of labeled arrays: the dimension labels that reducers and array processes receive with
// their values, kept as a hidden property so JSON and iteration see the plain array.

/** Labels of a labeled array (dimension labels handed to reducers and array processes). */
export type Labels = (string | number)[];

/** Attaches labels to an array (kept out of JSON and of element iteration). */
export function withLabels<T>(values: T[], labels: Labels | null): T[] {
  if (labels) Object.defineProperty(values, 'labels', { value: labels, enumerable: false, configurable: true, writable: true });
  return values;
}

/** The labels of a labeled array, or null for a plain array. */
export function labelsOf(values: unknown): Labels | null {
  return Array.isArray(values) ? ((values as { labels?: Labels }).labels ?? null) : null;
}
