// Text processes (text_begins, text_concat, text_contains, text_ends, text_find) and date/time
// processes (date_between, date_difference, date_shift) on plain values.
//
// Dates are parsed by hand (no regex, no Date objects) into a wall-clock day number plus time of
// day and a numerical time zone offset; calendar arithmetic uses the proleptic Gregorian calendar
// in integer days. Leap seconds (second 60) are accepted and read as second 59, so they never
// come out again and never count in differences.
import { implementScalar, type ProcessImpl } from './implement.js';
import { ApiError } from '../core/errors.js';

function invalid(process: string, parameter: string, reason: string): ApiError {
  return new ApiError('ProcessParameterInvalid', { process, parameter, reason });
}

// ---------------------------------------------------------------------------------------------
// Texts

const FINAL_SIGMA = '\u03c2';
const SIGMA = '\u03c3';

/** Case folding for case-insensitive matching: lower case, Greek final sigma read as sigma. */
function fold(s: string): string {
  const l = s.toLowerCase();
  return l.indexOf(FINAL_SIGMA) < 0 ? l : l.replaceAll(FINAL_SIGMA, SIGMA);
}

function textArgs(id: string, data: unknown, pattern: unknown): boolean {
  if (data === null || data === undefined) return false;
  if (typeof data !== 'string') throw invalid(id, 'data', 'a text or null is expected');
  if (typeof pattern !== 'string') throw invalid(id, 'pattern', 'a text is expected');
  return true;
}

/** Number of Unicode code points in s[0, end) (code-unit index -> character index). */
function codePointIndex(s: string, end: number): number {
  let n = end;
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    // A low surrogate that follows a high surrogate belongs to the same character.
    if (c >= 0xdc00 && c <= 0xdfff && i > 0) {
      const p = s.charCodeAt(i - 1);
      if (p >= 0xd800 && p <= 0xdbff) n--;
    }
  }
  return n;
}

/**
 * Character (code point) position of the first occurrence of pattern in data, or -1.
 * Case-insensitively, positions refer to the characters of the original text even where lower
 * casing changes the length (e.g. "İ").
 */
function findText(data: string, pattern: string, caseSensitive: boolean): number {
  if (caseSensitive) {
    const i = data.indexOf(pattern);
    return i < 0 ? -1 : codePointIndex(data, i);
  }
  const fd = fold(data);
  const fp = fold(pattern);
  const i = fd.indexOf(fp);
  if (i < 0) return -1;
  if (fd.length === data.length) return codePointIndex(data, i);
  // Lower casing changed the length somewhere: fold character by character to map back.
  let at = 0;
  let chars = 0;
  for (const ch of data) {
    at += fold(ch).length;
    if (at > i) return chars;
    chars++;
  }
  return chars;
}

// ---------------------------------------------------------------------------------------------
// Dates and times

const DAY = 86_400_000;
const KIND_DATE = 0;
const KIND_DATETIME = 1;
const KIND_TIME = 2;

/** The last parse (all uses are synchronous, so one scratch record suffices). */
const P = {
  kind: KIND_DATE,
  /** Wall-clock day number (days since 1970-01-01) of a date or date-time. */
  days: 0,
  /** Wall-clock time of day in ms (leap second read as second 59). */
  tod: 0,
  /** Time zone offset in minutes (0 for Z or no zone). */
  offset: 0,
  /** Index of the time zone designator (the text's length without one). */
  zoneAt: 0,
  /** Separator between date and time ('T', 't' or ' '). */
  sep: 'T',
  /** Fraction digits beyond milliseconds: [fracFrom, fracTo) of the text. */
  fracFrom: 0,
  fracTo: 0,
};

