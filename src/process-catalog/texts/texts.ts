// Our words for the processes implemented in src/processes/texts.ts.
import type { ProcessTexts } from '../spec.js';

const CASE_LINE = 'Whether upper and lower case must match (true, the default) or are treated as equal (false).';

export const texts: Record<string, ProcessTexts> = {
  text_begins: {
    summary: 'Test a text for a prefix',
    description:
      'Tells whether `data` starts with `pattern`, compared literally (no regular expressions). With `case_sensitive` false both are lower-cased before the comparison. A null `data` gives null; an empty pattern always matches.',
    parameters: { data: 'The text to test, or null.', pattern: 'The prefix to look for, taken literally.', case_sensitive: CASE_LINE },
    returns: 'true if the text starts with the pattern, false if not, null for a null text.',
  },
  text_ends: {
    summary: 'Test a text for a suffix',
    description:
      'Tells whether `data` finishes with `pattern`, compared literally (no regular expressions). With `case_sensitive` false both are lower-cased before the comparison. A null `data` gives null; an empty pattern always matches.',
    parameters: { data: 'The text to test, or null.', pattern: 'The suffix to look for, taken literally.', case_sensitive: CASE_LINE },
    returns: 'true if the text ends with the pattern, false if not, null for a null text.',
  },
  text_contains: {
    summary: 'Test a text for a substring',
    description:
      'Tells whether `pattern` occurs anywhere in `data`, compared literally (no regular expressions). With `case_sensitive` false both are lower-cased before the search. A null `data` gives null; an empty pattern always matches.',
    parameters: { data: 'The text to search in, or null.', pattern: 'The substring to look for, taken literally.', case_sensitive: CASE_LINE },
    returns: 'true if the pattern occurs in the text, false if not, null for a null text.',
  },
  text_find: {
    summary: 'Position of a substring',
    description:
      'Gives the zero-based character position (counted in Unicode code points) where `pattern` first occurs in `data`, compared literally (no regular expressions). With `case_sensitive` false both are lower-cased before the search, and the position still refers to the characters of `data`. Gives null if the pattern does not occur or `data` is null; an empty pattern is found at 0.',
    parameters: { data: 'The text to search in, or null.', pattern: 'The substring to look for, taken literally.', case_sensitive: CASE_LINE },
    returns: 'The position (0 or more) of the first occurrence, or null if there is none or the text is null.',
  },
  text_concat: {
    summary: 'Join values into one text',
    description:
      'Joins the elements of `data` in order into a single text with `separator` between neighbours. Numbers, booleans and null are first written out as text (e.g. `1`, `-1.5`, `true`, `null`), and so is a non-text separator. An empty array gives an empty text.',
    parameters: {
      data: 'The elements to join: texts, numbers, booleans or null.',
      separator: 'What to put between two elements (converted to text like the elements); empty by default.',
    },
    returns: 'The joined text.',
  },
  date_between: {
    summary: 'Test a date or time against bounds',
    description:
      'Tells whether `x` lies at or after `min` and at or before `max` (strictly before `max` with `exclude_max`). Dates count as midnight UTC and date-times are compared as instants across time zones; if `min` and `max` are times of day (HH:MM:SS, UTC), the UTC time of day of `x` is compared. Swapped bounds give false and a null `x` gives null.',
    parameters: {
      x: 'The date, date-time or time to test.',
      min: 'The lower bound, included.',
      max: 'The upper bound, included unless `exclude_max` is true.',
      exclude_max: 'If true, `x` must be strictly before `max`.',
    },
    returns: 'true if `x` lies within the bounds, false if not, null for a null `x`.',
  },
  date_difference: {
    summary: 'Time elapsed between two dates',
    description:
      'Gives the time from `date1` to `date2` in the chosen unit, with a fractional part where needed: positive if `date2` is later, negative if earlier, 0 for the same instant. Dates count as midnight UTC and time zone offsets are honoured; leap seconds do not count. Months and years are calendar units: whole months or years are counted as `date_shift` steps (in the time zone of `date1`) and the remainder is the elapsed part of the next one.',
    parameters: {
      date1: 'The date or date-time to measure from.',
      date2: 'The date or date-time to measure to.',
      unit: 'The unit of the result, from millisecond to year; second by default.',
    },
    returns: 'The signed time from `date1` to `date2` in the given unit.',
  },
  date_shift: {
    summary: 'Add a period to a date',
    description:
      'Moves a date or date-time forward (positive `value`) or backward (negative) by a whole number of units. Month and year steps keep the day of the month, using the last day of the target month where it is too short, and day to year steps leave the time of day alone; the time zone offset is kept as written. A date-only input (read as midnight UTC) returns a date only, truncated to its day; a leap second is read as second 59.',
    parameters: {
      date: 'The date or RFC 3339 date-time to move.',
      value: 'How many units to add; negative numbers go back in time.',
      unit: 'The unit of `value`, from millisecond to year.',
    },
    returns: 'The shifted date, as a date-time if a time was given and as a date otherwise.',
  },
};
