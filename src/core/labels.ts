// Labels: those of labeled arrays (the dimension labels that reducers and array processes receive
// with their values, kept as a hidden property so JSON and iteration see the plain array), and what
// the labels of a temporal dimension say about time. Such labels are dates or date-times as loaded,
// but may be text (weeks, seasons, names given with rename_labels) or numbers (apply_dimension).

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

// RFC 3339 dates and date-times (a missing offset is read as UTC).
const DATE_TIME = /^(-?\d{4,})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** Milliseconds since 1970 of an RFC 3339 date or date-time string (UTC when it names no offset), or NaN if it is neither. */
export function dateTimeMs(s: string): number {
  const m = DATE_TIME.exec(s);
  if (!m) return NaN;
  const year = +m[1];
  const month = +m[2];
  const day = +m[3];
  if (month < 1 || month > 12 || day < 1 || day > 31) return NaN;
  const hour = m[4] === undefined ? 0 : +m[4];
  const minute = m[5] === undefined ? 0 : +m[5];
  const second = m[6] === undefined ? 0 : +m[6];
  if (hour > 24 || minute > 59 || second > 60) return NaN;
  const d = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  d.setUTCFullYear(year); // Date.UTC maps years 0..99 to 1900..1999
  let ms = d.getTime();
  if (m[7]) ms += parseFloat(m[7]) * 1000;
  const zone = m[8];
  if (zone && zone !== 'Z' && zone !== 'z') {
    const digits = zone.replace(':', '');
    const offset = (+digits.slice(1, 3) * 60 + +digits.slice(3, 5)) * 60000;
    ms += zone[0] === '+' ? -offset : offset;
  }
  return ms;
}

/**
 * The first instant a label of a temporal dimension stands for: a date or date-time (RFC 3339),
 * or the start of a year (`2024`) or month (`2024-06`); NaN for a label that is text (a week such
 * as `2024-23`, a season such as `2024-djf`, any name given with rename_labels). Numbers are
 * taken as milliseconds since 1970.
 */
export function labelStart(label: string | number): number {
  if (typeof label === 'number') return label;
  const s = label.trim();
  const ym = /^(\d{4})(?:-(\d{2}))?$/.exec(s);
  if (ym) {
    const month = ym[2] === undefined ? 1 : +ym[2];
    return month >= 1 && month <= 12 ? dateTimeMs(`${ym[1]}-${String(month).padStart(2, '0')}-01`) : NaN;
  }
  return dateTimeMs(s);
}