function digit(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/** Two digits at i as a number, or -1. */
function two(s: string, i: number): number {
  const a = digit(s, i);
  const b = digit(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  return m === 2 ? (isLeap(y) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** Day number of a proleptic Gregorian date (days since 1970-01-01). */
function daysFromCivil(y: number, m: number, d: number): number {
  if (m <= 2) y -= 1;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = m > 2 ? m - 3 : m + 9;
  const doy = Math.floor((153 * mp + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Result of civil(): year, month, day. */
let cy = 0;
let cm = 0;
let cd = 0;
function civil(days: number): void {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  cd = doy - Math.floor((153 * mp + 2) / 5) + 1;
  cm = mp < 10 ? mp + 3 : mp - 9;
  cy = yoe + era * 400 + (cm <= 2 ? 1 : 0);
}

/** Shifts a day number by whole months; a day past the end of the target month becomes its last day. */
function shiftMonths(days: number, months: number): number {
  civil(days);
  const total = cy * 12 + (cm - 1) + months;
  const y = Math.floor(total / 12);
  const m = total - y * 12 + 1;
  const dim = daysInMonth(y, m);
  return daysFromCivil(y, m, cd > dim ? dim : cd);
}

/** Parses HH:MM:SS(.fraction)? at i into P.tod; returns the index after it, or -1. */
function parseClock(s: string, i: number): number {
  const h = two(s, i);
  const mi = two(s, i + 3);
  let sec = two(s, i + 6);
  if (h < 0 || h > 23 || s.charCodeAt(i + 2) !== 58 || mi < 0 || mi > 59 || s.charCodeAt(i + 5) !== 58 || sec < 0 || sec > 60) return -1;
  if (sec === 60) sec = 59;
  let j = i + 8;
  let ms = 0;
  P.fracFrom = P.fracTo = 0;
  if (s.charCodeAt(j) === 46) {
    j++;
    const start = j;
    while (j < s.length && digit(s, j) >= 0) j++;
    if (j === start) return -1;
    for (let k = 0; k < 3; k++) ms = ms * 10 + (start + k < j ? digit(s, start + k) : 0);
    if (j - start > 3) {
      P.fracFrom = start + 3;
      P.fracTo = j;
    }
  }
  P.tod = ((h * 60 + mi) * 60 + sec) * 1000 + ms;
  return j;
}

/**
 * Parses a date (YYYY-MM-DD), a date-time (RFC 3339; a missing time zone is read as UTC) or,
 * if allowed, a time (HH:MM:SS, optional fraction and Z) into P. Returns false if it is none.
 */
function parseTemporal(s: unknown, allowTime: boolean): boolean {
  if (typeof s !== 'string') return false;
  const n = s.length;
  P.offset = 0;
  P.fracFrom = P.fracTo = 0;
  if (allowTime && n >= 8 && s.charCodeAt(2) === 58) {
    const j = parseClock(s, 0);
    if (j < 0) return false;
    P.kind = KIND_TIME;
    P.days = 0;
    P.zoneAt = j;
    return j === n || (j === n - 1 && (s.charCodeAt(j) | 32) === 122); // optional Z
  }
  if (n < 10) return false;
  const y = two(s, 0) * 100 + two(s, 2);
  const m = two(s, 5);
  const d = two(s, 8);
  if (two(s, 0) < 0 || two(s, 2) < 0 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return false;
  P.days = daysFromCivil(y, m, d);
  if (n === 10) {
    P.kind = KIND_DATE;
    P.tod = 0;
    P.zoneAt = n;
    return true;
  }
  const sep = s.charCodeAt(10);
  if (sep !== 84 && sep !== 116 && sep !== 32) return false;
  P.sep = s[10];
  let j = parseClock(s, 11);
  if (j < 0) return false;
  P.kind = KIND_DATETIME;
  P.zoneAt = j;
  if (j === n) return true; // no zone: UTC
  const z = s.charCodeAt(j);
  if ((z | 32) === 122) return j === n - 1; // Z or z
  if (z !== 43 && z !== 45) return false;
  const oh = two(s, j + 1);
  if (oh < 0 || oh > 23) return false;
  j += 3;
  let om = 0;
  if (j < n) {
    if (s.charCodeAt(j) === 58) j++;
    om = two(s, j);
    if (om < 0 || om > 59) return false;
    j += 2;
  }
  if (j !== n) return false;
  P.offset = (z === 45 ? -1 : 1) * (oh * 60 + om);
  return true;
}

/** The instant of the last parsed date or date-time, in ms since the epoch (UTC). */
function instant(): number {
  return P.days * DAY + P.tod - P.offset * 60000;
}

function pad2(n: number): string {
  return n < 10 ? '0' + n : '' + n;
}

function formatDate(process: string, days: number): string {
  civil(days);
  if (cy < 0 || cy > 9999) throw invalid(process, 'value', 'the resulting date is outside the years 0000 to 9999');
  const y = cy < 10 ? '000' + cy : cy < 100 ? '00' + cy : cy < 1000 ? '0' + cy : '' + cy;
  return y + '-' + pad2(cm) + '-' + pad2(cd);
}

const UNIT_MS: Record<string, number> = {
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: DAY,
  week: 7 * DAY,
};

function dateShift(a: Record<string, any>): string {
  const date: unknown = a.date;
  const value: unknown = a.value;
  const unit: unknown = a.unit;
  if (!parseTemporal(date, false)) throw invalid('date_shift', 'date', 'a date (YYYY-MM-DD) or an RFC 3339 date-time is expected');
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid('date_shift', 'value', 'an integer is expected');
  const s = date as string;
  const kind = P.kind;
  const tod = P.tod;
  let days = P.days;
  let wall: number;
  if (unit === 'month' || unit === 'year') {
    days = shiftMonths(days, unit === 'year' ? value * 12 : value);
    wall = days * DAY + tod;
  } else {
    const step = typeof unit === 'string' ? UNIT_MS[unit] : undefined;
    if (step === undefined) throw invalid('date_shift', 'unit', 'one of millisecond, second, minute, hour, day, week, month, year is expected');
    wall = days * DAY + tod + value * step;
  }
  if (!Number.isSafeInteger(wall)) throw invalid('date_shift', 'value', 'the resulting date is out of range');
  days = Math.floor(wall / DAY);
  const out = formatDate('date_shift', days);
  if (kind === KIND_DATE) return out;
  let t = wall - days * DAY;
  const ms = t % 1000;
  t = (t - ms) / 1000;
  const sec = t % 60;
  t = (t - sec) / 60;
  let clock = out + P.sep + pad2((t - (t % 60)) / 60) + ':' + pad2(t % 60) + ':' + pad2(sec);
  if (ms !== 0 || P.fracTo > P.fracFrom) {
    clock += '.' + (ms < 10 ? '00' + ms : ms < 100 ? '0' + ms : '' + ms);
    if (P.fracTo > P.fracFrom) clock += s.slice(P.fracFrom, P.fracTo);
  }
  return P.zoneAt < s.length ? clock + s.slice(P.zoneAt) : clock;
}

function dateBetween(a: Record<string, any>): boolean | null {
  const x: unknown = a.x;
  if (x === null || x === undefined) return null;
  const expected = 'a date (YYYY-MM-DD), an RFC 3339 date-time or a time (HH:MM:SS) is expected';
  if (!parseTemporal(a.min, true)) throw invalid('date_between', 'min', expected);
  const minKind = P.kind;
  const min = P.kind === KIND_TIME ? P.tod : instant();
  if (!parseTemporal(a.max, true)) throw invalid('date_between', 'max', expected);
  const times = P.kind === KIND_TIME;
  if (times !== (minKind === KIND_TIME)) throw invalid('date_between', 'max', 'min and max must both be times (HH:MM:SS) or both be dates or date-times');
  const max = times ? P.tod : instant();
  if (!parseTemporal(x, true)) throw invalid('date_between', 'x', expected);
  let v: number;
  if (times) {
    // Time bounds: compare the time of day (UTC) of x.
    if (P.kind === KIND_TIME) v = P.tod;
    else {
      const t = instant();
      v = t - Math.floor(t / DAY) * DAY;
    }
  } else {
    if (P.kind === KIND_TIME) throw invalid('date_between', 'x', 'a time (HH:MM:SS) cannot be compared with dates; min and max must be times too');
    v = instant();
  }
  return v >= min && (a.exclude_max === true ? v < max : v <= max);
}

/**
 * Calendar months (step 1) or years (step 12) from wall-clock a to b (a <= b): the whole number
 * of steps that fit (shifted as date_shift does), plus the elapsed part of the next step.
 */
function calendarSteps(a: number, b: number, step: number): number {
  const da = Math.floor(a / DAY);
  const todA = a - da * DAY;
  civil(Math.floor(b / DAY));
  const yb = cy;
  const mb = cm;
  civil(da);
  let k = Math.floor(((yb - cy) * 12 + (mb - cm)) / step);
  let lo = shiftMonths(da, k * step) * DAY + todA;
  if (lo > b) {
    k--;
    lo = shiftMonths(da, k * step) * DAY + todA;
  }
  const hi = shiftMonths(da, (k + 1) * step) * DAY + todA;
  return k + (b - lo) / (hi - lo);
}

function dateDifference(a: Record<string, any>): number {
  const expected = 'a date (YYYY-MM-DD) or an RFC 3339 date-time is expected';
  if (!parseTemporal(a.date1, false)) throw invalid('date_difference', 'date1', expected);
  const t1 = instant();
  const offset = P.offset;
  if (!parseTemporal(a.date2, false)) throw invalid('date_difference', 'date2', expected);
  const t2 = instant();
  const unit: unknown = a.unit ?? 'second';
  if (unit === 'month' || unit === 'year') {
    // Calendar arithmetic on the wall clock of date1's time zone.
    const w1 = t1 + offset * 60000;
    const w2 = t2 + offset * 60000;
    const step = unit === 'year' ? 12 : 1;
    return w1 <= w2 ? calendarSteps(w1, w2, step) : -calendarSteps(w2, w1, step);
  }
  const ms = typeof unit === 'string' ? UNIT_MS[unit] : undefined;
  if (ms === undefined) throw invalid('date_difference', 'unit', 'one of millisecond, second, minute, hour, day, week, month, year is expected');
  return (t2 - t1) / ms;
}

// ---------------------------------------------------------------------------------------------

/** A number, boolean or null as text (lower case), a string as itself. */
function asText(v: unknown, parameter: string): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw invalid('text_concat', parameter, 'only texts, numbers, booleans and null can be joined');
}

export const processes: ProcessImpl[] = [
  implementScalar('text_begins', (a) => (textArgs('text_begins', a.data, a.pattern) ? (a.case_sensitive === false ? fold(a.data).startsWith(fold(a.pattern)) : (a.data as string).startsWith(a.pattern)) : null)),
  implementScalar('text_ends', (a) => (textArgs('text_ends', a.data, a.pattern) ? (a.case_sensitive === false ? fold(a.data).endsWith(fold(a.pattern)) : (a.data as string).endsWith(a.pattern)) : null)),
  implementScalar('text_contains', (a) => (textArgs('text_contains', a.data, a.pattern) ? (a.case_sensitive === false ? fold(a.data).includes(fold(a.pattern)) : (a.data as string).includes(a.pattern)) : null)),
  implementScalar('text_find', (a) => {
    if (!textArgs('text_find', a.data, a.pattern)) return null;
    const i = findText(a.data, a.pattern, a.case_sensitive !== false);
    return i < 0 ? null : i;
  }),
  implementScalar('text_concat', (a) => {
    const data: unknown = a.data;
    if (!Array.isArray(data)) throw invalid('text_concat', 'data', 'an array is expected');
    const sep = asText(a.separator, 'separator');
    let out = '';
    for (let i = 0; i < data.length; i++) out += i === 0 ? asText(data[i], 'data') : sep + asText(data[i], 'data');
    return out;
  }),
  implementScalar('date_between', dateBetween),
  implementScalar('date_difference', dateDifference),
  implementScalar('date_shift', dateShift),
];
